// Shared by the CMC calibration tests: quantiles of the combined draws and the acceptance
// region of a coverage count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "cmc/cmc_fit.h"

namespace homodyne::testing {

// The q-quantile (linear interpolation between order statistics) of column `col` of the
// combined draws of `r`.
inline double DrawQuantile(const cmc::CmcRunResult& r, std::size_t col, double q) {
  std::vector<double> v;
  for (std::size_t e = col; e < r.draws.size(); e += r.names.size()) v.push_back(r.draws[e]);
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Two-sided 99 % acceptance region of Binomial(n, p): the smallest lo and largest hi with
// P(X < lo) ≤ 0.005 and P(X > hi) ≤ 0.005.
inline std::pair<int, int> BinomialRegion(int n, double p) {
  std::vector<double> pmf(static_cast<std::size_t>(n + 1));
  for (int k = 0; k <= n; ++k) {
    pmf[static_cast<std::size_t>(k)] =
        std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                 k * std::log(p) + (n - k) * std::log1p(-p));
  }
  int lo = 0;
  double below = 0.0;
  while (below + pmf[static_cast<std::size_t>(lo)] <= 0.005)
    below += pmf[static_cast<std::size_t>(lo++)];
  int hi = n;
  double above = 0.0;
  while (above + pmf[static_cast<std::size_t>(hi)] <= 0.005)
    above += pmf[static_cast<std::size_t>(hi--)];
  return {lo, hi};
}

// The smallest coverage count c of Binomial(n, p) that a one-sided test at level `alpha`
// accepts: the largest c with P(X < c) ≤ alpha.
inline int BinomialLowerBound(int n, double p, double alpha) {
  double below = 0.0;
  int c = 0;
  while (c <= n) {
    const double pmf =
        std::exp(std::lgamma(n + 1.0) - std::lgamma(c + 1.0) - std::lgamma(n - c + 1.0) +
                 c * std::log(p) + (n - c) * std::log1p(-p));
    if (below + pmf > alpha) break;
    below += pmf;
    ++c;
  }
  return c;
}

}  // namespace homodyne::testing
