// One set of fit-quality rules (homodyne has four inconsistent ones; we use the
// documented validator's): reduced χ² < 2 good, < 5 acceptable, else poor; a warning
// above 10; a warning for every physical parameter at a bound and for a solve that
// did not converge.
#pragma once

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
};

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
};

QualityAssessment AssessFitQuality(double reduced_chi2, bool converged,
                                   const std::vector<ParameterBoundState>& parameters,
                                   const QualityRules& rules = {});

}  // namespace homodyne::nlsq
