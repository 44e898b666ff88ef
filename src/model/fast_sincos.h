// Array sine/cosine for the model kernel's shear phase, written so that the compiler can
// vectorise it (no libm calls, no data-dependent branches in the main loop).
//
// Method: k = nearest integer to x·2/π; r = x − k·π/2 with a three-part Cody-Waite split of
// π/2 (P1, P2 with 33 significant bits, so k·P1 and k·P2 are exact for |k| ≤ 2^20; P3 the
// rest); sin r and cos r by their Taylor series to r^17 / r^18 (truncation < 1e-19 on
// |r| ≤ π/4); quadrant selection by k mod 4. The result is within ~2 ulp of the true value,
// and sin keeps its relative accuracy near 0 (k = 0 → r = x exactly). Arguments with
// |x| > kFastSinCosMaxArg (or non-finite) are passed to std::sin/std::cos.
#pragma once

namespace homodyne::model {

inline constexpr double kFastSinCosMaxArg = 1.6e6;  // < 2^20·π/2

// s[m] = sin(x[m]) for m in [0, n).
void FastSin(const double* x, double* s, int n);
// s[m] = sin(x[m]), c[m] = cos(x[m]).
void FastSinCos(const double* x, double* s, double* c, int n);

}  // namespace homodyne::model
