#include "separable.h"

#include <algorithm>
#include <cmath>

#include "core/simd_clones.h"

namespace homodyne::model::detail {
namespace {

constexpr double kEps = 1.1102230246251565e-16;  // 2^-53

__attribute__((always_inline)) inline bool BoundHolds(double x, double a, double contrast,
                                                      double g1d, double cgsum, double shift) {
  const double ax = std::abs(x);
  const double scale = std::abs(contrast) > 1.0 ? std::abs(contrast) : 1.0;
  const double sin_bound = SeparableSineBound(a, cgsum, x, a * shift);
  const double c2_bound = scale * 4.0 * (g1d * g1d) * sin_bound;
  const double x2 = ax * ax;
  // Written so that NaN anywhere gives false.
  return ax >= kSeparableMinPhase && std::abs(a) * shift <= kSeparableMaxShift &&
         c2_bound <= kSeparableC2Tolerance * (x2 * x2);
}

// The first c in [lo, hi] with holds(c), given that it lies there (hi: none before hi).
template <typename Holds>
int FirstHolding(const Holds& holds, int lo, int hi) {
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (holds(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace

bool SeparableBoundHolds(double x, double a, double contrast, double g1d, double cgsum,
                         double shift) {
  return BoundHolds(x, a, contrast, g1d, cgsum, shift);
}

int SeparableStart(const double* ig, double a, double contrast, const SeparableColumns& cols,
                   int n) {
  // The predicate is monotone along the row (see the header): binary search for its first
  // true column, after testing column 0 (away from the diagonal the whole block passes).
  const auto holds = [&](int c) {
    return BoundHolds(a * ig[c], a, contrast, cols.g1d[c], cols.cgsum[c], cols.shift[c]);
  };
  if (n > 0 && holds(0)) return 0;
  return FirstHolding(holds, 0, n);
}

int SeparableStartFrom(const double* ig, double a, double contrast, const SeparableColumns& cols,
                       int n, int guess) {
  if (guess < 0 || n == 0) return SeparableStart(ig, a, contrast, cols, n);
  guess = std::min(guess, n - 1);
  const auto holds = [&](int c) {
    return BoundHolds(a * ig[c], a, contrast, cols.g1d[c], cols.cgsum[c], cols.shift[c]);
  };
  // The first true column b: b ≤ guess if the guess holds, else b > guess. Galloping search
  // from the guess (steps 1, 2, 4, … away from it, then binary search in the last step): two
  // tests when the boundary moved by at most one column, O(log distance) otherwise.
  if (holds(guess)) {
    int hi = guess;  // holds
    for (int step = 1;; step *= 2) {
      const int lo = hi - step;
      if (lo < 0) return FirstHolding(holds, 0, hi);
      if (!holds(lo)) return FirstHolding(holds, lo + 1, hi);
      hi = lo;
    }
  }
  int lo = guess + 1;  // b ≥ lo
  for (int step = 1;; step *= 2) {
    const int probe = guess + step;
    if (probe >= n) return FirstHolding(holds, lo, n);
    if (holds(probe)) return FirstHolding(holds, lo, probe);
    lo = probe + 1;
  }
}

HOMODYNE_SIMD_CLONES void SeparableShearFactors(const SeparableRow& row, double* s, int begin,
                                                int n) {
  const double* __restrict inv_ig = row.inv_ig;
  for (int c = begin; c < n; ++c) {
    double ds;
    SeparableFactors(row.tab_sin[c], row.tab_cos[c], row.a * row.shift[c], row.ci, row.si,
                     row.inv_a * inv_ig[c], s[c], ds);
  }
}

HOMODYNE_SIMD_CLONES void SeparableShearFactorsWithDerivative(const SeparableRow& row, double* s,
                                                              double* ds, int begin, int n) {
  const double* __restrict inv_ig = row.inv_ig;
  for (int c = begin; c < n; ++c) {
    SeparableFactors(row.tab_sin[c], row.tab_cos[c], row.a * row.shift[c], row.ci, row.si,
                     row.inv_a * inv_ig[c], s[c], ds[c]);
  }
}

bool DiffusionSpanHolds(double wq, double c_i, double c_p, double c_last, double log_g1_last,
                        double g1d_first, double contrast_scale) {
  const double within = wq * (c_last - c_p);
  const double to_row = std::abs(wq * (c_p - c_i));
  const double c2_bound =
      contrast_scale * 2.0 * (g1d_first * g1d_first) * kEps * (5.0 * (within + to_row) + 9.0);
  // Written so that NaN anywhere gives false.
  return within <= kSeparableMaxExponent && to_row <= kSeparableMaxExponent &&
         log_g1_last >= kSeparableMinLogG1 && c2_bound <= kSeparableDiffusionC2Tolerance;
}

HOMODYNE_SIMD_CLONES void SeparableDiffusion(const double* pivot_table, double r, double wq,
                                             const double* shift_d, double* g1d, int begin,
                                             int end) {
  for (int c = begin; c < end; ++c) {
    const double w = wq * shift_d[c];
    g1d[c] = (pivot_table[c] * r) * ((1.0 - w) + 0.5 * (w * w));
  }
}

}  // namespace homodyne::model::detail
