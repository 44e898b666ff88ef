// Robust losses of the least-squares objective, with SciPy least_squares' (and NLSQ's, which
// homodyne and xpcsjax call) semantics.
//
// For a residual f (ours: r = (c2_exp − c2_model)/σ, weight w) and the scale C (f_scale),
// z = (f/C)² and the objective is C²·Σ w·ρ(z) (twice SciPy's cost ½C²Σρ, as χ² = Σ w·r² is
// twice ½Σr²). Its Gauss–Newton form, as SciPy builds it per iteration: the gradient weight
// ρ′(z) and the Hessian weight s² = max(ρ′ + 2zρ″, ε), i.e. J̃ = s·J and f̃ = (ρ′/s)·f, so
//   J̃ᵀWJ̃ = Σ w·s²·J Jᵀ   and   J̃ᵀWf̃ = Σ w·ρ′·f·J   (= ½ ∇ of the objective).
// linear: ρ(z) = z, the plain χ² (the kernels keep their plain code for it).
#pragma once

#include <limits>
#include <string>
#include <string_view>

namespace homodyne::model {

enum class LossKind : int { kLinear = 0, kSoftL1, kHuber, kCauchy, kArctan };

struct RobustLoss {
  LossKind kind = LossKind::kLinear;
  double f_scale = 1.0;  // C, in units of the residual r (σ-scaled: the config's f_scale / σ)

  bool robust() const { return kind != LossKind::kLinear; }
  void Validate() const;  // bad-input Error for f_scale ≤ 0 or not finite
};

// "linear", "soft_l1", "huber", "cauchy", "arctan" (SciPy's names).
std::string_view ToString(LossKind kind);
// One of the names above (exactly, as SciPy takes them); anything else a bad-input Error that
// names `key` (the config key) and the valid values.
LossKind ParseLossKind(std::string_view text, std::string_view key, const std::string& file = {});
// "soft_l1 (C 0.5 on the sigma-scaled residual)" or "linear".
std::string Describe(const RobustLoss& loss);

// The floor of the Hessian weight ρ′ + 2zρ″ (SciPy's EPS): huber beyond its knee (exactly 0)
// and cauchy/arctan far out (negative) keep a tiny positive curvature.
inline constexpr double kLossCurvatureFloor = std::numeric_limits<double>::epsilon();

// ρ(z), ρ′(z) and the unfloored Hessian weight ρ′(z) + 2z·ρ″(z) of one point. The kernels'
// vector copies (point_terms_impl.h, heterodyne_kernel.cpp) use these expressions in this
// order, so that a point's terms have the same bits in the reference and in the kernels.
struct LossTerms {
  double rho = 0.0, d1 = 1.0, curvature = 1.0;
};
LossTerms EvaluateLoss(LossKind kind, double z);

}  // namespace homodyne::model
