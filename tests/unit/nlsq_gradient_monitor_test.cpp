#include "nlsq/gradient_monitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "config/config.h"
#include "core/errors.h"
#include "outputs/nlsq_result_files.h"

namespace homodyne::nlsq {
namespace {

using outputs::AnalysisResultsJson;

GradientMonitorOptions Options(double threshold, int consecutive) {
  GradientMonitorOptions o;
  o.ratio_threshold = threshold;
  o.consecutive_triggers = consecutive;
  return o;
}

// A gradient with 2 scaling entries (norm `scaling`) and 2 physics entries (norm `physics`).
std::vector<double> Gradient(double scaling, double physics) {
  return {0.6 * scaling, -0.8 * scaling, 0.8 * physics, 0.6 * physics};
}

TEST(NlsqGradientMonitor, RatioIsPhysicsNormOverScalingNorm) {
  EXPECT_NEAR(GradientRatio(Gradient(4.0, 1.0), 2), 0.25, 1e-15);
  EXPECT_NEAR(GradientRatio(Gradient(1e-3, 2e-3), 2), 2.0, 1e-15);
  // Scaling without gradient, physics with: +inf (the scaling block has no signal).
  EXPECT_EQ(GradientRatio(Gradient(0.0, 1.0), 2), std::numeric_limits<double>::infinity());
  // Both zero (an exact fit): no ratio.
  EXPECT_TRUE(std::isnan(GradientRatio(Gradient(0.0, 0.0), 2)));
}

TEST(NlsqGradientMonitor, ConsecutiveLowRatiosMakeOneEventAndHealthyRatiosRearm) {
  GradientMonitor m(Options(0.1, 3), 2);
  const double ratios[] = {0.5, 0.05, 0.01, 0.2, 0.05, 0.05, 0.05, 0.05, 0.3, 0.01, 0.01, 0.01};
  int it = 0;
  for (double r : ratios) m.Observe(++it, Gradient(1.0, r));
  const GradientMonitorReport rep = m.Report();
  EXPECT_EQ(rep.n_observations, 12);
  // Runs of low ratios: 2 (iterations 2-3, too short), 4 (5-8: one event at 7), 3 (10-12:
  // one event at 12).
  EXPECT_EQ(rep.trigger_count, 2);
  EXPECT_EQ(rep.first_collapse_iteration, 7);
  EXPECT_TRUE(rep.collapse_detected());
  EXPECT_TRUE(rep.collapsed_at_end);
  EXPECT_EQ(rep.low_ratio_observations, 9);
  EXPECT_NEAR(rep.min_gradient_ratio, 0.01, 1e-15);
  EXPECT_NEAR(rep.max_gradient_ratio, 0.5, 1e-15);
  EXPECT_NEAR(rep.last_gradient_ratio, 0.01, 1e-15);
  EXPECT_EQ(rep.mechanism, "per_iteration_gradient_ratio");
  EXPECT_FALSE(GradientCollapseWarning(rep).empty());
}

TEST(NlsqGradientMonitor, ShortRunsAndHealthyFitsDetectNothing) {
  GradientMonitor m(Options(0.1, 3), 2);
  const double ratios[] = {0.05, 0.05, 1.0, 0.05, 0.05, 2.0};
  int it = 0;
  for (double r : ratios) m.Observe(++it, Gradient(1.0, r));
  const GradientMonitorReport rep = m.Report();
  EXPECT_EQ(rep.trigger_count, 0);
  EXPECT_FALSE(rep.collapse_detected());
  EXPECT_FALSE(rep.collapsed_at_end);
  EXPECT_EQ(rep.first_collapse_iteration, -1);
  EXPECT_TRUE(GradientCollapseWarning(rep).empty());
}

TEST(NlsqGradientMonitor, ZeroScalingGradientTriggersAndExactFitDoesNot) {
  GradientMonitor m(Options(0.01, 2), 2);
  m.Observe(1, Gradient(0.0, 1.0));  // +inf: trigger
  m.Observe(2, Gradient(0.0, 0.0));  // no ratio: neither trigger nor reset
  m.Observe(3, Gradient(0.0, 1.0));  // +inf: the second in a row → event
  const GradientMonitorReport rep = m.Report();
  EXPECT_EQ(rep.n_observations, 3);
  EXPECT_EQ(rep.trigger_count, 1);
  EXPECT_EQ(rep.first_collapse_iteration, 3);
  EXPECT_EQ(rep.max_gradient_ratio, std::numeric_limits<double>::infinity());
}

TEST(NlsqGradientMonitor, NoObservationsSayNoIterationsObserved) {
  const GradientMonitorReport rep = GradientMonitor(Options(0.01, 5), 4).Report();
  EXPECT_TRUE(rep.enabled);
  EXPECT_EQ(rep.n_observations, 0);
  EXPECT_EQ(rep.mechanism, "no iterations observed");
  EXPECT_TRUE(std::isnan(rep.min_gradient_ratio));
  // The JSON block says collapse_detected null, not a guess.
  FitReport r;
  r.diagnostics.gradient_monitor = rep;
  const auto j = nlohmann::json::parse(AnalysisResultsJson(r));
  const auto& g = j["nlsq_diagnostics"]["gradient_monitor"];
  EXPECT_TRUE(g["collapse_detected"].is_null());
  EXPECT_EQ(g["mechanism"], "no iterations observed");
  EXPECT_EQ(g["n_observations"], 0);
  EXPECT_TRUE(g["min_gradient_ratio"].is_null());
}

TEST(NlsqGradientMonitor, InactiveMonitorIsNullWithItsReason) {
  FitReport r;
  r.diagnostics.gradient_monitor =
      InactiveGradientMonitor(Options(0.01, 5), "gradient_monitoring.enable is false");
  const auto j = nlohmann::json::parse(AnalysisResultsJson(r));
  EXPECT_TRUE(j["nlsq_diagnostics"]["gradient_monitor"].is_null());
  EXPECT_EQ(j["nlsq_diagnostics"]["gradient_monitor_inactive_reason"],
            "gradient_monitoring.enable is false");
}

TEST(NlsqGradientMonitor, OptionsFromConfigValidate) {
  config::AntiDegeneracy a;
  a.gradient_monitoring_enable = true;
  a.gradient_ratio_threshold = 0.01;
  a.gradient_consecutive_triggers = 5;
  a.gradient_response = config::GradientResponse::kWarn;
  const GradientMonitorOptions o = GradientMonitorOptions::FromConfig(a);
  EXPECT_TRUE(o.enable);
  EXPECT_EQ(o.consecutive_triggers, 5);
  EXPECT_EQ(o.response, config::GradientResponse::kWarn);
  a.gradient_ratio_threshold = 0.0;
  EXPECT_THROW(GradientMonitorOptions::FromConfig(a), Error);
  a.gradient_ratio_threshold = 0.01;
  a.gradient_consecutive_triggers = 0;
  EXPECT_THROW(GradientMonitorOptions::FromConfig(a), Error);
}

}  // namespace
}  // namespace homodyne::nlsq
