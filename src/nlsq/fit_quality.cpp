#include "nlsq/fit_quality.h"

#include <algorithm>
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

double NoiseMisfitThreshold(std::int64_t noise_differences, const QualityRules& rules) {
  const double n = static_cast<double>(std::max<std::int64_t>(noise_differences, 1));
  return std::max(rules.noise_good_below, 1.0 + rules.noise_tolerance / std::sqrt(n));
}

QualityAssessment AssessFitQuality(const FitQualityInput& in, const QualityRules& rules) {
  const bool by_noise = std::isfinite(in.noise_reduced_chi2);
  QualityRules judged = rules;
  if (by_noise) {
    judged.good_below =
        std::min(NoiseMisfitThreshold(in.noise_differences, rules), rules.acceptable_below);
  }
  QualityAssessment out = AssessFitQuality(by_noise ? in.noise_reduced_chi2 : in.reduced_chi2,
                                           in.converged, in.parameters, judged);
  if (!by_noise) {
    out.warnings.push_back(fmt::format(
        "the noise level of the data could not be measured ({}): the quality flag judges "
        "homodyne's reduced chi-squared (sigma = 0.01), which is not in units of the noise",
        in.noise_unmeasured.empty() ? "no data" : in.noise_unmeasured));
  } else if (in.noise_reduced_chi2 >= judged.good_below) {
    out.misfit.push_back(fmt::format(
        "reduced chi-squared {:.4g} in units of the data's noise level (>= {:.3g}, the most "
        "the noise allows here): the answer is {} the noise floor, so the model does not "
        "describe these data here (a wrong basin: try optimization.nlsq.cmaes.enable or "
        "multi_start; or the wrong analysis_mode, q ring or frame range{})",
        in.noise_reduced_chi2, judged.good_below,
        in.noise_reduced_chi2 >= rules.acceptable_below ? "far above" : "above",
        in.robust_loss ? "; or outliers: the robust loss down-weighted them in the fit, but "
                         "chi-squared counts them in full"
                       : ""));
  }
  if (std::isfinite(in.held_scaling_gain) &&
      in.held_scaling_gain >= rules.held_scaling_gain_limit) {
    out.misfit.push_back(fmt::format(
        "the per-angle contrast/offset held at the data's quantile estimates are contradicted by "
        "the data: fitting them at this answer's physics would lower the noise-based reduced "
        "chi-squared by {:.4g} (>= {:g}); use anti_degeneracy.per_angle_mode auto, individual or "
        "fourier",
        in.held_scaling_gain, rules.held_scaling_gain_limit));
    out.flag = FitQuality::kPoor;
  }
  // Above the threshold the flag stays what the value earns (acceptable below 5); held scaling
  // the data contradict makes it poor: the physics were fitted to the wrong surface.
  if (!out.misfit.empty()) out.passed = false;
  return out;
}

}  // namespace homodyne::nlsq
