// The acceptance region of a coverage count: shared by the CMC calibration tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace homodyne::testing {

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

}  // namespace homodyne::testing
