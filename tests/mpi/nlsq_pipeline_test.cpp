// The default NLSQ pipeline (global/fit_pipeline.h) at whatever rank count the test runs
// with (ctest: 1 and 2): the phi0 check leaves a converged local minimum in phi0, a stalled
// local fit is followed by the global search, and the answer has the same bits on one rank
// alone and with checkpoints on.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <string>
#include <vector>

#include "checkpoint/interrupt.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "core/log.h"
#include "global/anti_degeneracy.h"
#include "global/fit_pipeline.h"
#include "global/pipeline_stages.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq_fit_fixture.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

using homodyne::testing::MpiTempDir;
using homodyne::testing::SameBits;
using homodyne::testing::TestEnvironment;

// Dataset 3 of the recovery study (docs/robustness.md): six angles 0.4°…150.4°, strong
// shear. sinc² of the shear term oscillates in phi0, and from the default start the local
// fit converges at phi0 ≈ −0.89 (a genuine local minimum) while the minimum is at 1.70.
const std::string kTruth = "1317.16, -0.93585, 17.5565, 0.00816524, -0.228788, 8.20736e-5, 1.70451";
const std::string kDefaultStart = "10000, -1.5, 0, 0.001, 0, 0, 0";

config::Config LaminarConfig(const std::string& values, const std::string& file,
                             const std::string& nlsq_extra) {
  return testing::LaminarFileConfig(values, file, nlsq_extra);
}

std::string WritePhi0Data(const MpiTempDir& dir) {
  const Comm& world = TestEnvironment().world();
  const std::string path = dir.file("phi0.h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 98;
    o.phi_deg = {0.4, 30.4, 60.4, 90.4, 120.4, 150.4};
    o.noise = 0.00161933;
    o.seed = 1042826663;
    o.contrast = 0.245045;
    o.offset = 1.01878;
    synth::WriteSyntheticDataset(LaminarConfig(kTruth, path, ""), o);
  });
  world.Barrier();
  return path;
}

NlsqRunOptions Quiet(FitStrategy strategy = FitStrategy::kInCore, std::int64_t window = 0) {
  return testing::QuietRun(strategy, window);
}

checkpoint::CheckpointSettings Checkpoints(const std::filesystem::path& dir, int frequency) {
  checkpoint::CheckpointSettings ck;
  ck.enabled = true;
  ck.frequency = frequency;
  ck.dir = dir;
  ck.stop_on_signal = false;
  ck.config_description = "nlsq-pipeline-test";
  return ck;
}

double Phi0Of(const NlsqRunResult& r) {
  for (std::size_t i = 0; i < r.report.physical_names.size(); ++i) {
    if (r.report.physical_names[i] == "phi0") return r.report.physical_values[i];
  }
  return std::nan("");
}

TEST(NlsqPipeline, Phi0RestartValuesAreMidpointsOfEqualParts) {
  EXPECT_EQ(global::Phi0RestartValues(-10.0, 10.0, 4), (std::vector<double>{-7.5, -2.5, 2.5, 7.5}));
  EXPECT_EQ(global::Phi0RestartValues(0.0, 3.0, 1), (std::vector<double>{1.5}));
  EXPECT_TRUE(global::Phi0RestartValues(0.0, 3.0, 0).empty());
}

TEST(NlsqPipeline, TransportScanRatesSpanDecayTimesFromTenWindowsToOneFrame) {
  const double q = 0.0237, dt = 0.1;
  const std::int64_t n = 150;
  const std::vector<double> d = global::TransportScanRates(q, dt, n);
  ASSERT_GE(d.size(), 2u);
  const auto decay_time = [&](double rate) { return 1.0 / (q * q * rate); };
  EXPECT_NEAR(decay_time(d.front()), 10.0 * dt * static_cast<double>(n), 1e-9);
  EXPECT_GE(decay_time(d.back()), dt * (1.0 - 1e-12));  // never faster than a frame
  EXPECT_LT(decay_time(d.back()), dt * std::numbers::sqrt2);
  for (std::size_t k = 1; k < d.size(); ++k) {
    EXPECT_NEAR(d[k] / d[k - 1], std::numbers::sqrt2, 1e-12);
  }
  EXPECT_TRUE(global::TransportScanRates(0.0, dt, n).empty());
  EXPECT_TRUE(global::TransportScanRates(q, 0.0, n).empty());
  EXPECT_TRUE(global::TransportScanRates(q, dt, 1).empty());
}

