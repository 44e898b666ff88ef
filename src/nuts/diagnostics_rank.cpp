// Split chains, pooled quantiles and rank normalisation (see diagnostics.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/special_functions/erf.hpp>

#include "nuts/diagnostics.h"

namespace homodyne::nuts {
namespace {

std::size_t ShortestLength(const Chains& chains) {
  std::size_t n = std::numeric_limits<std::size_t>::max();
  for (const auto& chain : chains) n = std::min(n, chain.size());
  return chains.empty() ? 0 : n;
}

// Φ⁻¹(p) for p in (0, 1).
double InverseNormalCdf(double p) { return -std::sqrt(2.0) * boost::math::erfc_inv(2.0 * p); }

}  // namespace

Chains SplitChains(const Chains& chains) {
  const std::size_t n = ShortestLength(chains);
  const std::size_t half = n / 2;
  Chains split;
  split.reserve(2 * chains.size());
  for (const auto& chain : chains) {
    split.emplace_back(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(half));
    // For odd n the middle draw (index half) is dropped.
    split.emplace_back(chain.begin() + static_cast<std::ptrdiff_t>(n - half),
                       chain.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return split;
}

double PooledQuantile(const Chains& chains, double probability) {
  std::vector<double> all;
  for (const auto& chain : chains) all.insert(all.end(), chain.begin(), chain.end());
  if (all.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(all.begin(), all.end());
  const double h = (static_cast<double>(all.size()) - 1.0) * probability;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, all.size() - 1);
  return all[lo] + (h - static_cast<double>(lo)) * (all[hi] - all[lo]);
}

Chains RankNormalize(const Chains& chains) {
  const std::size_t n = ShortestLength(chains);
  const std::size_t total = n * chains.size();
  Chains result(chains.size(), std::vector<double>(n, 0.0));
  std::vector<double> values(total);
  for (std::size_t c = 0; c < chains.size(); ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(chains[c][i])) {
        for (auto& chain : result) std::fill(chain.begin(), chain.end(), std::nan(""));
        return result;
      }
      values[c * n + i] = chains[c][i];
    }
  }
  std::vector<std::size_t> order(total);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(total);
  for (std::size_t start = 0; start < total;) {
    std::size_t end = start + 1;
    while (end < total && values[order[end]] == values[order[start]]) ++end;
    // Ties share their average 1-based rank.
    const double average = 0.5 * (static_cast<double>(start + 1) + static_cast<double>(end));
    for (std::size_t k = start; k < end; ++k) rank[order[k]] = average;
    start = end;
  }
  const double denominator = static_cast<double>(total) + 0.25;
  for (std::size_t c = 0; c < chains.size(); ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      result[c][i] = InverseNormalCdf((rank[c * n + i] - 0.375) / denominator);
    }
  }
  return result;
}

}  // namespace homodyne::nuts
