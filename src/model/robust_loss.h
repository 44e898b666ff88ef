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
// "soft_l1 (C 0.5 on the sigma-scaled residual)" or "linear".
std::string Describe(const RobustLoss& loss);
// The name of the value a fit under `loss` minimises, for log lines: "chi2" under the linear
// loss, else "objective (soft_l1)" (C²·Σ w·ρ, not χ²).
std::string ObjectiveName(const RobustLoss& loss);

// The floor of the Hessian weight ρ′ + 2zρ″ (SciPy's EPS): huber beyond its knee (exactly 0)
// and cauchy/arctan far out (negative) keep a tiny positive curvature.
inline constexpr double kLossCurvatureFloor = std::numeric_limits<double>::epsilon();

// soft_l1 below this z (the points of a fit with homodyne's f_scale of 1 in c2 units whose
// residual is below 1/64 of it) takes its terms from their Taylor series, accurate to an ulp
// there: no square root or division in the passes.
inline constexpr double kSoftL1SeriesBelow = 0x1p-12;
// Up to this z (residuals up to 1/8 of f_scale: every point of a fit with f_scale 1 on data
// whose noise is 0.01) the same series continues with four or five terms more, added to the
// short series' value as one fused multiply-add of z⁵ times their sum: below
// kSoftL1SeriesBelow that product is under half an ulp of the short series' value, so the
// long series gives the short one's bits there, and a vector of points on both sides needs
// no blend of the two. Above it the closed forms, with ρ corrected for the rounding of the
// square root (2(√(1+z) − 1) alone loses digits at small z).
inline constexpr double kSoftL1LongSeriesBelow = 0x1p-6;

// ρ(z), ρ′(z) and the unfloored Hessian weight ρ′(z) + 2z·ρ″(z) of one point; the passes'
// weight s² = max(ρ′ + 2zρ″, floor) and residual factor ρ′/s² (w·s² multiplies every product,
// r·ρ′/s² replaces the residual: the sums with r then carry w·ρ′·r). The homodyne kernel's
// vector copies (point_terms_impl.h, LossStep) compute ρ and the weight with these
// expressions in this order, so a point's ρ and s² have the same bits in every copy and here;
// the sums with r take w·ρ′·r directly (soft_l1: (w·s²)·((1 + z)·r), its ρ′/s² being 1 + z),
// the same in every vector copy. cauchy's log1p and arctan's atan are loss_math.h's (not
// libm's), shared by both for that reason.
struct LossTerms {
  double rho = 0.0, d1 = 1.0, curvature = 1.0;
  double weight = 1.0, factor = 1.0;
};
LossTerms EvaluateLoss(LossKind kind, double z);

// The robust terms of n points in place, EvaluateLoss's bits point by point, for the
// two-component kernel: for each e with w[e] ≠ 0, z = (r[e]·inv_scale)², term[e] =
// w[e]·(scale_sq·ρ) and, when wr is not null, wr[e] = w[e]·(ρ′·r[e]) and then w[e] = w[e]·s²;
// points with w[e] = 0 are left as they are.
void RobustPointTerms(LossKind kind, double inv_scale, double scale_sq, int n, const double* r,
                      double* w, double* term, double* wr);

}  // namespace homodyne::model