TEST(NlsqPipeline, Phi0CheckLeavesALocalMinimumInPhi0) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_phi0");
  const std::string path = WritePhi0Data(dir);

  // The local fit alone converges in the wrong lobe: the optimality test holds there.
  const NlsqRunResult local =
      RunNlsqFit(world, LaminarConfig(kDefaultStart, path, ""), Quiet(), Logger::Silent());
  ASSERT_EQ(local.report.convergence_status, "converged");
  EXPECT_LT(Phi0Of(local), 0.0);

  // The pipeline restarts from phi0 = −7.5, −2.5, 2.5, 7.5 and keeps the lowest χ².
  const NlsqRunResult r = global::RunNlsqPipeline(world, LaminarConfig(kDefaultStart, path, ""),
                                                  Quiet(), Logger::Silent());
  EXPECT_EQ(r.report.convergence_status, "converged");
  EXPECT_LT(r.report.chi_squared, 0.6 * local.report.chi_squared);
  EXPECT_NEAR(Phi0Of(r), 1.70451, 0.05);
  ASSERT_EQ(r.report.recovery_actions.size(), 1u);
  EXPECT_NE(r.report.recovery_actions[0].find("a lower minimum"), std::string::npos)
      << r.report.recovery_actions[0];
  EXPECT_FALSE(r.report.global_search.has_value());  // converged: no global search

  // The same answer from the truth: the minimum the check found is the one there.
  const NlsqRunResult from_truth =
      RunNlsqFit(world, LaminarConfig(kTruth, path, ""), Quiet(), Logger::Silent());
  EXPECT_NEAR(r.report.chi_squared, from_truth.report.chi_squared,
              1e-8 * from_truth.report.chi_squared);

  // Switched off, the pipeline is the local fit, bit for bit.
  const NlsqRunResult off = global::RunNlsqPipeline(
      world, LaminarConfig(kDefaultStart, path, "    recovery:\n      phi0_restarts: 0\n"), Quiet(),
      Logger::Silent());
  EXPECT_TRUE(SameBits(off.expanded, local.expanded));
  EXPECT_TRUE(off.report.recovery_actions.empty());

  // The same bits on one rank alone, and with checkpoints every 3 iterations.
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, LaminarConfig(kDefaultStart, path, ""),
                                                      Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
  NlsqRunOptions ck = Quiet();
  ck.checkpoints.emplace();
  ck.checkpoints->enabled = true;
  ck.checkpoints->frequency = 3;
  ck.checkpoints->dir = dir.file("ck");
  ck.checkpoints->stop_on_signal = false;
  const NlsqRunResult checkpointed =
      global::RunNlsqPipeline(world, LaminarConfig(kDefaultStart, path, ""), ck, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, checkpointed.expanded));
  EXPECT_TRUE(std::filesystem::exists(dir.file("ck/phi0_restart_3")));
}

