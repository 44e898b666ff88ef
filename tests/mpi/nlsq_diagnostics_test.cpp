// analysis_results_nlsq.json's nlsq_diagnostics on small two_component and laminar_flow fits
// at whatever rank count the test runs with (ctest: 1 and 2): the χ² split by angle sums to
// the fit's χ², the parameter names match the fitted parameters, the gradient monitor saw
// every iteration and does not change the fit, and the numbers do not depend on the ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "config/config_reader.h"
#include "core/log.h"
#include "global/fit_pipeline.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq_fit_fixture.h"
#include "outputs/nlsq_result_files.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

using outputs::AnalysisResultsJson;

using homodyne::testing::MpiTempDir;
using homodyne::testing::SameBits;
using homodyne::testing::TestEnvironment;

const std::string kNames =
    "[D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, "
    "v_offset, f0, f1, f2, f3, phi0_het]";
const std::string kTruth = "3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.3, 0.0, 0.05, 2.0";
const std::string kStart =
    "3300, 0.27, 18, 18000, -0.33, 55, 320, 0.55, 2.2, 0.33, 0.32, 0.0, 0.055, 1.5";

// A two_component config for `file` started at `values`, f2 held, with `anti_degeneracy`
// (YAML indented by six spaces) under optimization.nlsq.anti_degeneracy.
config::Config TwoComponentConfig(const std::string& values, const std::string& file,
                                  const std::string& anti_degeneracy) {
  const auto path = std::filesystem::path(file);
  const std::string yaml =
      "analysis_mode: two_component\nanalyzer_parameters:\n  dt: 0.1\n  scattering:\n"
      "    wavevector_q: 0.0054\nexperimental_data:\n  data_folder_path: " +
      path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
      "\ninitial_parameters:\n  parameter_names: " + kNames + "\n  values: [" + values +
      "]\n  active_parameters: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, "
      "D_offset_sample, v0, v_beta, v_offset, f0, f1, f3, phi0_het]\n"
      "parameter_space:\n  bounds:\n    - {name: v_beta, min: -1.0, max: 2.0}\n"
      "optimization:\n  nlsq:\n    anti_degeneracy:\n" +
      anti_degeneracy;
  return config::ReadConfigString(yaml, "diagnostics-test-config", config::ReadOptions{});
}

std::string WriteTwoComponentData(const MpiTempDir& dir) {
  const Comm& world = TestEnvironment().world();
  const std::string path = dir.file("het.h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 30;
    o.phi_deg = {0.0, 45.0, 90.0, 135.0};
    o.noise = 0.002;
    o.seed = 7;
    synth::WriteSyntheticDataset(TwoComponentConfig(kTruth, path, "      per_angle_mode: auto\n"),
                                 o);
  });
  world.Barrier();
  return path;
}

