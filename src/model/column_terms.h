// The angle-independent values of one block of columns of a row (private to src/model),
// computed once per block and shared by every angle's tile of that row: the diffusion
// exponent and its smooth-abs pieces, the shear integral I_Γ with the separable path's inputs,
// and (with derivatives) the per-parameter differences e_q, f_q. A vectorised loop (SIMD
// clones), with no data-dependent branches.
#pragma once

#include <cmath>

#include "model/constants.h"

namespace homodyne::model::detail {

// I = sqrt(Δ² + 1e-12), the smooth |Δ| of an integral over [t_i, t_j]: the columns' I_D and
// I_Γ, and the kernel's span test at a column outside the block (the same expression, so
// the same value).
inline double SmoothAbs(double delta) { return std::sqrt(delta * delta + kSmoothAbsEps2); }

struct ColumnInputs {
  int n = 0;                   // columns j0 … j0 + n − 1
  double wq = 0.0;             // q²·dt-type prefactor of the diffusion exponent
  const double* cd = nullptr;  // C_D at the columns (pointer at j0)
  const double* dcd[3] = {nullptr, nullptr, nullptr};
  const double* cg = nullptr;  // C_Γ at the columns (laminar)
  const double* dcg[3] = {nullptr, nullptr, nullptr};
  double cd_i = 0.0, dcd_i[3] = {0.0, 0.0, 0.0};  // the same at the row
  double cg_i = 0.0, dcg_i[3] = {0.0, 0.0, 0.0};
};

struct ColumnValues {
  double* log_g1;   // −wq·I_D, I_D = sqrt(ΔC_D² + 1e-12)
  double* delta_d;  // ΔC_D = C_D[i] − C_D[j]
  double* id_d;     // I_D
  double* shift_d;  // δ_D = 1e-12/(I_D + |ΔC_D|)
  double* e[3];     // ∂ΔC_D/∂θ_q (with derivatives)
  double* ig;       // I_Γ (laminar)
  double* cgsum;    // C_Γ[i] + C_Γ[j]
  double* shift;    // δ_Γ = 1e-12/(I_Γ + |ΔC_Γ|)
  double* inv_ig;   // 1/I_Γ
  double* f[3];     // ΔC_Γ/I_Γ·∂ΔC_Γ/∂θ_q (with derivatives)
};

void StaticColumns(const ColumnInputs& in, const ColumnValues& out, bool derivs);
void LaminarColumns(const ColumnInputs& in, const ColumnValues& out, bool derivs);

}  // namespace homodyne::model::detail