// The screen's rule on row values (global::SelectByRows): a row fit at or above
// R·(1 + 1e-3), or converged at the answer's own row minimum or at a kept one's value (to
// Lower's 1e-6), or unusable, gets no full fit; the rest are ordered by value, and those
// more than 1e-3 above the lowest kept are optional.
TEST(NlsqPipeline, RowScreenKeepsOnlyRowFitsThatMayEndLower) {
  const auto fit = [](double value, lsq::Termination t = lsq::Termination::kConverged) {
    SolverSummary s;
    s.termination = t;
    s.final_chi2 = value;
    s.x = {value};
    return s;
  };
  using lsq::Termination;
  const std::vector<SolverSummary> rows = {
      fit(100.00001),                              // 0: the answer's minimum again
      fit(99.5),                                   // 1: lower, but 5e-3 above the lowest
      fit(100.2),                                  // 2: above R·(1 + 1e-3)
      fit(99.0),                                   // 3: the lowest
      fit(99.0000001),                             // 4: 3's minimum again
      fit(99.05),                                  // 5: within 1e-3 of the lowest
      fit(100.05, Termination::kStalled),          // 6: not a minimum, below R·(1 + 1e-3)
      fit(std::nan(""), Termination::kConverged),  // 7: not finite
      fit(50.0, Termination::kNumericalFailure),   // 8: not usable
  };
  const std::vector<global::RowScreenStart> kept = global::SelectByRows(rows, 100.0, true);
  std::vector<int> order;
  std::vector<bool> required;
  for (const auto& k : kept) {
    order.push_back(k.index);
    required.push_back(k.required);
  }
  EXPECT_EQ(order, (std::vector<int>{3, 5, 1, 6}));
  EXPECT_EQ(required, (std::vector<bool>{true, true, false, false}));
  // A stalled answer's value is no minimum: a row fit at it is another start's, kept.
  const std::vector<global::RowScreenStart> after_stall = global::SelectByRows(rows, 100.0, false);
  EXPECT_TRUE(std::any_of(after_stall.begin(), after_stall.end(),
                          [](const global::RowScreenStart& k) { return k.index == 0; }));
}

// Above recovery.screen_max_points the phi0 check fits its four starts on every k-th row
// first (here k = 6 of 98 rows) and runs full fits only from the row fits that may end below
// the answer: it finds the minimum the full check finds, with fewer full fits, and the same
// bits on one rank alone and with checkpoints.
TEST(NlsqPipeline, Phi0CheckScreenedOnRowsFindsTheSameMinimum) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_phi0_rows");
  const std::string path = WritePhi0Data(dir);
  const std::string rows = "    recovery:\n      screen_max_points: 3000\n";
  const NlsqRunResult full = global::RunNlsqPipeline(world, LaminarConfig(kDefaultStart, path, ""),
                                                     Quiet(), Logger::Silent());
  const NlsqRunResult r = global::RunNlsqPipeline(world, LaminarConfig(kDefaultStart, path, rows),
                                                  Quiet(), Logger::Silent());
  EXPECT_EQ(r.report.convergence_status, "converged");
  EXPECT_NEAR(r.report.chi_squared, full.report.chi_squared, 1e-8 * full.report.chi_squared);
  EXPECT_NEAR(Phi0Of(r), 1.70451, 0.05);
  ASSERT_EQ(r.report.recovery_actions.size(), 1u);
  const std::string& action = r.report.recovery_actions[0];
  EXPECT_NE(action.find("a lower minimum"), std::string::npos) << action;
  EXPECT_NE(action.find("screened on every 6th row"), std::string::npos) << action;
  // Not every start: the row fits that return to the answer's lobe or end above it are dropped.
  EXPECT_EQ(action.find("4 of 4 start(s) kept"), std::string::npos) << action;
  EXPECT_EQ(action.find("0 of 4 start(s) kept"), std::string::npos) << action;

  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(
      self, LaminarConfig(kDefaultStart, path, rows), Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
  NlsqRunOptions ck = Quiet();
  ck.checkpoints = Checkpoints(dir.path() / "ck", 3);
  const NlsqRunResult checkpointed = global::RunNlsqPipeline(
      world, LaminarConfig(kDefaultStart, path, rows), ck, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, checkpointed.expanded));
}