double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// The diagnostics every layout must have, checked against the fit itself.
void ExpectConsistentDiagnostics(const NlsqRunResult& r) {
  const NlsqDiagnosticsReport& d = r.report.diagnostics;
  ASSERT_EQ(d.chi2_per_angle.size(), r.phi_deg.size());
  for (double c : d.chi2_per_angle) EXPECT_GT(c, 0.0);
  EXPECT_NEAR(Sum(d.chi2_per_angle), r.report.chi_squared, 1e-12 * r.report.chi_squared);
  EXPECT_EQ(static_cast<int>(d.parameter_names.size()), r.n_optimised);
  EXPECT_EQ(d.n_iterations, r.summary.iterations);
  EXPECT_EQ(d.n_function_evals, r.summary.evaluations + r.summary.objective_evaluations);
  EXPECT_EQ(d.convergence_reason, std::string(ToString(r.summary.termination)));
  EXPECT_FALSE(d.message.empty());
  // The JSON block carries them.
  const auto j = nlohmann::json::parse(AnalysisResultsJson(r.report))["nlsq_diagnostics"];
  for (const char* key : {"per_angle_mode", "chi2_per_angle", "scaling_source", "fourier_basis_dim",
                          "parameter_names", "hierarchical_active", "regularization_active",
                          "shear_weighting", "convergence_reason", "n_function_evals",
                          "n_iterations", "wall_time_seconds", "message", "gradient_monitor"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["chi2_per_angle"].size(), r.phi_deg.size());
}

TEST(NlsqDiagnostics, TwoComponentBlockIsConsistentAndTheMonitorChangesNothing) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "diagnostics_het", /*create=*/true);
  const std::string path = WriteTwoComponentData(dir);
  const auto options = testing::QuietRun();
  const std::string monitor_on =
      "      per_angle_mode: individual\n      gradient_monitoring:\n"
      "        enable: true\n        ratio_threshold: 0.01\n        consecutive_triggers: 3\n";
  const std::string monitor_off =
      "      per_angle_mode: individual\n      gradient_monitoring: {enable: false}\n";
  const NlsqRunResult on =
      RunNlsqFit(world, TwoComponentConfig(kStart, path, monitor_on), options, Logger::Silent());
  const NlsqRunResult off =
      RunNlsqFit(world, TwoComponentConfig(kStart, path, monitor_off), options, Logger::Silent());

  ASSERT_EQ(on.layout, "individual");
  ASSERT_GT(on.summary.iterations, 0);
  ExpectConsistentDiagnostics(on);
  const NlsqDiagnosticsReport& d = on.report.diagnostics;
  EXPECT_EQ(d.scaling_source, "fitted");
  EXPECT_EQ(d.fourier_basis_dim, 0);
  // Physics first in kernel names, then the per-angle scaling; f2 is held (not fitted).
  EXPECT_EQ(d.parameter_names.front(), "D0_ref");
  EXPECT_NE(std::find(d.parameter_names.begin(), d.parameter_names.end(), "beta"),
            d.parameter_names.end());
  EXPECT_NE(std::find(d.parameter_names.begin(), d.parameter_names.end(), "phi0"),
            d.parameter_names.end());
  EXPECT_EQ(std::find(d.parameter_names.begin(), d.parameter_names.end(), "f2"),
            d.parameter_names.end());
  EXPECT_EQ(d.parameter_names[13], "contrast[0]");
  EXPECT_EQ(d.parameter_names.back(), "offset[3]");

  // The monitor watched every iteration of the solve, with finite ratios.
  const GradientMonitorReport& g = d.gradient_monitor;
  EXPECT_TRUE(g.enabled);
  EXPECT_EQ(g.n_observations, on.summary.iterations);
  EXPECT_EQ(g.unobserved_iterations, 0);
  EXPECT_EQ(g.mechanism, "per_iteration_gradient_ratio");
  EXPECT_TRUE(std::isfinite(g.min_gradient_ratio));
  EXPECT_LE(g.min_gradient_ratio, g.max_gradient_ratio);
  EXPECT_EQ(g.consecutive_triggers, 3);
  EXPECT_EQ(g.trigger_count > 0, !GradientCollapseWarning(g).empty());
  const auto j = nlohmann::json::parse(AnalysisResultsJson(on.report))["nlsq_diagnostics"];
  EXPECT_EQ(j["gradient_monitor"]["n_observations"], on.summary.iterations);
  EXPECT_EQ(j["contrast_per_angle_fitted"].size(), 4u);
  EXPECT_EQ(j["n_angles_joint"], 4);

  // Off: the same fit bit for bit, and no block.
  EXPECT_TRUE(SameBits(on.expanded, off.expanded));
  EXPECT_EQ(on.summary.iterations, off.summary.iterations);
  EXPECT_FALSE(off.report.diagnostics.gradient_monitor.enabled);
  const auto j_off = nlohmann::json::parse(AnalysisResultsJson(off.report))["nlsq_diagnostics"];
  EXPECT_TRUE(j_off["gradient_monitor"].is_null());
  EXPECT_EQ(j_off["gradient_monitor_inactive_reason"], "gradient_monitoring.enable is false");

  // Each rank alone: the same numbers (the χ² split has the same bits for any rank count).
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone =
      RunNlsqFit(self, TwoComponentConfig(kStart, path, monitor_on), options, Logger::Silent());
  EXPECT_TRUE(SameBits(alone.expanded, on.expanded));
  EXPECT_TRUE(SameBits(alone.report.diagnostics.chi2_per_angle, d.chi2_per_angle));
  const GradientMonitorReport& ga = alone.report.diagnostics.gradient_monitor;
  EXPECT_EQ(ga.n_observations, g.n_observations);
  EXPECT_EQ(ga.trigger_count, g.trigger_count);
  EXPECT_TRUE(SameBits({ga.min_gradient_ratio, ga.max_gradient_ratio},
                       {g.min_gradient_ratio, g.max_gradient_ratio}));
  auto without_time = [](const NlsqRunResult& r) {
    auto block = nlohmann::json::parse(AnalysisResultsJson(r.report))["nlsq_diagnostics"];
    block.erase("wall_time_seconds");
    return block.dump();
  };
  EXPECT_EQ(without_time(alone), without_time(on));
  world.Barrier();
}

