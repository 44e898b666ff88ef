// The gradient-collapse monitor (xpcsjax's layer L4,
// optimization.nlsq.anti_degeneracy.gradient_monitoring): strictly observational.
//
// After every accepted iteration of a local solve it takes the gradient the solver already
// has, g = Jᵀr = ∇(½χ²) in the optimiser's space, and forms
//     ratio = ‖g_physics‖₂ / ‖g_scaling‖₂
// (scaling: the per-angle contrast/offset parameters of the layout, physics: the varying
// physical ones). A ratio below ratio_threshold means the physics no longer pull on χ²
// against the scaling: the per-angle contrast/offset absorb the signal. consecutive_triggers
// such ratios in a row make one collapse event; a healthy ratio re-arms the detector (the
// next run of low ratios is a new event). A zero or non-finite scaling gradient with a
// non-zero physics gradient gives ratio +inf, which counts as a trigger too (the scaling
// block itself has no signal: xpcsjax's "dual-ended" rule); both gradients zero (an exact
// fit) gives no ratio: it neither adds to nor ends a run of low ratios.
//
// The solve is never changed: the monitor reads the gradient and records numbers.
#pragma once

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"

namespace homodyne::nlsq {

struct GradientMonitorOptions {
  bool enable = true;
  double ratio_threshold = 0.01;
  int consecutive_triggers = 5;
  // xpcsjax's response: recorded, never executed (xpcsjax executes none of them either).
  config::GradientResponse response = config::GradientResponse::kHierarchical;

  // Empty if valid, else a message naming the key (…gradient_monitoring.<key>) and the rule.
  std::string Validate() const;
  // optimization.nlsq.anti_degeneracy.gradient_monitoring; bad input naming the key.
  static GradientMonitorOptions FromConfig(const config::AntiDegeneracy& a);
};

// What the monitor saw over one solve. Ratios that do not exist are NaN.
struct GradientMonitorReport {
  bool enabled = false;               // the monitor watched the solve
  std::string inactive_reason;        // why not (empty when it watched)
  int n_observations = 0;             // accepted iterations observed
  int trigger_count = 0;              // collapse events (runs of consecutive_triggers low ratios)
  int first_collapse_iteration = -1;  // the iteration completing the first event (−1: none)
  bool collapsed_at_end = false;      // the last consecutive_triggers ratios were all low
  int low_ratio_observations = 0;     // ratios below the threshold (or +inf)
  double min_gradient_ratio = std::numeric_limits<double>::quiet_NaN();
  double max_gradient_ratio = std::numeric_limits<double>::quiet_NaN();
  double last_gradient_ratio = std::numeric_limits<double>::quiet_NaN();
  double ratio_threshold = 0.0;
  int consecutive_triggers = 0;
  std::string response;
  // "per_iteration_gradient_ratio" or "no iterations observed".
  std::string mechanism;
  // Iterations of the solve the monitor did not see: those before the checkpoint a resumed
  // solve continued, and TAO iterations whose gradient was not at hand (0 normally).
  int unobserved_iterations = 0;

  bool collapse_detected() const { return trigger_count > 0; }
};

// ‖g_physics‖ / ‖g_scaling‖ with the rules above: +inf when the scaling norm is zero or
// non-finite and the physics norm is not zero; NaN when both are zero (or physics NaN).
double GradientRatio(std::span<const double> gradient, int n_scaling);

class GradientMonitor {
 public:
  // The optimiser vector's first n_scaling entries are the per-angle scaling, the rest the
  // physics (model/parameter_layout.h). Requires enable and n_scaling ≥ 1.
  GradientMonitor(const GradientMonitorOptions& options, int n_scaling);

  // One accepted iteration with its gradient Jᵀr.
  void Observe(int iteration, std::span<const double> gradient);
  GradientMonitorReport Report() const;

 private:
  GradientMonitorOptions options_;
  int n_scaling_ = 0;
  int run_ = 0;  // consecutive low ratios so far
  GradientMonitorReport report_;
};

// A report of a solve the monitor did not watch, with the reason.
GradientMonitorReport InactiveGradientMonitor(const GradientMonitorOptions& options,
                                              std::string reason);

// The warning a collapse deserves (empty when none was detected).
std::string GradientCollapseWarning(const GradientMonitorReport& report);

}  // namespace homodyne::nlsq