// The whole pipeline (the local fit and the four phi0 restarts, each checkpointed) on
// laminar data: checkpoints every 1, 3 or 10 iterations leave the answer's bits alone, in
// core and streamed; a fit stopped by a signal at iteration 5 and resumed on one rank
// alone or on all of them gives the uninterrupted bits.
TEST(NlsqPipeline, CheckpointsNeverChangeTheAnswerInCoreStreamedAndOnResume) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_ck", /*create=*/true);
  const std::string path = WritePhi0Data(dir);
  const config::Config cfg = LaminarConfig(kDefaultStart, path, "");
  const std::int64_t window = 2000;  // points per streaming window: many windows per pass
  const NlsqRunResult plain = global::RunNlsqPipeline(world, cfg, Quiet(), Logger::Silent());
  const NlsqRunResult streamed =
      global::RunNlsqPipeline(world, cfg, Quiet(FitStrategy::kStreaming, window), Logger::Silent());
  ASSERT_EQ(plain.report.recovery_actions.size(), 1u);  // the phi0 check ran
  for (int frequency : {1, 3, 10}) {
    for (const bool stream : {false, true}) {
      NlsqRunOptions o = stream ? Quiet(FitStrategy::kStreaming, window) : Quiet();
      o.checkpoints =
          Checkpoints(dir.path() / fmt::format("f{}{}", frequency, stream ? "s" : ""), frequency);
      const NlsqRunResult ck = global::RunNlsqPipeline(world, cfg, o, Logger::Silent());
      EXPECT_TRUE(SameBits(ck.expanded, stream ? streamed.expanded : plain.expanded))
          << "frequency " << frequency << (stream ? ", streamed" : ", in core");
      EXPECT_EQ(ck.report.iterations, plain.report.iterations);
    }
  }

  // Stopped at iteration 5 of the first solve (SIGUSR1 on rank 0), with a checkpoint.
  NlsqRunOptions o = Quiet();
  o.checkpoints = Checkpoints(dir.path() / "resume", 3);
  o.checkpoints->stop_on_signal = true;
  {
    const checkpoint::InterruptHandlers handlers;
    setenv(checkpoint::kSignalVariable, "nlsq_iter:5", 1);
    ErrorKind kind = ErrorKind::kInternal;
    try {
      global::RunNlsqPipeline(world, cfg, o, Logger::Silent());
    } catch (const Error& e) {
      kind = e.kind();
    }
    unsetenv(checkpoint::kSignalVariable);
    checkpoint::ClearStopRequest();
    EXPECT_EQ(kind, ErrorKind::kCheckpointed);
  }
  // Resumed on one rank alone (read only), then on every rank.
  o.checkpoints->resume = true;
  NlsqRunOptions read_only = o;
  read_only.checkpoints->enabled = false;
  read_only.checkpoints->stop_on_signal = false;
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, cfg, read_only, Logger::Silent());
  EXPECT_TRUE(SameBits(alone.expanded, plain.expanded));
  world.Barrier();
  const NlsqRunResult resumed = global::RunNlsqPipeline(world, cfg, o, Logger::Silent());
  EXPECT_TRUE(SameBits(resumed.expanded, plain.expanded));
}

TEST(NlsqPipeline, ShearWeightsUseDegreesAndHaveMeanOne) {
  const std::vector<double> phi = {0.0, 60.0, 90.0};
  const std::vector<double> raw = global::ShearWeights(phi, 0.0, 0.3, 1.0, false);
  ASSERT_EQ(raw.size(), 3u);
  EXPECT_DOUBLE_EQ(raw[0], 1.0);
  EXPECT_NEAR(raw[1], 0.3 + 0.7 * 0.5, 1e-15);  // cos 60° (not cos 60 rad)
  EXPECT_NEAR(raw[2], 0.3, 1e-9);               // perpendicular to the flow: the floor
  const std::vector<double> w = global::ShearWeights(phi, 0.0, 0.3, 1.0, true);
  EXPECT_NEAR((w[0] + w[1] + w[2]) / 3.0, 1.0, 1e-15);
  EXPECT_NEAR(w[0] / w[2], 1.0 / 0.3, 1e-9);
}

