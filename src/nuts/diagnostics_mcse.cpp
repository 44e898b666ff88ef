// Monte Carlo standard errors of the mean and of the standard deviation.
#include <cmath>

#include "nuts/diagnostics.h"

namespace homodyne::nuts {
namespace {

struct Moments {
  double mean = 0.0;
  double variance = 0.0;  // n − 1
  std::size_t count = 0;
};

Moments PooledMoments(const Chains& chains) {
  Moments m;
  double sum = 0.0;
  for (const auto& chain : chains) {
    for (double v : chain) sum += v;
    m.count += chain.size();
  }
  m.mean = sum / static_cast<double>(m.count);
  double ss = 0.0;
  for (const auto& chain : chains) {
    for (double v : chain) ss += (v - m.mean) * (v - m.mean);
  }
  m.variance = ss / static_cast<double>(m.count - 1);
  return m;
}

}  // namespace

double McseMean(const Chains& chains) {
  const Chains split = SplitChains(chains);
  const Moments m = PooledMoments(split);
  return std::sqrt(m.variance / Ess(split));
}

double McseSd(const Chains& chains) {
  // Var(s) ≈ Var(s²)/(4σ²), with Var(s²) ≈ (E[(x−μ)⁴] − σ⁴)/ESS and the ESS taken from
  // |x − μ| on the split chains.
  const Chains split = SplitChains(chains);
  const Moments m = PooledMoments(split);
  Chains abs_centered = split;
  double second = 0.0;
  double fourth = 0.0;
  for (auto& chain : abs_centered) {
    for (double& v : chain) {
      const double d = v - m.mean;
      second += d * d;
      fourth += d * d * d * d;
      v = std::fabs(d);
    }
  }
  second /= static_cast<double>(m.count);
  fourth /= static_cast<double>(m.count);
  const double ess = Ess(abs_centered);
  const double var_of_var = (fourth - second * second) / ess;
  return std::sqrt(var_of_var / second / 4.0);
}

}  // namespace homodyne::nuts
