#include "model/fast_sincos.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/simd_clones.h"

namespace homodyne::model {
namespace {

constexpr double kInvPio2 = 0.6366197723675814;  // 2/π
constexpr double kShifter = 6755399441055744.0;  // 1.5·2^52: x + s − s rounds to an integer
constexpr double kP1 = 1.5707963267341256;       // π/2 to 33 bits
constexpr double kP2 = 6.077100506303966e-11;    // next 33 bits
constexpr double kP3 = 2.0222662487959506e-21;   // remainder (error of the split ~1e-37)

// Taylor coefficients (−1)^n/(2n+1)! and (−1)^n/(2n)!.
constexpr double kS1 = -0.16666666666666666, kS2 = 0.008333333333333333,
                 kS3 = -0.0001984126984126984, kS4 = 2.7557319223985893e-06,
                 kS5 = -2.505210838544172e-08, kS6 = 1.6059043836821613e-10,
                 kS7 = -7.647163731819816e-13, kS8 = 2.8114572543455206e-15;
constexpr double kC2 = 0.041666666666666664, kC3 = -0.001388888888888889,
                 kC4 = 2.48015873015873e-05, kC5 = -2.755731922398589e-07,
                 kC6 = 2.08767569878681e-09, kC7 = -1.1470745597729725e-11,
                 kC8 = 4.779477332387385e-14, kC9 = -1.5619206968586225e-16;

struct Reduced {
  double sr, cr;  // sin r, cos r
  double q;       // k mod 4 as one of −2, −1, 0, 1, 2
};

inline Reduced Reduce(double x) {
  const double kd = (x * kInvPio2 + kShifter) - kShifter;
  const double r = ((x - kd * kP1) - kd * kP2) - kd * kP3;
  const double h = (kd * 0.25 + kShifter) - kShifter;
  const double r2 = r * r;
  // Estrin's scheme in z = r²: the same polynomials as Horner's rule with a dependency chain
  // of 4 products instead of 8 (the loops are latency-bound: 4 → 2.x ns per point).
  const double r4 = r2 * r2, r8 = r4 * r4;
  const double ps =
      ((kS1 + r2 * kS2) + r4 * (kS3 + r2 * kS4)) + r8 * ((kS5 + r2 * kS6) + r4 * (kS7 + r2 * kS8));
  const double pc =
      ((kC2 + r2 * kC3) + r4 * (kC4 + r2 * kC5)) + r8 * ((kC6 + r2 * kC7) + r4 * (kC8 + r2 * kC9));
  Reduced out;
  out.sr = r + r * (r2 * ps);
  out.cr = (1.0 - 0.5 * r2) + (r2 * r2) * pc;
  out.q = kd - 4.0 * h;
  return out;
}

// Branch-free selection: swap sin r / cos r in odd quadrants, negate in the quadrants where
// the result is negative (bit masks so that the loops vectorise).
inline double Select(bool swap, bool negative, double when_even, double when_odd) {
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(swap);
  const std::uint64_t bits = (std::bit_cast<std::uint64_t>(when_odd) & mask) |
                             (std::bit_cast<std::uint64_t>(when_even) & ~mask);
  return std::bit_cast<double>(bits ^ (static_cast<std::uint64_t>(negative) << 63));
}

inline double SinFromQuadrant(const Reduced& v) {
  // Quadrants (k mod 4) 2 and 3 (q = ±2, −1) are negative.
  return Select(std::abs(v.q) == 1.0, (v.q < -0.5) | (v.q > 1.5), v.sr, v.cr);
}

inline double CosFromQuadrant(const Reduced& v) {
  // Quadrants 1 and 2 (q = 1, ±2) are negative.
  return Select(std::abs(v.q) == 1.0, (v.q > 0.5) | (v.q < -1.5), v.cr, v.sr);
}

// True when every |x[m]| ≤ kFastSinCosMaxArg (false for NaN): a branch-free reduction that
// vectorises, so that the per-element fix-up loop (a compare and branch per element, ~20 % of
// the time on short arrays) runs only when some argument needs std::sin/std::cos.
inline bool AllInRange(const double* x, int n) {
  std::uint64_t out = 0;
  for (int m = 0; m < n; ++m)
    out |= static_cast<std::uint64_t>(!(std::abs(x[m]) <= kFastSinCosMaxArg));
  return out == 0;
}

}  // namespace

HOMODYNE_SIMD_CLONES void FastSin(const double* x, double* s, int n) {
  for (int m = 0; m < n; ++m) s[m] = SinFromQuadrant(Reduce(x[m]));
  if (AllInRange(x, n)) return;
  for (int m = 0; m < n; ++m) {
    if (!(std::abs(x[m]) <= kFastSinCosMaxArg)) s[m] = std::sin(x[m]);
  }
}

HOMODYNE_SIMD_CLONES void FastSinCos(const double* x, double* s, double* c, int n) {
  for (int m = 0; m < n; ++m) {
    const Reduced v = Reduce(x[m]);
    s[m] = SinFromQuadrant(v);
    c[m] = CosFromQuadrant(v);
  }
  if (AllInRange(x, n)) return;
  for (int m = 0; m < n; ++m) {
    if (!(std::abs(x[m]) <= kFastSinCosMaxArg)) {
      s[m] = std::sin(x[m]);
      c[m] = std::cos(x[m]);
    }
  }
}

}  // namespace homodyne::model
