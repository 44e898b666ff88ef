// Vectorisable per-column shear factors for the kernel (private to src/model).
#pragma once

namespace homodyne::model::detail {

// s[m] = sinc_u(x[m])² with sinc_u exactly as the reference (Taylor branch for |x| < 1e-4,
// else sn[m]/x[m], sn = sin x).
void ShearFactors(const double* x, const double* sn, double* s, int n);

// Also ds[m] = d(sinc_u²)/dx = 2·sinc_u·SincDerivative (cs = cos x).
void ShearFactorsWithDerivative(const double* x, const double* sn, const double* cs, double* s,
                                double* ds, int n);

// The same for phases |x[m]| ≤ kSmallPhase (the caller ensures it), without the sine: sinc_u
// and its derivative as their Taylor series in z = x² (17 terms each, Estrin's scheme;
// truncation < 3e-18, rounding ≤ 4e-16 absolute for |x| ≤ 4, where the terms reach 2.7), no
// range reduction and no division. The direct path near the diagonal, where most phases
// are below 4, so FastSin and sn/x run only beyond.
inline constexpr double kSmallPhase = 4.0;
void SmallPhaseShearFactors(const double* x, double* s, int n);
void SmallPhaseShearFactorsWithDerivative(const double* x, double* s, double* ds, int n);

}  // namespace homodyne::model::detail
