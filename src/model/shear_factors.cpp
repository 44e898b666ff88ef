#include "shear_factors.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "homodyne/model/constants.h"
#include "homodyne/model/sinc_derivative.h"
#include "simd_clones.h"

namespace homodyne::model::detail {
namespace {

// Both branches are computed and then selected with bit masks, so that the loops have no
// control flow and vectorise.
inline double Pick(bool condition, double if_true, double if_false) {
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(condition);
  return std::bit_cast<double>((std::bit_cast<std::uint64_t>(if_true) & mask) |
                               (std::bit_cast<std::uint64_t>(if_false) & ~mask));
}

inline double Sinc(double x, double sn) {
  const double x2 = x * x;
  const double taylor = 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
  const double direct = sn / x;
  return Pick(std::abs(x) < kSincTaylorBound, taylor, direct);
}

// SincDerivative (sinc_derivative.h) without branches.
inline double SincSlope(double x, double sinc, double cs) {
  const double x2 = x * x;
  const double taylor = -x / 3.0 + x * x * x / 30.0;
  const double series =
      x * (-1.0 / 3.0 +
           x2 * (1.0 / 30.0 +
                 x2 * (-1.0 / 840.0 +
                       x2 * (1.0 / 45360.0 +
                             x2 * (-1.0 / 3991680.0 +
                                   x2 * (1.0 / 518918400.0 +
                                         x2 * (-1.0 / 93405312000.0 + x2 / 22230464256000.0)))))));
  const double closed = (cs - sinc) / x;
  const double ax = std::abs(x);
  const double small = Pick(ax < kSincTaylorBound, taylor, series);
  return Pick(ax < kSincSeriesBound, small, closed);
}

}  // namespace

HOMODYNE_SIMD_CLONES void ShearFactors(const double* x, const double* sn, double* s, int n) {
  for (int m = 0; m < n; ++m) {
    const double sinc = Sinc(x[m], sn[m]);
    s[m] = sinc * sinc;
  }
}

HOMODYNE_SIMD_CLONES void ShearFactorsWithDerivative(const double* x, const double* sn,
                                                     const double* cs, double* s, double* ds,
                                                     int n) {
  for (int m = 0; m < n; ++m) {
    const double sinc = Sinc(x[m], sn[m]);
    s[m] = sinc * sinc;
    ds[m] = 2.0 * sinc * SincSlope(x[m], sinc, cs[m]);
  }
}

}  // namespace homodyne::model::detail
