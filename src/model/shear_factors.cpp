#include "shear_factors.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/simd_clones.h"
#include "model/constants.h"
#include "model/sinc_derivative.h"

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

// Σ_k c[k]·z^k, k = 0 … 16, by Estrin's scheme (dependency chain of 5 products instead of 16).
inline double Estrin17(const double* c, double z) {
  const double z2 = z * z, z4 = z2 * z2, z8 = z4 * z4, z16 = z8 * z8;
  const double q0 = (c[0] + c[1] * z) + z2 * (c[2] + c[3] * z);
  const double q1 = (c[4] + c[5] * z) + z2 * (c[6] + c[7] * z);
  const double q2 = (c[8] + c[9] * z) + z2 * (c[10] + c[11] * z);
  const double q3 = (c[12] + c[13] * z) + z2 * (c[14] + c[15] * z);
  return ((q0 + z4 * q1) + z8 * (q2 + z4 * q3)) + z16 * c[16];
}

// (−1)^k/(2k+1)!, k = 0 … 16: sinc x = Σ c_k x^(2k).
constexpr double kSincSeries[17] = {1.0,
                                    -0.16666666666666666,
                                    0.008333333333333333,
                                    -0.0001984126984126984,
                                    2.7557319223985893e-06,
                                    -2.505210838544172e-08,
                                    1.6059043836821613e-10,
                                    -7.647163731819816e-13,
                                    2.8114572543455206e-15,
                                    -8.22063524662433e-18,
                                    1.9572941063391263e-20,
                                    -3.868170170630684e-23,
                                    6.446950284384474e-26,
                                    -9.183689863795546e-29,
                                    1.1309962886447716e-31,
                                    -1.216125041553518e-34,
                                    1.151633562077195e-37};
// (−1)^k·2k/(2k+1)!, k = 1 … 17: d sinc/dx = x·Σ d_k x^(2k−2).
constexpr double kSincSlopeSeries[17] = {
    -0.3333333333333333,     0.03333333333333333,    -0.0011904761904761906,
    2.2045855379188714e-05,  -2.505210838544172e-07, 1.9270852604185937e-09,
    -1.0706029224547743e-11, 4.498331606952833e-14,  -1.4797143443923793e-16,
    3.9145882126782523e-19,  -8.509974375387505e-22, 1.5472680682522736e-24,
    -2.387759364586842e-27,  3.166789608205361e-30,  -3.6483751246605535e-33,
    3.685227398647024e-36,   -3.290381605934843e-39};

}  // namespace

HOMODYNE_SIMD_CLONES void SmallPhaseShearFactors(const double* x, double* s, int n) {
  for (int m = 0; m < n; ++m) {
    const double sinc = Estrin17(kSincSeries, x[m] * x[m]);
    s[m] = sinc * sinc;
  }
}

HOMODYNE_SIMD_CLONES void SmallPhaseShearFactorsWithDerivative(const double* x, double* s,
                                                               double* ds, int n) {
  for (int m = 0; m < n; ++m) {
    const double z = x[m] * x[m];
    const double sinc = Estrin17(kSincSeries, z);
    s[m] = sinc * sinc;
    ds[m] = 2.0 * sinc * (x[m] * Estrin17(kSincSlopeSeries, z));
  }
}

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
