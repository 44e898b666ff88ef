// The data's noise level (nlsq/noise_level.h) on synthetic data of known noise, at whatever
// rank count the test runs with (ctest: 1 and 2): close to the truth, from every third
// difference of the fit grid exactly once, and the same bits on one rank, on all of them and
// streamed in small windows; the reduced χ² in its units is within [0.8, 1.25] at the truth in
// every mode and far above 1 (a misfit) at a wrong point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "config/config_reader.h"
#include "core/log.h"
#include "io/distributed_loader.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/block_stream.h"
#include "nlsq/noise_level.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq_fit_fixture.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"
#include "synth_fixture.h"

namespace homodyne::nlsq {
namespace {

using homodyne::testing::MpiTempDir;
using homodyne::testing::TestEnvironment;

// Rank 0 writes the dataset; every rank gets its load options (dt 0.1).
io::LoadOptions Write(const config::Config& cfg, synth::SynthOptions o) {
  const Comm& world = TestEnvironment().world();
  o.force = true;
  RunCollectively(world, [&] {
    if (world.rank() == 0) synth::WriteSyntheticDataset(cfg, o);
  });
  world.Barrier();
  io::LoadOptions lo;
  lo.path = o.output;
  lo.dt = 0.1;
  return lo;
}

synth::SynthOptions Options(const std::string& path, int frames, std::vector<double> phi,
                            double noise, std::uint64_t seed) {
  synth::SynthOptions o;
  o.output = path;
  o.frames = frames;
  o.phi_deg = std::move(phi);
  o.noise = noise;
  o.seed = seed;
  o.contrast = 0.3;
  o.offset = 1.0;
  return o;
}

// The noise level in core on `comm` (its own load of the file).
NoiseLevel InCore(const Comm& comm, const io::LoadOptions& lo) {
  const io::LocalData local = io::LoadDistributed(comm, lo, Logger::Silent());
  return EstimateNoise(comm, local);
}

void ExpectSameBits(const NoiseLevel& a, const NoiseLevel& b, const std::string& what) {
  ASSERT_EQ(a.angles.size(), b.angles.size()) << what;
  for (std::size_t k = 0; k < a.angles.size(); ++k) {
    EXPECT_EQ(std::memcmp(&a.angles[k].sigma, &b.angles[k].sigma, sizeof(double)), 0)
        << what << ", angle " << k << ": " << a.angles[k].sigma << " vs " << b.angles[k].sigma;
    EXPECT_EQ(a.angles[k].differences, b.angles[k].differences) << what << ", angle " << k;
  }
}

TEST(NlsqNoiseLevel, KnownNoiseOnOneRankAllRanksAndStreamedWithTheSameBits) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "noise_level");
  const config::Config cfg = testing::SynthConfig("static", "3000, -0.6, 20");
  const io::LoadOptions lo =
      Write(cfg, Options(dir.file("static.h5"), 100, {0, 60, 120}, 0.003, 11));
  const NoiseLevel all = InCore(world, lo);
  ASSERT_EQ(all.angles.size(), 3u);
  ASSERT_TRUE(all.all_measurable());
  // Fit grid rows 1..98 (last = 99): row i has last − i − 3 third differences, i ≤ 95; each
  // counted once whatever the rank boundaries.
  const std::int64_t last = 99;
  for (const AngleNoise& a : all.angles) {
    EXPECT_EQ(a.differences, (last - 4) * (last - 3) / 2);
    EXPECT_NEAR(a.sigma / 0.003, 1.0, 0.06) << a.sigma;
  }
  const Comm self = world.Split(world.rank(), 0);
  ExpectSameBits(InCore(self, lo), all, "one rank against all");
  // Streamed in windows of a few rows: the rows of one angle pass in many windows.
  const io::LocalData layout = io::LoadDistributedLayout(world, lo, Logger::Silent());
  BlockStream stream(world, layout, 300, 100);
  ASSERT_GT(stream.num_windows(), 3);
  ExpectSameBits(EstimateNoiseStreaming(world, layout, stream), all, "streamed against in core");
}

TEST(NlsqNoiseLevel, StrongAgeingDoesNotInflateTheLevel) {
  // D(t) = 2·10⁴·t^−1.2 falls by 100× over the 60 frames: neighbouring points along the
  // lag-preserving direction differ by far more than the noise near t = 0 (first differences
  // overstate σ 3–7× here), third differences cancel the trend.
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "noise_level_ageing");
  const config::Config cfg =
      testing::SynthConfig("laminar_flow", "20000, -1.2, 200, 0.0005, -0.3, 0, 0");
  const io::LoadOptions lo =
      Write(cfg, Options(dir.file("ageing.h5"), 60, {0, 30, 60, 90}, 5e-4, 4));
  const NoiseLevel n = InCore(world, lo);
  ASSERT_TRUE(n.all_measurable());
  for (const AngleNoise& a : n.angles) EXPECT_NEAR(a.sigma / 5e-4, 1.0, 0.12) << a.sigma;
}

