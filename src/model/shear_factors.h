// Vectorisable per-column shear factors for the kernel (private to src/model).
#pragma once

namespace homodyne::model::detail {

// s[m] = sinc_u(x[m])² with sinc_u exactly as the reference (Taylor branch for |x| < 1e-4,
// else sn[m]/x[m], sn = sin x).
void ShearFactors(const double* x, const double* sn, double* s, int n);

// Also ds[m] = d(sinc_u²)/dx = 2·sinc_u·SincDerivative (cs = cos x).
void ShearFactorsWithDerivative(const double* x, const double* sn, const double* cs, double* s,
                                double* ds, int n);

}  // namespace homodyne::model::detail
