// xpcsjax's anti-degeneracy layers L2 (two stages) and L3 (CV penalty on the per-angle
// scaling) in the two_component NLSQ pipeline (docs/global.md), at whatever rank count the
// test runs with (ctest: 1 and 2), against one rank alone.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "core/log.h"
#include "global/fit_pipeline.h"
#include "io/dataset.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/scaling_penalty.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq_fit_fixture.h"
#include "outputs/nlsq_result_files.h"
#include "parallel/collective.h"
#include "scaling_oracle.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

using outputs::AnalysisResultsJson;

using homodyne::testing::MpiTempDir;
using homodyne::testing::SameBits;
using homodyne::testing::TestEnvironment;

const std::vector<std::string> kNames = {
    "D0_ref", "alpha_ref", "D_offset_ref", "D0_sample", "alpha_sample", "D_offset_sample",
    "v0",     "v_beta",    "v_offset",     "f0",        "f1",           "f2",
    "f3",     "phi0_het"};
const std::vector<double> kTruth = {4000, 0.3, 100, 20000, -0.3, 200, 300,
                                    0.6,  2,   0.4, 0.5,   0.0,  0.1, 2.0};

std::string List(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt::format("{}", v[i]);
  return s + "]";
}

// Every value configured (no velocity scan, no mirror check), f2 held; `nlsq` is YAML
// indented by four spaces under optimization.nlsq.
// The linear loss: the relations below between stage values, the penalty rows and χ² hold
// under it (under a robust loss the stages compare the loss objective).
config::Config Config(const std::string& file, const std::vector<double>& start,
                      const std::string& nlsq, const std::string& layout = "individual") {
  const auto p = std::filesystem::path(file);
  std::string names = "[";
  for (std::size_t i = 0; i < kNames.size(); ++i) names += (i ? ", " : "") + kNames[i];
  names += "]";
  const std::string yaml =
      "analysis_mode: two_component\nanalyzer_parameters:\n  dt: 0.1\n"
      "  scattering: {wavevector_q: 0.01}\nexperimental_data:\n  data_folder_path: " +
      p.parent_path().string() + "\n  data_file_name: " + p.filename().string() +
      "\ninitial_parameters:\n  parameter_names: " + names + "\n  values: " + List(start) +
      "\n  fixed_parameters: {f2: 0.0}\noptimization:\n  nlsq:\n    loss: linear\n"
      "    anti_degeneracy:\n" +
      "      per_angle_mode: " + layout + "\n" + nlsq;
  return config::ReadConfigString(yaml, "two-component-layers");
}

// `angles` angles, 30 frames, one contrast and offset for all: an individual fit spreads
// them by the noise only.
std::string WriteData(const MpiTempDir& dir, const std::vector<double>& angles = {10.0, 70.0}) {
  const Comm& world = TestEnvironment().world();
  const std::string path =
      dir.file("two_component_layers_" + std::to_string(angles.size()) + ".h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 30;
    o.phi_deg = angles;
    o.contrast = 0.3;
    o.offset = 1.0;
    o.noise = 0.01;
    o.seed = 2718;
    for (std::size_t i = 0; i < kNames.size(); ++i) o.params[kNames[i]] = kTruth[i];
    synth::WriteSyntheticDataset(Config(path, kTruth, ""), o);
  });
  world.Barrier();
  return path;
}

std::vector<double> Start() {
  std::vector<double> s = kTruth;
  for (double& v : s) v += 0.05 * std::abs(v);
  return s;
}

const std::string kNoL2 = "      hierarchical: {enable: false}\n";

