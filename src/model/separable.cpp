#include "separable.h"

#include <cmath>

#include "simd_clones.h"

namespace homodyne::model::detail {
namespace {

constexpr double kEps = 1.1102230246251565e-16;  // 2^-53

}  // namespace

bool SeparableBoundHolds(double x, double a, double contrast, double g1d, double cgsum,
                         double shift) {
  const double ax = std::abs(x);
  const double scale = std::abs(contrast) > 1.0 ? std::abs(contrast) : 1.0;
  const double sin_bound = 2.0 * kEps * (std::abs(a) * cgsum + 4.0 * ax + 16.0);
  const double c2_bound = scale * 4.0 * (g1d * g1d) * sin_bound;
  const double x2 = ax * ax;
  // Written so that NaN anywhere gives false.
  return ax >= kSeparableMinPhase && std::abs(a) * shift <= kSeparableMaxShift &&
         c2_bound <= kSeparableC2Tolerance * (x2 * x2);
}

int SeparableStart(const double* xs, double a, double contrast, const SeparableColumns& cols,
                   int n) {
  // The predicate is monotone along the row (see the header): binary search for its first
  // true column.
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (SeparableBoundHolds(xs[mid], a, contrast, cols.g1d[mid], cols.cgsum[mid],
                            cols.shift[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

namespace {

// sin and cos of x = a·(ΔC + δ) from the tables, second order in ψ = a·δ.
__attribute__((always_inline)) inline void SinCos(const SeparableRow& row, int c, double& sn,
                                                  double& cs) {
  const double s0 = row.tab_sin[c] * row.ci - row.tab_cos[c] * row.si;
  const double c0 = row.tab_cos[c] * row.ci + row.tab_sin[c] * row.si;
  const double psi = row.a * row.shift[c];
  const double half_psi2 = 0.5 * (psi * psi);
  sn = (s0 - half_psi2 * s0) + psi * c0;
  cs = (c0 - half_psi2 * c0) - psi * s0;
}

}  // namespace

HOMODYNE_SIMD_CLONES void SeparableShearFactors(const SeparableRow& row, double* s, int begin,
                                                int n) {
  const double* __restrict inv_ig = row.inv_ig;
  for (int c = begin; c < n; ++c) {
    double sn, cs;
    SinCos(row, c, sn, cs);
    const double sinc = sn * (row.inv_a * inv_ig[c]);
    s[c] = sinc * sinc;
  }
}

HOMODYNE_SIMD_CLONES void SeparableShearFactorsWithDerivative(const SeparableRow& row, double* s,
                                                              double* ds, int begin, int n) {
  const double* __restrict inv_ig = row.inv_ig;
  for (int c = begin; c < n; ++c) {
    double sn, cs;
    SinCos(row, c, sn, cs);
    const double inv_x = row.inv_a * inv_ig[c];
    const double sinc = sn * inv_x;
    s[c] = sinc * sinc;
    ds[c] = 2.0 * sinc * ((cs - sinc) * inv_x);
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