// Per-angle weights of the objective: with all parameters held, a partial solve reports
// the weighted χ² at the start; one-hot weights give each angle's share, which add up to
// the unweighted χ², in core and streamed, and the problem is unweighted afterwards.
TEST(NlsqPipeline, AngleWeightsWeighEachAnglesChi2) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_weights");
  const std::string path = WritePhi0Data(dir);
  const config::Config cfg = LaminarConfig(kTruth, path, "");
  for (const bool stream : {false, true}) {
    XpcsFitSession session(world, cfg, stream ? Quiet(FitStrategy::kStreaming, 2000) : Quiet(),
                           Logger::Silent());
    const std::vector<double> x = session.x0();
    const std::vector<bool> held(x.size(), false);
    const double total = session.Chi2At(x);
    const std::size_t n_phi = session.phi_deg().size();
    double sum = 0.0;
    for (std::size_t k = 0; k < n_phi; ++k) {
      std::vector<double> one_hot(n_phi, 0.0);
      one_hot[k] = 1.0;
      const SolverSummary part = session.SolvePart(x, held, one_hot, 1, 1e-8);
      EXPECT_GT(part.final_chi2, 0.0);
      EXPECT_LT(part.final_chi2, total);
      sum += part.final_chi2;
    }
    EXPECT_NEAR(sum, total, 1e-12 * total) << (stream ? "streamed" : "in core");
    const SolverSummary doubled =
        session.SolvePart(x, held, std::vector<double>(n_phi, 2.0), 1, 1e-8);
    EXPECT_EQ(doubled.final_chi2, 2.0 * total);  // a power of two: exact
    EXPECT_EQ(session.Chi2At(x), total);         // unweighted again
  }
}

// The hierarchical stage (with shear weights) runs where the layout has per-angle
// parameters, is reported, and never makes the answer worse than the plain fit's.
TEST(NlsqPipeline, HierarchicalStageRunsOnlyWithPerAngleParameters) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_hierarchical");
  const std::string path = WritePhi0Data(dir);
  // The linear loss: the stage values compared below are χ² only under it (under a robust
  // loss they are the loss objective, which the stages compare).
  const std::string individual =
      "    loss: linear\n    anti_degeneracy:\n      per_angle_mode: individual\n"
      "      hierarchical:\n        trigger: always\n    recovery:\n      phi0_restarts: 0\n";
  const config::Config cfg = LaminarConfig(kDefaultStart, path, individual);
  const NlsqRunResult plain = RunNlsqFit(world, cfg, Quiet(), Logger::Silent());
  const NlsqRunResult r = global::RunNlsqPipeline(world, cfg, Quiet(), Logger::Silent());
  const AntiDegeneracyReport& a = r.report.anti_degeneracy;
  EXPECT_TRUE(a.hierarchical_active);
  EXPECT_TRUE(a.inactive_reason.empty());
  EXPECT_GE(a.outer_iterations, 1);
  EXPECT_EQ(a.chi2.size(), static_cast<std::size_t>(a.outer_iterations));
  ASSERT_EQ(a.shear_weights.size(), 6u);
  EXPECT_TRUE(a.selected == "plain" || a.selected == "hierarchical") << a.selected;
  EXPECT_EQ(a.plain_chi_squared, plain.report.chi_squared);
  EXPECT_LE(r.report.chi_squared, plain.report.chi_squared);
  if (a.selected == "plain") {
    EXPECT_TRUE(SameBits(r.expanded, plain.expanded));
  }
  // The same bits on one rank alone.
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, cfg, Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));

  // phi0 held: the stage still weights the angles, by the held phi0, which stays exact.
  config::Config held = LaminarConfig("10000, -1.5, 0, 0.001, 0, 0, 1.70451", path, individual);
  held.parameters.at(6).vary = false;
  const NlsqRunResult h = global::RunNlsqPipeline(world, held, Quiet(), Logger::Silent());
  EXPECT_TRUE(h.report.anti_degeneracy.hierarchical_active);
  EXPECT_EQ(h.report.anti_degeneracy.shear_weights.size(), 6u);
  EXPECT_EQ(h.report.physical_values[6], 1.70451);
  EXPECT_EQ(h.report.physical_uncertainties[6], 0.0);

  // Averaged layout (the default for 6 angles): nothing to alternate with.
  const NlsqRunResult averaged = global::RunNlsqPipeline(
      world, LaminarConfig(kDefaultStart, path, "    recovery:\n      phi0_restarts: 0\n"), Quiet(),
      Logger::Silent());
  EXPECT_FALSE(averaged.report.anti_degeneracy.hierarchical_active);
  EXPECT_NE(averaged.report.anti_degeneracy.inactive_reason.find("averaged"), std::string::npos)
      << averaged.report.anti_degeneracy.inactive_reason;
  // Switched off.
  const NlsqRunResult off = global::RunNlsqPipeline(
      world,
      LaminarConfig(kDefaultStart, path,
                    "    loss: linear\n    anti_degeneracy:\n      per_angle_mode: individual\n"
                    "      hierarchical:\n        enable: false\n    recovery:\n"
                    "      phi0_restarts: 0\n"),
      Quiet(), Logger::Silent());
  EXPECT_FALSE(off.report.anti_degeneracy.hierarchical_active);
  EXPECT_TRUE(SameBits(off.expanded, plain.expanded));
}