TEST(NlsqTwoComponentLayers, RegularizationPullsTheContrastsTogetherAndReportsTheDataChi2) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "two_component_l3");
  const std::string path = WriteData(dir);
  const auto quiet = testing::QuietRun();
  const config::Config off_cfg = Config(path, Start(), kNoL2);
  const config::Config on_cfg =
      Config(path, Start(), kNoL2 + "      regularization: {mode: relative, lambda: 30.0}\n");
  const NlsqRunResult off = global::RunNlsqPipeline(world, off_cfg, quiet, Logger::Silent());
  const NlsqRunResult on = global::RunNlsqPipeline(world, on_cfg, quiet, Logger::Silent());
  ASSERT_EQ(off.report.contrast.size(), 2u);
  EXPECT_FALSE(off.report.regularization.active);
  ASSERT_TRUE(on.report.regularization.active);
  EXPECT_EQ(on.report.regularization.penalty_rows, 2);
  EXPECT_EQ(on.report.regularization.lambda, 30.0);
  const double spread_off = std::abs(off.report.contrast[0] - off.report.contrast[1]);
  const double spread_on = std::abs(on.report.contrast[0] - on.report.contrast[1]);
  EXPECT_GT(spread_off, 1e-4);  // the noise spreads them without the penalty
  EXPECT_LT(spread_on, 0.5 * spread_off) << spread_on << " vs " << spread_off;
  // The rows' share is lower at the regularised answer than at the plain one (the offsets
  // may spread to let the contrasts close up, but not by more).
  const auto cv2 = [](const NlsqRunResult& r) {
    const double c = ComputeCoefficientOfVariation(r.report.contrast).value;
    const double o = ComputeCoefficientOfVariation(r.report.offset).value;
    return c * c + o * o;
  };
  EXPECT_LT(cv2(on), cv2(off));

  // The reported χ² is the data's at the answer: evaluated by a fit session without the
  // penalty; the rows' share is λ/σ²·(CV_c² + CV_o²) on top of it.
  XpcsFitSession plain_session(world, off_cfg, quiet, Logger::Silent());
  const std::vector<double> x = plain_session.layout().FromExpanded(on.expanded);
  const double data = plain_session.Chi2At(x);
  EXPECT_NEAR(on.report.chi_squared, data, 1e-12 * data);
  EXPECT_EQ(on.report.regularization.data_chi_squared, on.report.chi_squared);
  const double cv_c = ComputeCoefficientOfVariation(on.report.contrast).value;
  const double cv_o = ComputeCoefficientOfVariation(on.report.offset).value;
  const double rows = 30.0 / (0.01 * 0.01) * (cv_c * cv_c + cv_o * cv_o);
  EXPECT_GT(rows, 0.0);
  EXPECT_NEAR(on.report.regularization.total_chi_squared - on.report.chi_squared, rows,
              1e-6 * rows + 1e-9 * data);
  // The unregularised fit minimises the data χ²: the regularised answer's is not below it.
  EXPECT_GE(on.report.chi_squared, off.report.chi_squared * (1.0 - 1e-9));
  EXPECT_EQ(on.report.reduced_chi_squared,
            on.report.chi_squared / static_cast<double>(on.report.n_data - on.report.n_params));

  // The same bits on one rank alone.
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, on_cfg, quiet, Logger::Silent());
  EXPECT_TRUE(SameBits(on.expanded, alone.expanded));
  EXPECT_EQ(on.report.chi_squared, alone.report.chi_squared);

  // Averaged layout (auto with 2 angles at threshold 2): no rows, the same answer as
  // without the key.
  const std::string averaged = "      constant_scaling_threshold: 2\n" + kNoL2;
  const NlsqRunResult avg_off = global::RunNlsqPipeline(
      world, Config(path, Start(), averaged, "auto"), quiet, Logger::Silent());
  const NlsqRunResult avg_on = global::RunNlsqPipeline(
      world,
      Config(path, Start(), averaged + "      regularization: {mode: relative, lambda: 30.0}\n",
             "auto"),
      quiet, Logger::Silent());
  EXPECT_EQ(avg_on.layout, "auto_averaged");
  EXPECT_FALSE(avg_on.report.regularization.active);
  EXPECT_TRUE(SameBits(avg_on.expanded, avg_off.expanded));
}

