// Classic and rank-normalised split R̂ (see diagnostics.h).
#include <cmath>
#include <limits>

#include "nuts/diagnostics.h"

namespace homodyne::nuts {
namespace {

double Mean(const std::vector<double>& x) {
  double sum = 0.0;
  for (double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

// Sample variance with n − 1.
double Variance(const std::vector<double>& x) {
  const double mean = Mean(x);
  double sum = 0.0;
  for (double v : x) sum += (v - mean) * (v - mean);
  return sum / static_cast<double>(x.size() - 1);
}

}  // namespace

double Rhat(const Chains& chains) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (chains.size() < 2) return nan;
  std::size_t n = chains.front().size();
  for (const auto& chain : chains) n = std::min(n, chain.size());
  if (n < 2) return nan;
  std::vector<double> means;
  std::vector<double> variances;
  for (const auto& chain : chains) {
    const std::vector<double> head(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(n));
    for (double v : head) {
      if (!std::isfinite(v)) return nan;
    }
    means.push_back(Mean(head));
    variances.push_back(Variance(head));
  }
  const double within = Mean(variances);
  if (!(within > 0.0)) return nan;
  const double between = static_cast<double>(n) * Variance(means);
  const double nd = static_cast<double>(n);
  return std::sqrt(((nd - 1.0) / nd * within + between / nd) / within);
}

RhatResult SplitRankNormalizedRhat(const Chains& chains) {
  const Chains split = SplitChains(chains);
  RhatResult result;
  result.bulk = Rhat(RankNormalize(split));
  const double median = PooledQuantile(split, 0.5);
  Chains folded = split;
  for (auto& chain : folded) {
    for (double& v : chain) v = std::fabs(v - median);
  }
  result.tail = Rhat(RankNormalize(folded));
  return result;
}

}  // namespace homodyne::nuts