TEST(NlsqDiagnostics, AveragedAndConstantLayoutsReportTheirScaling) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "diagnostics_layouts", /*create=*/true);
  const std::string path = WriteTwoComponentData(dir);
  const auto options = testing::QuietRun();
  const NlsqRunResult averaged =
      RunNlsqFit(world, TwoComponentConfig(kStart, path, "      per_angle_mode: auto\n"), options,
                 Logger::Silent());
  ASSERT_EQ(averaged.layout, "auto_averaged");
  ExpectConsistentDiagnostics(averaged);
  const NlsqDiagnosticsReport& a = averaged.report.diagnostics;
  EXPECT_EQ(a.scaling_source, "averaged_then_fitted");
  EXPECT_EQ(a.parameter_names[a.parameter_names.size() - 2], "contrast");
  EXPECT_EQ(a.parameter_names.back(), "offset");
  EXPECT_EQ(a.contrast_quantile.size(), 4u);
  EXPECT_TRUE(std::isfinite(a.contrast_initial_average));
  EXPECT_EQ(a.gradient_monitor.n_observations, averaged.summary.iterations);
  const auto ja = nlohmann::json::parse(AnalysisResultsJson(averaged.report))["nlsq_diagnostics"];
  EXPECT_EQ(ja["averaged_contrast"].get<double>(), averaged.report.contrast[0]);

  const NlsqRunResult constant =
      RunNlsqFit(world, TwoComponentConfig(kStart, path, "      per_angle_mode: constant\n"),
                 options, Logger::Silent());
  ASSERT_EQ(constant.layout, "fixed_constant");
  ExpectConsistentDiagnostics(constant);
  const NlsqDiagnosticsReport& c = constant.report.diagnostics;
  EXPECT_EQ(c.scaling_source, "quantile_fixed");
  EXPECT_EQ(c.parameter_names.size(), 13u);  // the varying physics only
  EXPECT_FALSE(c.gradient_monitor.enabled);
  const auto jc = nlohmann::json::parse(AnalysisResultsJson(constant.report))["nlsq_diagnostics"];
  EXPECT_TRUE(jc["gradient_monitor"].is_null());
  EXPECT_EQ(jc["contrast_per_angle_fixed"].size(), 4u);
  world.Barrier();
}

TEST(NlsqDiagnostics, LaminarChi2PerAngleSumsToChi2) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "diagnostics_laminar", /*create=*/true);
  const std::string path = dir.file("laminar.h5");
  const std::string truth = "1000, -0.5, 10, 0.01, 0.1, 0.0, 2.0";
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 40;
    o.phi_deg = {0.0, 60.0, 120.0};
    o.noise = 0.002;
    o.seed = 3;
    synth::WriteSyntheticDataset(testing::LaminarFileConfig(truth, path, ""), o);
  });
  world.Barrier();
  const config::Config cfg = testing::LaminarFileConfig(
      "1100, -0.45, 11, 0.011, 0.1, 0.0, 2.2", path,
      "    anti_degeneracy:\n      per_angle_mode: fourier\n      fourier_order: 1\n");
  const NlsqRunResult r = RunNlsqFit(world, cfg, testing::QuietRun(), Logger::Silent());
  ASSERT_EQ(r.layout, "fourier");
  ExpectConsistentDiagnostics(r);
  const NlsqDiagnosticsReport& d = r.report.diagnostics;
  EXPECT_EQ(d.fourier_basis_dim, 3);
  EXPECT_EQ(d.fourier_order, 1);
  EXPECT_EQ(d.scaling_fitted.size(), 6u);
  EXPECT_EQ(d.parameter_names[7], "contrast_c0");
  EXPECT_EQ(d.parameter_names[8], "contrast_c1");
  EXPECT_EQ(d.parameter_names[9], "contrast_s1");
  EXPECT_EQ(d.gradient_monitor.n_observations, r.summary.iterations);
  // TAO's bounded Newton: the monitor reads the gradient TAO's last evaluation left at the
  // iterate; every iteration is accounted for, and the fit is again unchanged by it.
  const std::string tao_block =
      "    local_solver: bntr\n    anti_degeneracy:\n      per_angle_mode: fourier\n"
      "      fourier_order: 1\n";
  const std::string tao_off = tao_block + "      gradient_monitoring: {enable: false}\n";
  const NlsqRunResult tao = RunNlsqFit(
      world, testing::LaminarFileConfig("1100, -0.45, 11, 0.011, 0.1, 0.0, 2.2", path, tao_block),
      testing::QuietRun(), Logger::Silent());
  const NlsqRunResult tao_unmonitored = RunNlsqFit(
      world, testing::LaminarFileConfig("1100, -0.45, 11, 0.011, 0.1, 0.0, 2.2", path, tao_off),
      testing::QuietRun(), Logger::Silent());
  const GradientMonitorReport& gt = tao.report.diagnostics.gradient_monitor;
  EXPECT_GT(gt.n_observations, 0);
  EXPECT_EQ(gt.n_observations + gt.unobserved_iterations, tao.summary.iterations);
  EXPECT_TRUE(SameBits(tao.expanded, tao_unmonitored.expanded));
  // Streamed in small windows: the same split.
  const NlsqRunResult streamed =
      RunNlsqFit(world, cfg, testing::QuietRun(FitStrategy::kStreaming, 300), Logger::Silent());
  EXPECT_TRUE(SameBits(streamed.report.diagnostics.chi2_per_angle, d.chi2_per_angle));
  world.Barrier();
}

}  // namespace
}  // namespace homodyne::nlsq