// The rows in the objective of the fit (XpcsFitSession, fourier layout: the rows act on
// the per-angle values, mapped to the coefficients by the layout): the objective's χ² less
// the data's is the rows' Σp², and the gradient and Gauss-Newton matrix differ from the
// unregularised session's by the rows' share; the gradient against finite differences.
TEST(NlsqTwoComponentLayers, PenaltyRowsEnterTheObjectiveGradientAndNormalEquations) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "two_component_l3_objective");
  const std::string path = WriteData(dir, {10.0, 70.0, 130.0});
  const auto quiet = testing::QuietRun();
  const std::string fourier = "      fourier_order: 1\n";
  XpcsFitSession on(
      world,
      Config(path, Start(), fourier + "      regularization: {mode: tikhonov, lambda: 0.5}\n",
             "fourier"),
      quiet, Logger::Silent());
  XpcsFitSession off(world, Config(path, Start(), fourier, "fourier"), quiet, Logger::Silent());
  ASSERT_TRUE(on.scaling_penalty().active());
  ASSERT_FALSE(off.scaling_penalty().active());
  ASSERT_EQ(on.layout().layout(), model::ScalingLayout::kFourier);
  // A point with spread scaling: the coefficients of the start moved off their fit.
  std::vector<double> x = on.x0();
  x[1] += 0.03;  // contrast cos term
  x[2] -= 0.02;  // contrast sin term
  x[4] += 0.01;  // offset cos term
  const SolverSummary a = on.SummaryAt(x, lsq::Termination::kConverged, "");
  const SolverSummary b = off.SummaryAt(x, lsq::Termination::kConverged, "");
  const double rows = on.scaling_penalty().Chi2(on.layout().Expand(x));
  ASSERT_GT(rows, 0.0);
  EXPECT_NEAR(a.final_chi2 - b.final_chi2, rows, 1e-9 * a.final_chi2);
  EXPECT_EQ(on.DataChi2At(x), off.Chi2At(x));
  EXPECT_NEAR(on.Chi2At(x), off.Chi2At(x) + rows, 1e-12 * on.Chi2At(x));
  const std::size_t n = x.size();
  const auto& ga = a.final_equations.gradient;
  const auto& gb = b.final_equations.gradient;
  for (std::size_t i = 0; i < n; ++i) {
    const double h = 1e-6;
    std::vector<double> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const auto penalty = [&](const std::vector<double>& y) {
      return on.scaling_penalty().Chi2(on.layout().Expand(y));
    };
    const double fd = 0.5 * (penalty(up) - penalty(down)) / (2.0 * h);
    EXPECT_NEAR(ga[i] - gb[i], fd, 1e-5 * std::max(1.0, std::abs(fd))) << i;
    if (i >= n - static_cast<std::size_t>(on.num_physical())) {
      EXPECT_EQ(ga[i], gb[i]) << i;  // physics untouched
    }
  }
  // JᵀJ: the rows add a positive semidefinite block on the scaling coefficients only.
  const auto& ha = a.final_equations.hessian;
  const auto& hb = b.final_equations.hessian;
  double trace = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double d = ha[i * n + j] - hb[i * n + j];
      if (i >= n - static_cast<std::size_t>(on.num_physical()) ||
          j >= n - static_cast<std::size_t>(on.num_physical())) {
        EXPECT_EQ(d, 0.0) << i << "," << j;
      }
      if (i == j) {
        EXPECT_GE(d, -1e-9 * std::abs(hb[i * n + i])) << i;
        trace += d;
      }
    }
  }
  EXPECT_GT(trace, 0.0);
}

