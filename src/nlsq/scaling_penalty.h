// xpcsjax's layer L3 for two_component fits with per-angle scaling (individual or fourier
// layouts; docs/global.md): two extra residual rows w·CV(contrast_k) and w·CV(offset_k)
// over the per-angle values, CV = population std / |mean| (the std itself when
// |mean| ≤ 1e-10). xpcsjax's rows are sqrt(λ)·CV beside residuals c2_model − c2_data;
// ours are divided by σ (r = (c2_exp − c2)/σ), so w = sqrt(λ)/σ keeps its minimiser.
//
// The rows depend only on the parameters, not on the data: they are computed from the
// reduced (replicated) normal equations on every rank and added once, after the
// cross-rank sum, so they change no rank-count invariance.
#pragma once

#include <span>
#include <vector>

#include "model/expanded_parameters.h"
#include "model/normal_equations.h"

namespace homodyne::nlsq {

// CV of `values` and its gradient. Where the std is zero (all values equal) the CV is not
// differentiable; the gradient there is taken as zero (the row's value is zero too).
struct CoefficientOfVariation {
  double value = 0.0;
  std::vector<double> gradient;  // ∂CV/∂values[k]
};
CoefficientOfVariation ComputeCoefficientOfVariation(std::span<const double> values);

class ScalingSpreadPenalty {
 public:
  ScalingSpreadPenalty() = default;  // inactive: adds nothing
  // λ ≥ 0, σ > 0 (the residual scale of the data rows).
  ScalingSpreadPenalty(const model::ExpandedIndex& index, double lambda, double sigma);

  bool active() const { return active_; }
  int rows() const { return active_ ? 2 : 0; }
  double lambda() const { return lambda_; }

  // Σ of the squared penalty rows at the expanded vector (0 when inactive).
  double Chi2(std::span<const double> expanded) const;
  // chi2 += each squared row in turn (the order AddTo adds them, so a χ² with and without
  // derivatives gets the same bits from the same data part).
  void AddChi2(std::span<const double> expanded, double& chi2) const;
  // Adds the rows to expanded-space normal equations: χ² += Σp², Jᵀr += Σ p·∇p,
  // JᵀJ += Σ ∇p∇pᵀ (Gauss–Newton, exact for rows that are part of r).
  void AddTo(std::span<const double> expanded, model::NormalEquations& eq) const;

 private:
  bool active_ = false;
  model::ExpandedIndex index_;
  double lambda_ = 0.0;
  double weight_ = 0.0;  // sqrt(λ)/σ
};

}  // namespace homodyne::nlsq
