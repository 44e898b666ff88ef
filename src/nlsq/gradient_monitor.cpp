#include "nlsq/gradient_monitor.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config/choices.h"
#include "config/config.h"
#include "config/key_paths.h"
#include "core/errors.h"

namespace homodyne::nlsq {
namespace {

std::string Key(std::string_view leaf) {
  return config::keys::Key(config::keys::kNlsqGradientMonitoring, leaf);
}

bool Low(double ratio, double threshold) {
  return ratio == std::numeric_limits<double>::infinity() || ratio < threshold;
}

}  // namespace

std::string GradientMonitorOptions::Validate() const {
  if (!(ratio_threshold > 0.0) || !std::isfinite(ratio_threshold)) {
    return fmt::format("{} must be a finite number > 0, found {}", Key("ratio_threshold"),
                       ratio_threshold);
  }
  if (consecutive_triggers < 1) {
    return fmt::format("{} must be ≥ 1, found {}", Key("consecutive_triggers"),
                       consecutive_triggers);
  }
  return "";
}

GradientMonitorOptions GradientMonitorOptions::FromConfig(const config::AntiDegeneracy& a) {
  GradientMonitorOptions o;
  o.enable = a.gradient_monitoring_enable;
  o.ratio_threshold = a.gradient_ratio_threshold;
  o.consecutive_triggers = a.gradient_consecutive_triggers;
  o.response = a.gradient_response;
  if (const std::string bad = o.Validate(); !bad.empty()) ThrowBadInput(bad);
  return o;
}

double GradientRatio(std::span<const double> gradient, int n_scaling) {
  double scaling = 0.0, physics = 0.0;
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    const double g2 = gradient[i] * gradient[i];
    (static_cast<int>(i) < n_scaling ? scaling : physics) += g2;
  }
  scaling = std::sqrt(scaling);
  physics = std::sqrt(physics);
  if (!(physics > 0.0)) return std::numeric_limits<double>::quiet_NaN();  // 0 or NaN
  if (!(scaling > 0.0) || !std::isfinite(scaling)) return std::numeric_limits<double>::infinity();
  return physics / scaling;
}

GradientMonitor::GradientMonitor(const GradientMonitorOptions& options, int n_scaling)
    : options_(options), n_scaling_(n_scaling) {
  HOMODYNE_CHECK(options.enable && n_scaling >= 1, "the monitor needs a scaling block");
  report_.enabled = true;
  report_.ratio_threshold = options.ratio_threshold;
  report_.consecutive_triggers = options.consecutive_triggers;
  report_.response = std::string(config::ChoiceName(options.response));
}

void GradientMonitor::Observe(int iteration, std::span<const double> gradient) {
  if (static_cast<int>(gradient.size()) <= n_scaling_) return;  // no physics: nothing to compare
  const double ratio = GradientRatio(gradient, n_scaling_);
  GradientMonitorReport& r = report_;
  ++r.n_observations;
  r.last_gradient_ratio = ratio;
  if (std::isnan(ratio)) return;  // no ratio: the run of low ratios neither grows nor ends
  r.min_gradient_ratio =
      std::isnan(r.min_gradient_ratio) ? ratio : std::min(r.min_gradient_ratio, ratio);
  r.max_gradient_ratio =
      std::isnan(r.max_gradient_ratio) ? ratio : std::max(r.max_gradient_ratio, ratio);
  if (Low(ratio, options_.ratio_threshold)) {
    ++r.low_ratio_observations;
    ++run_;
    if (run_ == options_.consecutive_triggers) {
      ++r.trigger_count;
      if (r.first_collapse_iteration < 0) r.first_collapse_iteration = iteration;
    }
  } else {
    run_ = 0;
  }
  r.collapsed_at_end = run_ >= options_.consecutive_triggers;
}

GradientMonitorReport GradientMonitor::Report() const {
  GradientMonitorReport r = report_;
  r.mechanism = r.n_observations > 0 ? "per_iteration_gradient_ratio" : "no iterations observed";
  return r;
}

GradientMonitorReport InactiveGradientMonitor(const GradientMonitorOptions& options,
                                              std::string reason) {
  GradientMonitorReport r;
  r.enabled = false;
  r.inactive_reason = std::move(reason);
  r.ratio_threshold = options.ratio_threshold;
  r.consecutive_triggers = options.consecutive_triggers;
  r.response = std::string(config::ChoiceName(options.response));
  return r;
}

std::string GradientCollapseWarning(const GradientMonitorReport& r) {
  if (!r.enabled || !r.collapse_detected()) return "";
  return fmt::format(
      "gradient collapse: on {} of {} iterations of the local fit the norm of the physical "
      "parameters' gradient was below {:g} times the per-angle scaling's (first collapse at "
      "iteration {}, lowest ratio {:.3g}{}): the per-angle contrast/offset absorb the signal "
      "the physics should explain. Check the physical parameters against their bounds and the "
      "correlation warnings, and consider fewer scaling parameters "
      "(optimization.nlsq.anti_degeneracy.per_angle_mode: auto (averaged), fourier or constant)",
      r.low_ratio_observations, r.n_observations, r.ratio_threshold, r.first_collapse_iteration,
      r.min_gradient_ratio, r.collapsed_at_end ? "; still collapsed at the end" : "");
}

}  // namespace homodyne::nlsq