TEST(NlsqTwoComponentLayers, TwoStagePathReportsBothStagesAndKeepsTheLowerChi2) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "two_component_l2");
  const std::string path = WriteData(dir);
  const auto quiet = testing::QuietRun();
  const config::Config l2 =
      Config(path, Start(), "      hierarchical: {enable: true, trigger: always}\n");
  const NlsqRunResult off =
      global::RunNlsqPipeline(world, Config(path, Start(), kNoL2), quiet, Logger::Silent());
  const NlsqRunResult r = global::RunNlsqPipeline(world, l2, quiet, Logger::Silent());
  const AntiDegeneracyReport& a = r.report.anti_degeneracy;
  EXPECT_FALSE(off.report.anti_degeneracy.hierarchical_active);
  ASSERT_TRUE(a.hierarchical_active) << a.inactive_reason;
  // Not written: off (xpcsjax's default), whatever the trigger.
  const NlsqRunResult unwritten = global::RunNlsqPipeline(
      world, Config(path, Start(), "      hierarchical: {trigger: always}\n"), quiet,
      Logger::Silent());
  EXPECT_FALSE(unwritten.report.anti_degeneracy.hierarchical_active);
  EXPECT_NE(unwritten.report.anti_degeneracy.inactive_reason.find("not written"), std::string::npos)
      << unwritten.report.anti_degeneracy.inactive_reason;
  EXPECT_TRUE(SameBits(unwritten.expanded, off.expanded));
  EXPECT_EQ(a.two_stage_stages, 2);
  EXPECT_TRUE(std::isfinite(a.stage1_chi_squared));
  EXPECT_TRUE(std::isfinite(a.stage2_chi_squared));
  // Stage 1 holds the scaling at the quantile estimates: it cannot beat the joint fit.
  EXPECT_GE(a.stage1_chi_squared, a.stage2_chi_squared);
  EXPECT_EQ(a.plain_chi_squared, off.report.chi_squared);
  EXPECT_LE(r.report.chi_squared, off.report.chi_squared);
  if (a.selected == "plain") {
    EXPECT_TRUE(SameBits(r.expanded, off.expanded));
  } else {
    ASSERT_EQ(a.selected, "hierarchical");
    EXPECT_EQ(r.report.chi_squared, a.stage2_chi_squared);
  }
  const std::string json = AnalysisResultsJson(r.report);
  for (const char* key : {"\"hierarchical_stages\": 2", "\"hierarchical_stage1_chi2\"",
                          "\"hierarchical_stage2_chi2\"", "\"selected\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  // f2 is held through both stages.
  EXPECT_EQ(r.report.physical_values[11], 0.0);

  // The same bits on one rank alone, and with checkpoints (each stage in its subfolder).
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, l2, quiet, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
  NlsqRunOptions ck = quiet;
  checkpoint::CheckpointSettings s;
  s.enabled = true;
  s.frequency = 2;
  s.dir = dir.file("ck");
  s.stop_on_signal = false;
  s.config_description = "two-component-layers";
  ck.checkpoints = s;
  const NlsqRunResult with_ck = global::RunNlsqPipeline(world, l2, ck, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, with_ck.expanded));
  EXPECT_TRUE(std::filesystem::is_directory(s.dir / "two_stage_1"));
  EXPECT_TRUE(std::filesystem::is_directory(s.dir / "two_stage_2"));
  // Streamed from the file in small windows, with L3 on as well: the in-core bits.
  const config::Config both = Config(path, Start(),
                                     "      hierarchical: {enable: true, trigger: always}\n      "
                                     "regularization: {mode: adaptive, lambda: 5}\n");
  const NlsqRunResult in_core = global::RunNlsqPipeline(world, both, quiet, Logger::Silent());
  const NlsqRunResult streamed = global::RunNlsqPipeline(
      world, both, testing::QuietRun(FitStrategy::kStreaming, 200), Logger::Silent());
  EXPECT_TRUE(in_core.report.regularization.active);
  EXPECT_EQ(in_core.report.anti_degeneracy.two_stage_stages, 2);
  EXPECT_TRUE(SameBits(in_core.expanded, streamed.expanded));
  EXPECT_EQ(in_core.report.anti_degeneracy.stage1_chi_squared,
            streamed.report.anti_degeneracy.stage1_chi_squared);

  // Constant layout: nothing to do in stage 2.
  const NlsqRunResult constant = global::RunNlsqPipeline(
      world,
      Config(path, Start(), "      hierarchical: {enable: true, trigger: always}\n", "constant"),
      quiet, Logger::Silent());
  EXPECT_FALSE(constant.report.anti_degeneracy.hierarchical_active);
  EXPECT_NE(constant.report.anti_degeneracy.inactive_reason.find("constant"), std::string::npos);
}

