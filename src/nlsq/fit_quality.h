// One set of fit-quality rules (homodyne has four inconsistent ones; we use the
// documented validator's): reduced χ² < 2 good, < 5 acceptable, else poor; a warning
// above 10; a warning for every physical parameter at a bound and for a solve that
// did not converge.
//
// The reduced χ² they judge is the one in units of the data's own noise level
// (noise_level.h), ≈ 1 at the minimum of a correctly specified model; homodyne's (σ = 0.01)
// only where that level could not be measured. On it, good means consistent with the noise
// (below NoiseMisfitThreshold: 1.25 on all but tiny data), and a converged answer is a misfit
// (exit 5, docs/errors.md) when it is not good, or when the per-angle scaling was held at
// estimates the data contradict.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne::nlsq {

enum class FitQuality { kGood, kAcceptable, kPoor };
std::string_view ToString(FitQuality q);

struct QualityRules {
  double good_below = 2.0;
  double acceptable_below = 5.0;
  double warn_above = 10.0;  // optimization.nlsq.quality_validation.reduced_chi_squared_threshold
  // Held scaling is contradicted when fitting it would lower the noise-based reduced χ² by
  // at least this much (the held values then add as much misfit as the noise itself).
  double held_scaling_gain_limit = 1.0;
  // On the noise-based reduced χ²: good (consistent with the noise) below
  // NoiseMisfitThreshold, max(noise_good_below, 1 + noise_tolerance/√n) with n the third
  // differences the noise level rests on (its own relative uncertainty is about 4/√n); a
  // converged answer at or above it is a misfit. acceptable_below and warn_above as above.
  double noise_good_below = 1.25;
  double noise_tolerance = 16.0;
};

double NoiseMisfitThreshold(std::int64_t noise_differences, const QualityRules& rules = {});

struct ParameterBoundState {
  std::string name;
  bool physical = true;
  bool at_lower = false;
  bool at_upper = false;
};

struct QualityAssessment {
  FitQuality flag = FitQuality::kPoor;
  bool passed = false;                // no warnings
  std::vector<std::string> warnings;  // specific and actionable
  // Why the answer does not describe the data (empty: it does, as far as these rules see).
  std::vector<std::string> misfit;
};

// Judges one reduced χ² (homodyne's rules, no misfit verdict).
QualityAssessment AssessFitQuality(double reduced_chi2, bool converged,
                                   const std::vector<ParameterBoundState>& parameters,
                                   const QualityRules& rules = {});

struct FitQualityInput {
  double reduced_chi2 = std::numeric_limits<double>::quiet_NaN();  // homodyne's (σ = 0.01)
  // In units of the data's noise level; NaN when it was not measured (then `noise_unmeasured`
  // says why and homodyne's is judged instead).
  double noise_reduced_chi2 = std::numeric_limits<double>::quiet_NaN();
  std::string noise_unmeasured;
  std::int64_t noise_differences = 0;  // third differences the noise level rests on, all angles
  // Held per-angle scaling only: how much fitting it at the answer's physics would lower the
  // noise-based reduced χ²; NaN when the scaling was fitted.
  double held_scaling_gain = std::numeric_limits<double>::quiet_NaN();
  bool converged = false;
  bool robust_loss = false;  // the fit minimised a robust loss, not χ²
  std::vector<ParameterBoundState> parameters;
};

// The rules on the noise-based reduced χ², with the misfit verdict.
QualityAssessment AssessFitQuality(const FitQualityInput& in, const QualityRules& rules = {});

}  // namespace homodyne::nlsq