// By default (trigger: suspect) the stage runs only after a plain fit that stalled or ended
// with a physical parameter at a bound: from the truth the plain fit converges inside the
// box, the stage is skipped and says why, and the answer is the plain fit's.
TEST(NlsqPipeline, HierarchicalStageRunsAfterASuspectPlainFitOnly) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_hierarchical_trigger");
  const std::string path = WritePhi0Data(dir);
  const std::string individual =
      "    anti_degeneracy:\n      per_angle_mode: individual\n    recovery:\n"
      "      phi0_restarts: 0\n";
  const config::Config cfg = LaminarConfig(kTruth, path, individual);
  const NlsqRunResult plain = RunNlsqFit(world, cfg, Quiet(), Logger::Silent());
  ASSERT_EQ(plain.summary.termination, lsq::Termination::kConverged);
  const NlsqRunResult r = global::RunNlsqPipeline(world, cfg, Quiet(), Logger::Silent());
  const AntiDegeneracyReport& a = r.report.anti_degeneracy;
  EXPECT_FALSE(a.hierarchical_active);
  EXPECT_NE(a.inactive_reason.find("trigger: suspect"), std::string::npos) << a.inactive_reason;
  EXPECT_TRUE(SameBits(r.expanded, plain.expanded));
  // From the stuck start below the plain fit does not converge inside the box: the stage runs.
  const NlsqRunResult stuck = global::RunNlsqPipeline(
      world,
      LaminarConfig("100, 0.5, 0, 0.1, 0.2, 0.0, 8", path, individual + "      on_stall: none\n"),
      Quiet(), Logger::Silent());
  EXPECT_TRUE(stuck.report.anti_degeneracy.hierarchical_active)
      << stuck.report.anti_degeneracy.inactive_reason;
  // A trigger that is neither is bad input naming the key.
  EXPECT_THROW(
      {
        try {
          global::RunNlsqPipeline(world,
                                  LaminarConfig(kTruth, path,
                                                "    anti_degeneracy:\n      hierarchical:\n"
                                                "        trigger: sometimes\n"),
                                  Quiet(), Logger::Silent());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("trigger"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

// From here the local fit stalls far from the minimum (checked below).
const std::string kStuckStart = "100, 0.5, 0, 0.1, 0.2, 0.0, 8";

TEST(NlsqPipeline, StalledLocalFitIsRecoveredFromTheBox) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_stall");
  const std::string path = WritePhi0Data(dir);
  // The linear loss: under homodyne's default soft_l1 the local fit from here gets near the
  // minimum before it stalls, and this test needs one that stalls far from it.
  const std::string small =
      "    loss: linear\n    cmaes:\n      popsize: 12\n      max_restarts: 2\n";

  const NlsqRunResult stuck =
      RunNlsqFit(world, LaminarConfig(kStuckStart, path, small), Quiet(), Logger::Silent());
  ASSERT_NE(stuck.report.convergence_status, "converged");

  // Switched off: the stalled local fit is the answer, labelled as such.
  const NlsqRunResult off =
      global::RunNlsqPipeline(world,
                              LaminarConfig(kStuckStart, path,
                                            small + "    recovery:\n      on_stall: none\n"
                                                    "      phi0_restarts: 0\n"),
                              Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(off.expanded, stuck.expanded));
  EXPECT_EQ(off.report.convergence_status, stuck.report.convergence_status);
  EXPECT_FALSE(off.report.global_search.has_value());

  // Default: local fits from the lowest-χ² half of 10 Latin-hypercube starts.
  const NlsqRunResult r = global::RunNlsqPipeline(world, LaminarConfig(kStuckStart, path, small),
                                                  Quiet(), Logger::Silent());
  EXPECT_FALSE(r.report.global_search.has_value());
  EXPECT_LT(r.report.chi_squared, 0.1 * stuck.report.chi_squared);
  ASSERT_FALSE(r.report.recovery_actions.empty());
  EXPECT_NE(r.report.recovery_actions[0].find("restarts (the local fit ended "), std::string::npos)
      << r.report.recovery_actions[0];
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone = global::RunNlsqPipeline(self, LaminarConfig(kStuckStart, path, small),
                                                      Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));

  // Screened on rows (every 6th): the row fits of all 10 starts, full fits from the kept.
  const NlsqRunResult screened = global::RunNlsqPipeline(
      world,
      LaminarConfig(kStuckStart, path, small + "    recovery:\n      screen_max_points: 3000\n"),
      Quiet(), Logger::Silent());
  EXPECT_LT(screened.report.chi_squared, 0.1 * stuck.report.chi_squared);
  EXPECT_NEAR(screened.report.chi_squared, r.report.chi_squared, 1e-6 * r.report.chi_squared);
  ASSERT_FALSE(screened.report.recovery_actions.empty());
  EXPECT_NE(screened.report.recovery_actions[0].find("screened on every 6th row"),
            std::string::npos)
      << screened.report.recovery_actions[0];

  // on_stall: cmaes: the CMA-ES stage searches the box from the configured start.
  const NlsqRunResult g = global::RunNlsqPipeline(
      world, LaminarConfig(kStuckStart, path, small + "    recovery:\n      on_stall: cmaes\n"),
      Quiet(), Logger::Silent());
  ASSERT_TRUE(g.report.global_search.has_value());
  EXPECT_EQ(g.report.global_search->warmstart_termination, stuck.report.convergence_status);
  EXPECT_FALSE(g.report.global_search->cmaes_skipped);
  EXPECT_GT(g.report.global_search->evaluations, 0);
  EXPECT_LT(g.report.chi_squared, 0.1 * stuck.report.chi_squared);
  ASSERT_FALSE(g.report.recovery_actions.empty());
  EXPECT_NE(g.report.recovery_actions[0].find("global search after a"), std::string::npos)
      << g.report.recovery_actions[0];
}

// A converged answer with a physical parameter at a bound is checked by the same restarts
// (the remaining converged-but-wrong answers of the recovery studies sat at a bound); the
// action names the parameter.
TEST(NlsqPipeline, ConvergedAtABoundIsCheckedByRestarts) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "pipeline_bound");
  const std::string path = WritePhi0Data(dir);
  // gamma_dot_t_offset is 8.2e-5 in the data: capped at 0, the answer sits on the cap.
  const std::string capped =
      "    recovery:\n      phi0_restarts: 0\nparameter_space:\n  bounds:\n"
      "    - {name: gamma_dot_t_offset, min: -0.1, max: 0.0}\n";
  const config::Config cfg = LaminarConfig(kTruth, path, capped);
  const NlsqRunResult local = RunNlsqFit(world, cfg, Quiet(), Logger::Silent());
  ASSERT_EQ(local.report.convergence_status, "converged");
  const NlsqRunResult r = global::RunNlsqPipeline(world, cfg, Quiet(), Logger::Silent());
  ASSERT_FALSE(r.report.recovery_actions.empty());
  EXPECT_EQ(r.report.recovery_actions[0].rfind(
                "restarts (the local fit converged with gamma_dot_t_offset at its upper bound", 0),
            0u)
      << r.report.recovery_actions[0];
  EXPECT_LE(r.report.chi_squared, local.report.chi_squared);
}

}  // namespace
}  // namespace homodyne::nlsq