// Angle k's points as xpcsjax's estimators pool them (heterodyne spec §3): the full N×N
// matrix, row and column 0 and the corrected diagonal included, lags |t_i − t_j| on
// xpcsjax's grid t_m = m·dt + dt (dt = 0.1; volatile: the product rounded, no FMA).
void FullMatrix(const io::Dataset& data, std::size_t k, std::vector<double>& dt,
                std::vector<double>& c2) {
  std::vector<double> t(static_cast<std::size_t>(data.meta.n_frames));
  for (std::size_t m = 0; m < t.size(); ++m) {
    const volatile double product = static_cast<double>(m) * 0.1;
    t[m] = product + 0.1;
  }
  for (std::int64_t i = 0; i < data.meta.n_frames; ++i) {
    for (std::int64_t j = 0; j < data.meta.n_frames; ++j) {
      dt.push_back(std::abs(t[static_cast<std::size_t>(i)] - t[static_cast<std::size_t>(j)]));
      c2.push_back(data.at(k, i, j));
    }
  }
}

// xpcsjax's estimators per layout (heterodyne spec §3): constant holds Q95 estimates
// (nlsq_diagnostics.contrast/offset_per_angle_fixed), averaged starts from Q90 ones
// (contrast/offset_per_angle_quantile), and the two-stage path's stage 1 holds the Q95 ones.
TEST(NlsqTwoComponentLayers, ConstantAndStageOneHoldQ95EstimatesAveragedStartsFromQ90) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "two_component_q95");
  const std::string path = WriteData(dir);
  const auto quiet = testing::QuietRun();
  const config::Config constant_cfg = Config(path, Start(), kNoL2, "constant");
  const NlsqRunResult constant =
      global::RunNlsqPipeline(world, constant_cfg, quiet, Logger::Silent());
  ASSERT_EQ(constant.layout, "fixed_constant");
  // Streamed in small windows: the same estimates, the same fit.
  const NlsqRunResult constant_streamed = global::RunNlsqPipeline(
      world, constant_cfg, testing::QuietRun(FitStrategy::kStreaming, 200), Logger::Silent());
  EXPECT_TRUE(SameBits(constant.report.contrast, constant_streamed.report.contrast));
  EXPECT_TRUE(SameBits(constant.report.offset, constant_streamed.report.offset));
  EXPECT_TRUE(SameBits(constant.expanded, constant_streamed.expanded));
  // From the data in memory (the public API's path): the same.
  const io::Dataset data = io::LoadDataset(LoadOptionsFromConfig(constant_cfg), Logger::Silent());
  const io::DatasetView view = io::ViewOf(data);
  NlsqRunOptions from_memory = quiet;
  from_memory.in_memory = &view;
  const NlsqRunResult constant_in_memory =
      global::RunNlsqPipeline(world, constant_cfg, from_memory, Logger::Silent());
  EXPECT_TRUE(SameBits(constant.report.contrast, constant_in_memory.report.contrast));
  EXPECT_TRUE(SameBits(constant.report.offset, constant_in_memory.report.offset));
  EXPECT_TRUE(SameBits(constant.expanded, constant_in_memory.expanded));
  const NlsqRunResult averaged = global::RunNlsqPipeline(
      world, Config(path, Start(), "      constant_scaling_threshold: 2\n" + kNoL2, "auto"), quiet,
      Logger::Silent());
  ASSERT_EQ(averaged.layout, "auto_averaged");
  const auto jc = nlohmann::json::parse(AnalysisResultsJson(constant.report))["nlsq_diagnostics"];
  const auto ja = nlohmann::json::parse(AnalysisResultsJson(averaged.report))["nlsq_diagnostics"];
  ASSERT_EQ(jc["contrast_per_angle_fixed"].size(), 2u);
  ASSERT_EQ(ja["contrast_per_angle_quantile"].size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<double> dt, c2;
    FullMatrix(data, k, dt, c2);
    ASSERT_EQ(c2.size(), static_cast<std::size_t>(data.meta.n_frames * data.meta.n_frames));
    const testing::OracleScaling q95 = testing::OracleEstimate(dt, c2, true);
    const testing::OracleScaling q90 = testing::OracleEstimate(dt, c2, false);
    ASSERT_GT(std::abs(q95.contrast - q90.contrast), 1e-4);  // the check tells them apart
    EXPECT_NEAR(jc["contrast_per_angle_fixed"][k].get<double>(), q95.contrast, 1e-14) << k;
    EXPECT_NEAR(jc["offset_per_angle_fixed"][k].get<double>(), q95.offset, 1e-14) << k;
    EXPECT_EQ(constant.report.contrast[k], jc["contrast_per_angle_fixed"][k].get<double>());
    EXPECT_NEAR(ja["contrast_per_angle_quantile"][k].get<double>(), q90.contrast, 1e-14) << k;
    EXPECT_NEAR(ja["offset_per_angle_quantile"][k].get<double>(), q90.offset, 1e-14) << k;
  }
  // Stage 1 from the configured physics: its starting chi2 is the constant layout's there.
  XpcsFitSession fixed(world, constant_cfg, quiet, Logger::Silent());
  XpcsFitSession two_stage(
      world, Config(path, Start(), "      hierarchical: {enable: true, trigger: always}\n"), quiet,
      Logger::Silent());
  const SolverSummary s1 = two_stage.SolveQuantileScaling(fixed.x0(), false, std::nullopt);
  const double at_start = fixed.Chi2At(fixed.x0());
  EXPECT_NEAR(s1.initial_chi2, at_start, 1e-12 * at_start);
}

