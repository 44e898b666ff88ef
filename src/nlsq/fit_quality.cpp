#include "nlsq/fit_quality.h"

#include <cmath>

#include <fmt/format.h>

namespace homodyne::nlsq {

std::string_view ToString(FitQuality q) {
  switch (q) {
    case FitQuality::kGood:
      return "good";
    case FitQuality::kAcceptable:
      return "acceptable";
    case FitQuality::kPoor:
      return "poor";
  }
  return "poor";
}

QualityAssessment AssessFitQuality(double reduced_chi2, bool converged,
                                   const std::vector<ParameterBoundState>& parameters,
                                   const QualityRules& rules) {
  QualityAssessment out;
  if (!std::isfinite(reduced_chi2)) {
    out.flag = FitQuality::kPoor;
    out.warnings.push_back(
        "reduced chi-squared is not finite (NaN/Inf chi-squared, or fewer data points than "
        "parameters)");
  } else if (reduced_chi2 < rules.good_below) {
    out.flag = FitQuality::kGood;
  } else if (reduced_chi2 < rules.acceptable_below) {
    out.flag = FitQuality::kAcceptable;
  } else {
    out.flag = FitQuality::kPoor;
  }
  if (std::isfinite(reduced_chi2) && reduced_chi2 > rules.warn_above) {
    out.warnings.push_back(fmt::format(
        "reduced chi-squared {:.4g} exceeds {:g}: the model does not describe the data (check "
        "analysis_mode, the q ring, frame range, or sigma)",
        reduced_chi2, rules.warn_above));
  }
  if (!converged) {
    out.warnings.push_back(
        "the optimiser did not converge: raise optimization.nlsq.max_iterations or start closer "
        "(initial_parameters.values / multi_start)");
  }
  for (const auto& p : parameters) {
    if (!p.physical || !(p.at_lower || p.at_upper)) continue;
    out.warnings.push_back(
        fmt::format("{} is at its {} bound: widen parameter_space.bounds for {} or check the model",
                    p.name, p.at_lower ? "lower" : "upper", p.name));
  }
  out.passed = out.warnings.empty();
  return out;
}

}  // namespace homodyne::nlsq
