// Derivative of the model's unnormalised sinc (physics spec §1.2 step 6), evaluated without
// cancellation. For |x| < 1e-4 the model uses the Taylor polynomial 1 − x²/6 + x⁴/120, whose
// derivative is −x/3 + x³/30; elsewhere sin(x)/x, whose derivative (x cos x − sin x)/x²
// loses ~|log10(x²)| digits to cancellation for small x, so below |x| = 0.5 its series
// Σ_{n≥1} (−1)^n·2n·x^(2n−1)/(2n+1)! is used (terms to x^15: truncation < 1e-17 relative).
#pragma once

#include <cmath>

#include "model/constants.h"

namespace homodyne::model {

inline constexpr double kSincSeriesBound = 0.5;

// d/dx sinc_u(x) given sinc_u(x) and cos(x) (cos is only used for |x| ≥ 0.5).
inline double SincDerivative(double x, double sinc, double cos_x) {
  const double ax = std::abs(x);
  if (ax < kSincTaylorBound) return -x / 3.0 + x * x * x / 30.0;
  if (ax < kSincSeriesBound) {
    const double x2 = x * x;
    // −1/3, 1/30, −1/840, 1/45360, −1/3991680, 1/518918400, −1/93405312000, 1/22230464256000
    const double p =
        -1.0 / 3.0 +
        x2 * (1.0 / 30.0 +
              x2 * (-1.0 / 840.0 +
                    x2 * (1.0 / 45360.0 +
                          x2 * (-1.0 / 3991680.0 +
                                x2 * (1.0 / 518918400.0 +
                                      x2 * (-1.0 / 93405312000.0 + x2 / 22230464256000.0))))));
    return x * p;
  }
  return (cos_x - sinc) / x;
}

}  // namespace homodyne::model