// The individual layout's scaling bounds are xpcsjax's [0.1, 0.8] / [0.5, 1.5] unless other
// contrast bounds are configured; a start outside them is clipped in.
TEST(NlsqTwoComponentLayers, IndividualScalingBoundsAreXpcsjaxsUnlessOthersAreConfigured) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "two_component_individual_bounds");
  const std::string path = WriteData(dir);
  const auto quiet = testing::QuietRun();
  const auto expect_bounds = [](const XpcsFitSession& s, double c_lo, double c_hi) {
    ASSERT_EQ(s.layout().layout(), model::ScalingLayout::kIndividual);
    for (int i = 0; i < 4; ++i) {  // contrast_0, contrast_1, offset_0, offset_1
      const auto u = static_cast<std::size_t>(i);
      EXPECT_EQ(s.lower()[u], i < 2 ? c_lo : 0.5) << i;
      EXPECT_EQ(s.upper()[u], i < 2 ? c_hi : 1.5) << i;
      EXPECT_GE(s.x0()[u], s.lower()[u]) << i;
      EXPECT_LE(s.x0()[u], s.upper()[u]) << i;
    }
  };
  const XpcsFitSession plain(world, Config(path, Start(), kNoL2), quiet, Logger::Silent());
  expect_bounds(plain, 0.1, 0.8);
  // A configured start of 0.95 (inside the configured [0, 1]) starts at xpcsjax's 0.8.
  const XpcsFitSession high(world,
                            Config(path, Start(), kNoL2 + "scaling: {initial_contrast: 0.95}\n"),
                            quiet, Logger::Silent());
  expect_bounds(high, 0.1, 0.8);
  EXPECT_EQ(high.x0()[0], 0.8);
  EXPECT_EQ(high.x0()[1], 0.8);
  const XpcsFitSession low(world,
                           Config(path, Start(), kNoL2 + "scaling: {initial_contrast: 0.02}\n"),
                           quiet, Logger::Silent());
  EXPECT_EQ(low.x0()[0], 0.1);
  // Configured contrast bounds other than [0, 1] win.
  const XpcsFitSession own(
      world,
      Config(path, Start(),
             kNoL2 + "parameter_space:\n  bounds:\n    - {name: contrast, min: 0.05, max: 0.95}\n"),
      quiet, Logger::Silent());
  expect_bounds(own, 0.05, 0.95);
  // The full fit stays inside them.
  const NlsqRunResult r =
      global::RunNlsqPipeline(world, Config(path, Start(), kNoL2), quiet, Logger::Silent());
  for (double c : r.report.contrast) {
    EXPECT_GE(c, 0.1);
    EXPECT_LE(c, 0.8);
  }
}

}  // namespace
}  // namespace homodyne::nlsq
