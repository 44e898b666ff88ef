// Gauss-Newton normal equations of the weighted least-squares objective
//   χ² = Σ_p w_p·r_p²,   r_p = (c2_exp,p − c2_model,p)/σ,
// with J = ∂r/∂θ (so J = −(∂c2/∂θ)/σ):  jtj = JᵀWJ (P×P, symmetric, row-major) and
// jtr = JᵀWr. The gradient of ½χ² is jtr; the Gauss-Newton step solves jtj·δ = −jtr.
#pragma once

#include <vector>

namespace homodyne::model {

struct NormalEquations {
  int size = 0;  // P
  double chi2 = 0.0;
  std::vector<double> jtj;
  std::vector<double> jtr;

  NormalEquations() = default;
  explicit NormalEquations(int p)
      : size(p),
        jtj(static_cast<size_t>(p) * static_cast<size_t>(p), 0.0),
        jtr(static_cast<size_t>(p), 0.0) {}

  double& JtJ(int a, int b) { return jtj[static_cast<size_t>(a * size + b)]; }
  double JtJ(int a, int b) const { return jtj[static_cast<size_t>(a * size + b)]; }
};

}  // namespace homodyne::model
