#include "cmc/bimodality.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace homodyne::cmc {
namespace {

constexpr int kMaxIterations = 200;
constexpr double kRelTolerance = 1e-10;
constexpr double kVarianceFloorFraction = 1e-12;  // of the sample variance

double NormalLogPdf(double x, double mean, double variance) {
  const double d = x - mean;
  return -0.5 * (std::log(2.0 * std::numbers::pi * variance) + d * d / variance);
}

// EM from the split of the sorted values at `split` (a fraction): each side's moments.
TwoGaussians Em(const std::vector<double>& sorted, double split, double floor) {
  const std::size_t n = sorted.size();
  const auto k =
      std::clamp<std::size_t>(static_cast<std::size_t>(split * static_cast<double>(n)), 2, n - 2);
  TwoGaussians m;
  for (int c = 0; c < 2; ++c) {
    const std::size_t b = c == 0 ? 0 : k, e = c == 0 ? k : n;
    double s = 0.0, s2 = 0.0;
    for (std::size_t i = b; i < e; ++i) s += sorted[i];
    const double mu = s / static_cast<double>(e - b);
    for (std::size_t i = b; i < e; ++i) s2 += (sorted[i] - mu) * (sorted[i] - mu);
    m.weight[c] = static_cast<double>(e - b) / static_cast<double>(n);
    m.mean[c] = mu;
    m.variance[c] = std::max(s2 / static_cast<double>(e - b), floor);
  }
  std::vector<double> r(n);  // responsibility of component 1
  double previous = -HUGE_VAL;
  for (int it = 0; it < kMaxIterations; ++it) {
    double ll = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::log(m.weight[0]) + NormalLogPdf(sorted[i], m.mean[0], m.variance[0]);
      const double b = std::log(m.weight[1]) + NormalLogPdf(sorted[i], m.mean[1], m.variance[1]);
      const double top = std::max(a, b);
      const double lse = top + std::log(std::exp(a - top) + std::exp(b - top));
      r[i] = std::exp(b - lse);
      ll += lse;
    }
    m.log_likelihood = ll;
    double w1 = 0.0, s1 = 0.0, s0 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      w1 += r[i];
      s1 += r[i] * sorted[i];
      s0 += (1.0 - r[i]) * sorted[i];
    }
    const double w0 = static_cast<double>(n) - w1;
    if (w0 < 1.0 || w1 < 1.0) break;  // a component has collapsed: keep the last estimate
    m.mean[0] = s0 / w0;
    m.mean[1] = s1 / w1;
    double v0 = 0.0, v1 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      v0 += (1.0 - r[i]) * (sorted[i] - m.mean[0]) * (sorted[i] - m.mean[0]);
      v1 += r[i] * (sorted[i] - m.mean[1]) * (sorted[i] - m.mean[1]);
    }
    m.variance[0] = std::max(v0 / w0, floor);
    m.variance[1] = std::max(v1 / w1, floor);
    m.weight[0] = w0 / static_cast<double>(n);
    m.weight[1] = w1 / static_cast<double>(n);
    if (std::abs(ll - previous) <= kRelTolerance * std::abs(ll)) break;
    previous = ll;
  }
  if (m.mean[0] > m.mean[1]) {
    std::swap(m.weight[0], m.weight[1]);
    std::swap(m.mean[0], m.mean[1]);
    std::swap(m.variance[0], m.variance[1]);
  }
  return m;
}

}  // namespace

TwoGaussians FitTwoGaussians(std::span<const double> x) {
  std::vector<double> v;
  for (double value : x) {
    if (std::isfinite(value)) v.push_back(value);
  }
  TwoGaussians best;
  double mean = 0.0, var = 0.0;
  for (double value : v) mean += value;
  mean /= std::max<double>(1.0, static_cast<double>(v.size()));
  for (double value : v) var += (value - mean) * (value - mean);
  var /= std::max<double>(1.0, static_cast<double>(v.size()));
  if (v.size() < 4 || !(var > 0.0)) {
    best.weight[0] = 1.0;
    best.mean[0] = best.mean[1] = mean;
    best.variance[0] = best.variance[1] = var;
    return best;
  }
  std::sort(v.begin(), v.end());
  best.log_likelihood = -HUGE_VAL;
  for (const double split : {0.25, 0.5, 0.75}) {
    const TwoGaussians m = Em(v, split, kVarianceFloorFraction * var);
    if (m.log_likelihood > best.log_likelihood) best = m;
  }
  return best;
}

bool IsBimodal(const TwoGaussians& m, double min_weight, double min_separation) {
  const double centre = std::max(std::abs(0.5 * (m.mean[0] + m.mean[1])), 1e-10);
  return std::min(m.weight[0], m.weight[1]) > min_weight &&
         std::abs(m.mean[1] - m.mean[0]) / centre > min_separation;
}

std::vector<BimodalParameter> DetectBimodality(const std::vector<ShardDraws>& draws,
                                               const std::vector<std::string>& names,
                                               const std::vector<std::string>& tested,
                                               double min_weight, double min_separation,
                                               const std::vector<int>& shard_ids) {
  std::vector<BimodalParameter> out;
  for (const std::string& name : tested) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) continue;
    const auto p = static_cast<std::size_t>(it - names.begin());
    BimodalParameter b;
    b.name = name;
    double lower = 0.0, upper = 0.0;
    for (std::size_t s = 0; s < draws.size(); ++s) {
      const ShardDraws& d = draws[s];
      if (d.count() == 0) continue;
      std::vector<double> x;
      for (int j = 0; j < d.count(); ++j) {
        x.push_back(d.draws[static_cast<std::size_t>(j * d.dims) + p]);
      }
      ++b.shards_tested;
      const TwoGaussians m = FitTwoGaussians(x);
      if (!IsBimodal(m, min_weight, min_separation)) continue;
      b.bimodal_shards.push_back(shard_ids.empty() ? static_cast<int>(s) : shard_ids[s]);
      lower += m.mean[0];
      upper += m.mean[1];
    }
    if (!b.bimodal_shards.empty()) {
      b.lower_mode = lower / static_cast<double>(b.bimodal_shards.size());
      b.upper_mode = upper / static_cast<double>(b.bimodal_shards.size());
    }
    b.flagged =
        b.shards_tested > 0 && static_cast<double>(b.bimodal_shards.size()) >=
                                   kBimodalShardFraction * static_cast<double>(b.shards_tested);
    out.push_back(b);
  }
  return out;
}

}  // namespace homodyne::cmc