TEST(NlsqNoiseLevel, NoiseFreeStationaryDataAreNotMeasurable) {
  // Stationary (alpha = 0): the exact surface is constant along the lag-preserving direction,
  // its differences are round-off. (With ageing its third differences are the model's own,
  // e.g. 3·10⁻⁶ at alpha = −0.6: a level, though not of noise.)
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "noise_level_exact");
  const config::Config cfg = testing::SynthConfig("static", "3000, 0, 20");
  const NoiseLevel n = InCore(world, Write(cfg, Options(dir.file("exact.h5"), 40, {0}, 0.0, 1)));
  ASSERT_EQ(n.angles.size(), 1u);
  EXPECT_FALSE(n.angles[0].measurable);
  EXPECT_EQ(n.angles[0].sigma, 0.0);
  EXPECT_NE(n.angles[0].reason.find("round-off"), std::string::npos) << n.angles[0].reason;
}

// The report of a session at the truth (scaling per angle at the synthetic values, physics
// from the config) and at `wrong` (a physical parameter scaled).
struct AtTruth {
  FitReport truth, wrong;
};

AtTruth Evaluate(const config::Config& cfg, const std::string& parameter, double factor) {
  const Comm& world = TestEnvironment().world();
  XpcsFitSession session(world, cfg, testing::QuietRun(), Logger::Silent());
  std::vector<double> x = session.x0();
  for (std::size_t k = 0; k < session.phi_deg().size(); ++k) {
    const int c = session.ParameterIndex(fmt::format("contrast_{}", k));
    const int o = session.ParameterIndex(fmt::format("offset_{}", k));
    EXPECT_GE(c, 0);
    EXPECT_GE(o, 0);
    if (c < 0 || o < 0) return {};
    x[static_cast<std::size_t>(c)] = 0.3;
    x[static_cast<std::size_t>(o)] = 1.0;
  }
  AtTruth out;
  out.truth = session.Finish(session.SummaryAt(x, lsq::Termination::kConverged, "truth")).report;
  const int p = session.ParameterIndex(parameter);
  EXPECT_GE(p, 0);
  if (p < 0) return out;
  x[static_cast<std::size_t>(p)] *= factor;
  out.wrong = session.Finish(session.SummaryAt(x, lsq::Termination::kConverged, "wrong")).report;
  return out;
}

void ExpectHonestVerdicts(const AtTruth& r, const std::string& mode) {
  EXPECT_GE(r.truth.noise_reduced_chi_squared, 0.8) << mode;
  EXPECT_LE(r.truth.noise_reduced_chi_squared, 1.25) << mode;
  EXPECT_TRUE(r.truth.misfit_reasons.empty()) << mode;
  EXPECT_GT(r.wrong.noise_reduced_chi_squared, 5.0) << mode;
  EXPECT_EQ(r.wrong.quality_flag, "poor") << mode;
  EXPECT_FALSE(r.wrong.misfit_reasons.empty()) << mode;
  if (TestEnvironment().world().rank() != 0) return;
  std::printf("[%s] reduced chi2 in noise units: %.4f at the truth, %.4f at the wrong point\n",
              mode.c_str(), r.truth.noise_reduced_chi_squared, r.wrong.noise_reduced_chi_squared);
}

std::string Individual() { return "    anti_degeneracy: {per_angle_mode: individual}\n"; }

TEST(NlsqNoiseLevel, ReducedChi2IsNearOneAtTheTruthAndFarAboveAtAWrongPoint) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "noise_level_truth");
  // static
  {
    const std::string values = "3000, -0.6, 20";
    const std::string path = dir.file("static.h5");
    Write(testing::SynthConfig("static", values), Options(path, 60, {0, 60, 120}, 0.002, 21));
    const std::string yaml =
        "analysis_mode: static\nanalyzer_parameters:\n  dt: 0.1\n  scattering:\n"
        "    wavevector_q: 0.0054\nexperimental_data:\n  data_folder_path: " +
        dir.root().string() +
        "\n  data_file_name: static.h5\ninitial_parameters:\n  parameter_names: [D0, alpha, "
        "D_offset]\n  values: [" +
        values + "]\noptimization:\n  nlsq:\n" + Individual();
    const config::Config cfg = config::ReadConfigString(yaml, "static-truth", {});
    ExpectHonestVerdicts(Evaluate(cfg, "D0", 0.5), "static");
  }
  // laminar_flow
  {
    const std::string values = "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4";
    const std::string path = dir.file("laminar.h5");
    Write(testing::SynthConfig("laminar_flow", values),
          Options(path, 60, {-20, 40, 100, 160}, 0.002, 22));
    const config::Config cfg = testing::LaminarFileConfig(values, path, Individual());
    ExpectHonestVerdicts(Evaluate(cfg, "gamma_dot_t0", 2.0), "laminar_flow");
  }
  // two_component
  {
    const std::string names =
        "[D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, "
        "v_beta, v_offset, f0, f1, f2, f3, phi0_het]";
    const std::string values =
        "3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.3, 0.0, 0.05, 2.0";
    const std::string path = dir.file("het.h5");
    const std::string yaml =
        "analysis_mode: two_component\nanalyzer_parameters:\n  dt: 0.1\n  scattering:\n"
        "    wavevector_q: 0.0054\nexperimental_data:\n  data_folder_path: " +
        dir.root().string() +
        "\n  data_file_name: het.h5\ninitial_parameters:\n  parameter_names: " + names +
        "\n  values: [" + values + "]\noptimization:\n  nlsq:\n" + Individual();
    const config::Config cfg = config::ReadConfigString(yaml, "het-truth", {});
    Write(cfg, Options(path, 50, {0, 45, 90, 135}, 0.002, 23));
    ExpectHonestVerdicts(Evaluate(cfg, "v0", 2.0), "two_component");
  }
}

}  // namespace
}  // namespace homodyne::nlsq
