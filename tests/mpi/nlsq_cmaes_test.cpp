// The CMA-ES global stage at whatever rank count the test runs with (ctest: 1 and 2):
// a two-basin problem solved from the wrong basin with the same bits on the world and on
// one rank alone; the batched χ² pass of the XPCS problem against single evaluations (in
// core, streamed, one rank alone); resume from a CMA-ES checkpoint after a stop request;
// and a whole laminar fit from a start where the local fit gets stuck.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "checkpoint/interrupt.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "core/log.h"
#include "global/cmaes.h"
#include "global/global_stage.h"
#include "io/dataset.h"
#include "lsq/bounded_solver.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq_fit_fixture.h"
#include "parallel/collective.h"
#include "parallel/tile_sum.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

using homodyne::testing::MpiTempDir;
using homodyne::testing::SameBits;
using homodyne::testing::TestEnvironment;

// χ² = Σ_k w_k·[((x0+1)(x0−2))² + (0.5(x0−2))² + (x1−0.5)²], w_k = 1 + k/T over T tiles
// spread over the ranks: a shallow basin near x0 ≈ −0.9 (χ² ≈ 2.2·Σw) and the global
// minimum χ² = 0 at (2, 0.5), separated by a barrier near x0 = 0.5.
class TwoBasinProblem : public lsq::LeastSquaresProblem {
 public:
  static constexpr int kTiles = 37;
  explicit TwoBasinProblem(const Comm& comm)
      : comm_(comm),
        begin_(kTiles * comm.rank() / comm.size()),
        end_(kTiles * (comm.rank() + 1) / comm.size()) {}
  int num_parameters() const override { return 2; }

  void Evaluate(std::span<const double> x, bool with_derivatives,
                lsq::NormalEquations& out) override {
    const std::size_t width = with_derivatives ? 7 : 1;
    const auto sum = ReproducibleTileSum(
        comm_, kTiles, begin_, end_, width,
        [&](std::int64_t k, std::span<double> acc) { Tile(k, x, with_derivatives, acc); });
    out.chi2 = sum[0];
    out.n_points = 3 * kTiles;
    if (with_derivatives) {
      out.gradient = {sum[1], sum[2]};
      out.hessian = {sum[3], sum[4], sum[5], sum[6]};
    }
  }

  void EvaluateChi2Batch(std::span<const std::vector<double>> xs,
                         std::vector<double>& chi2) override {
    ++batches;
    chi2 = ReproducibleTileSum(comm_, kTiles, begin_, end_, xs.size(),
                               [&](std::int64_t k, std::span<double> acc) {
                                 for (std::size_t j = 0; j < xs.size(); ++j) {
                                   Tile(k, xs[j], false, acc.subspan(j, 1));
                                 }
                               });
  }

  int batches = 0;

 private:
  static void Tile(std::int64_t k, std::span<const double> x, bool derivs, std::span<double> acc) {
    const double w = 1.0 + static_cast<double>(k) / kTiles;
    const double r[3] = {(x[0] + 1.0) * (x[0] - 2.0), 0.5 * (x[0] - 2.0), x[1] - 0.5};
    acc[0] += w * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    if (!derivs) return;
    const double j0 = 2.0 * x[0] - 1.0;  // ∂r0/∂x0; ∂r1/∂x0 = 0.5; ∂r2/∂x1 = 1
    acc[1] += w * (j0 * r[0] + 0.5 * r[1]);
    acc[2] += w * r[2];
    acc[3] += w * (j0 * j0 + 0.25);
    acc[6] += w;
  }

  const Comm& comm_;
  std::int64_t begin_, end_;
};

const std::vector<double> kLower = {-3.0, -2.0}, kUpper = {4.0, 2.0};
const std::vector<double> kWrongBasin = {-1.8, 1.5};

global::CmaesOptions TwoBasinOptions() {
  global::CmaesOptions o;
  o.max_generations = 200;
  o.sigma = 0.8;  // logit units: about a fifth of the range around the centre
  o.restart_strategy = global::RestartStrategy::kBipop;
  o.max_restarts = 5;
  o.seed = 42;
  return o;
}

global::BatchObjective BatchOf(lsq::LeastSquaresProblem& p) {
  return [&p](std::span<const std::vector<double>> xs, std::vector<double>& chi2) {
    p.EvaluateChi2Batch(xs, chi2);
  };
}

global::CmaesSummary SolveTwoBasin(const Comm& comm,
                                   const std::optional<checkpoint::CheckpointSettings>& ck = {},
                                   std::uint64_t seed = 42, int* generations_run = nullptr) {
  TwoBasinProblem problem(comm);
  global::CmaesOptions o = TwoBasinOptions();
  o.seed = seed;
  global::Cmaes es(o, kWrongBasin, kLower, kUpper);
  const global::CmaesSummary s =
      global::RunCmaes(comm, es, BatchOf(problem), ck, "two basins", Logger::Silent(), false);
  if (generations_run != nullptr) *generations_run = problem.batches;
  return s;
}

void ExpectSameSearch(const global::CmaesSummary& a, const global::CmaesSummary& b) {
  EXPECT_TRUE(SameBits(a.x, b.x));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.chi2), std::bit_cast<std::uint64_t>(b.chi2));
  EXPECT_EQ(a.generations, b.generations);
  EXPECT_EQ(a.evaluations, b.evaluations);
  EXPECT_EQ(a.restarts, b.restarts);
}

TEST(NlsqCmaes, TwoBasinProblemEscapesTheShallowBasinWithTheSameBitsOnAnyRankCount) {
  const Comm& world = TestEnvironment().world();
  // The start is in the shallow basin: the local fit from it stays there.
  TwoBasinProblem problem(world);
  const SolverSummary local =
      lsq::SolveBounded(problem, kWrongBasin, kLower, kUpper, lsq::SolverOptions{});
  ASSERT_TRUE(local.IsUsable()) << local.BriefReport();
  EXPECT_LT(local.x[0], 0.0);
  EXPECT_GT(local.final_chi2, 1.0);

  const global::CmaesSummary global = SolveTwoBasin(world);
  EXPECT_NEAR(global.x[0], 2.0, 1e-3);
  EXPECT_NEAR(global.x[1], 0.5, 1e-3);
  EXPECT_LT(global.chi2, 1e-6);
  EXPECT_EQ(global.restarts, 5);  // bipop ran its restarts
  EXPECT_EQ(global.stop, global::CmaesStop::kMaxRestarts);
  // Not a lucky seed: other seeds find the deep basin too.
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    EXPECT_NEAR(SolveTwoBasin(world, {}, seed).x[0], 2.0, 1e-3) << "seed " << seed;
  }

  // One rank alone (every rank evaluates all tiles) gives the same bits.
  const Comm self = world.Split(world.rank(), 0);
  const global::CmaesSummary alone = SolveTwoBasin(self);
  ExpectSameSearch(global, alone);
  // ... and so does rank 0's result on every rank.
  std::vector<double> root = global.x;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_DOUBLE, 0, world.get());
  EXPECT_TRUE(SameBits(root, global.x));
}

TEST(NlsqCmaes, ADifferentSeedSearchesDifferently) {
  const Comm& world = TestEnvironment().world();
  TwoBasinProblem problem(world);
  global::CmaesOptions o = TwoBasinOptions();
  o.restart_strategy = global::RestartStrategy::kNone;
  global::Cmaes a(o, kWrongBasin, kLower, kUpper);
  o.seed = 7;
  global::Cmaes b(o, kWrongBasin, kLower, kUpper);
  const global::CmaesGeneration ga = a.Step(BatchOf(problem));
  const global::CmaesGeneration gb = b.Step(BatchOf(problem));
  EXPECT_NE(ga.generation_best, gb.generation_best);
  EXPECT_EQ(problem.batches, 2);  // one batched pass per generation
}

TEST(NlsqCmaes, ResumeAfterAStopRequestGivesTheUninterruptedBits) {
  const Comm& world = TestEnvironment().world();
  const global::CmaesSummary whole = SolveTwoBasin(world);

  MpiTempDir dir(world, "cmaes_resume", /*create=*/true);
  checkpoint::CheckpointSettings ck;
  ck.enabled = true;
  ck.dir = dir.path();
  ck.frequency = 25;
  ck.keep_last = 2;
  ck.config_description = "two basins, seed 42";
  {
    // SIGUSR1 on rank 0 after generation 37 (inside the second run): every rank stops
    // there, with a checkpoint.
    const checkpoint::InterruptHandlers handlers;
    setenv(checkpoint::kSignalVariable, "cmaes_gen:37", 1);
    ErrorKind kind = ErrorKind::kInternal;
    try {
      SolveTwoBasin(world, ck);
    } catch (const Error& e) {
      kind = e.kind();
    }
    unsetenv(checkpoint::kSignalVariable);
    checkpoint::ClearStopRequest();
    EXPECT_EQ(kind, ErrorKind::kCheckpointed);
  }
  // Resumed on one rank alone (read only: it writes no checkpoints), then on the world.
  ck.resume = true;
  checkpoint::CheckpointSettings read_only = ck;
  read_only.enabled = false;
  read_only.stop_on_signal = false;
  const Comm self = world.Split(world.rank(), 0);
  int generations_alone = 0, generations_resumed = 0;
  const global::CmaesSummary alone = SolveTwoBasin(self, read_only, 42, &generations_alone);
  ExpectSameSearch(whole, alone);
  world.Barrier();
  const global::CmaesSummary resumed = SolveTwoBasin(world, ck, 42, &generations_resumed);
  ExpectSameSearch(whole, resumed);
  // Both continued after generation 37 rather than starting again.
  EXPECT_EQ(generations_alone, whole.generations - 37);
  EXPECT_EQ(generations_resumed, whole.generations - 37);

  // A checkpoint of another start is refused, naming it.
  TwoBasinProblem problem(world);
  global::Cmaes other(TwoBasinOptions(), {-1.0, 1.0}, kLower, kUpper);
  try {
    global::RunCmaes(world, other, BatchOf(problem), read_only, "two basins", Logger::Silent(),
                     false);
    ADD_FAILURE() << "a checkpoint of another start was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("another start"), std::string::npos) << e.what();
  }
}

// --- The XPCS problem -------------------------------------------------------------------

const std::string kTruth = "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4";
// From here the local fit stalls far from the minimum (checked below).
const std::string kStuckStart = "100, 0.5, 0, 0.1, 0.2, 0.0, 8";

config::Config LaminarConfig(const std::string& values, const std::string& file,
                             const std::string& cmaes) {
  return testing::LaminarFileConfig(
      values, file,
      "    anti_degeneracy:\n      per_angle_mode: auto\n    cmaes:\n      enable: true\n" + cmaes);
}

std::string WriteLaminarData(const MpiTempDir& dir) {
  const Comm& world = TestEnvironment().world();
  const std::string path = dir.file("laminar.h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 40;
    o.phi_deg = {0, 45, 90, 135};
    o.noise = 1e-3;
    o.seed = 7;
    o.contrast = 0.5;
    o.offset = 1.0;
    synth::WriteSyntheticDataset(LaminarConfig(kTruth, path, ""), o);
  });
  world.Barrier();
  return path;
}

NlsqRunOptions Quiet(FitStrategy strategy = FitStrategy::kInCore, std::int64_t window = 0) {
  return testing::QuietRun(strategy, window);
}

TEST(NlsqCmaes, BatchedChi2EqualsSingleEvaluationsInCoreStreamedAndAlone) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_batch");
  const std::string path = WriteLaminarData(dir);
  const config::Config cfg = LaminarConfig(kTruth, path, "");
  XpcsFitSession session(world, cfg, Quiet(), Logger::Silent());
  // Points across the box: the start, and mixes of it with the bounds.
  std::vector<std::vector<double>> xs;
  for (int j = 0; j < 7; ++j) {
    std::vector<double> x = session.x0();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double t = 0.13 * ((j * 5 + static_cast<int>(i) * 3) % 8);
      x[i] = (1.0 - t) * x[i] + t * (j % 2 == 0 ? session.lower()[i] : session.upper()[i]);
    }
    xs.push_back(x);
  }
  std::vector<double> batch;
  session.Chi2Batch(xs, batch);
  ASSERT_EQ(batch.size(), xs.size());
  std::vector<double> single;
  for (const auto& x : xs) single.push_back(session.Chi2At(x));
  EXPECT_TRUE(SameBits(batch, single));

  // Streamed in windows of a few blocks: every window is read once for the batch.
  const std::int64_t window = 300;
  XpcsFitSession streamed(world, cfg, Quiet(FitStrategy::kStreaming, window), Logger::Silent());
  std::vector<double> batch_streamed;
  streamed.Chi2Batch(xs, batch_streamed);
  EXPECT_TRUE(SameBits(batch, batch_streamed));

  // One rank with all the data.
  const Comm self = world.Split(world.rank(), 0);
  XpcsFitSession alone(self, cfg, Quiet(), Logger::Silent());
  std::vector<double> batch_alone;
  alone.Chi2Batch(xs, batch_alone);
  EXPECT_TRUE(SameBits(batch, batch_alone));
}

// The search's objective on every k-th row: the sum over exactly those points (checked
// against the literal model, the loader's data and the default loss), the same bits on one rank
// alone, and the full χ² for k = 1 or a streamed fit.
TEST(NlsqCmaes, Chi2OnEveryKthRowIsTheSumOverThoseRows) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_rows");
  const std::string path = WriteLaminarData(dir);
  const config::Config cfg = LaminarConfig(kTruth, path, "");
  XpcsFitSession session(world, cfg, Quiet(), Logger::Silent());
  std::vector<std::vector<double>> xs = {session.x0(), session.x0()};
  xs[1].back() += 0.7;             // phi0
  xs[1][xs[1].size() - 7] *= 1.3;  // D0
  constexpr int kStride = 3;
  std::vector<double> rows;
  session.Chi2BatchOnRows(xs, rows, kStride);
  ASSERT_EQ(rows.size(), 2u);

  // Independently: the loader's matrices (t = 0 is row 0 there, not fitted) and the literal
  // model; fit-grid rows 0, 3, 6, ... are loader rows 1, 4, 7, ..., upper triangle, each
  // pair counted twice (the full-matrix convention), sigma 0.01.
  const io::Dataset data = io::LoadDataset(LoadOptionsFromConfig(cfg, ""), Logger::Silent());
  const int n = data.meta.n_frames;
  std::int64_t count = 0;
  for (std::size_t v = 0; v < xs.size(); ++v) {
    const std::vector<double> e = session.layout().Expand(xs[v]);
    const std::size_t n_angles = session.phi_deg().size();
    synth::SynthTruth truth;
    truth.mode = model::AnalysisMode::kLaminarFlow;
    truth.geometry = GeometryFromConfig(cfg, data.meta.q_physics);
    truth.physical.assign(e.end() - 7, e.end());
    truth.phi_deg = session.phi_deg();
    truth.contrast.assign(n_angles, 1.0);
    truth.offset.assign(n_angles, 0.0);
    truth.frames = n;
    const auto g1sq = synth::ModelMatrices(truth);
    double chi2 = 0.0;
    count = 0;
    for (std::size_t k = 0; k < n_angles; ++k) {
      for (int i = 1; i < n; i += kStride) {
        for (int j = i + 1; j < n; ++j) {
          const std::size_t p = static_cast<std::size_t>(i) * static_cast<std::size_t>(n) +
                                static_cast<std::size_t>(j);
          const double r = (data.c2[k][p] - (e[n_angles + k] + e[k] * g1sq[k][p])) / 0.01;
          // The default loss, soft_l1 with f_scale 1 (C = 1/σ on r): C²·2(√(1+z) − 1).
          const double c = 1.0 / 0.01, z = (r / c) * (r / c);
          chi2 += 2.0 * c * c * (2.0 * z / (std::sqrt(1.0 + z) + 1.0));
          ++count;
        }
      }
    }
    EXPECT_NEAR(rows[v], chi2, 1e-10 * chi2) << v;
  }
  EXPECT_EQ(session.PointsOnRows(kStride), count);
  EXPECT_LT(count, session.total_points());

  // Stride 1 is the full batch, bit for bit.
  std::vector<double> full, one;
  session.Chi2Batch(xs, full);
  session.Chi2BatchOnRows(xs, one, 1);
  EXPECT_TRUE(SameBits(full, one));
  // One rank with all the data: the same bits.
  const Comm self = world.Split(world.rank(), 0);
  XpcsFitSession alone(self, cfg, Quiet(), Logger::Silent());
  std::vector<double> rows_alone;
  alone.Chi2BatchOnRows(xs, rows_alone, kStride);
  EXPECT_TRUE(SameBits(rows, rows_alone));
  // A streamed fit (windows of 300 points) reads the rows into memory once and searches on
  // them with the in-core bits: the screens and searches choose as in core.
  XpcsFitSession streamed(world, cfg, Quiet(FitStrategy::kStreaming, 300), Logger::Silent());
  ASSERT_TRUE(streamed.streamed());
  std::vector<double> rows_streamed;
  streamed.Chi2BatchOnRows(xs, rows_streamed, kStride);
  EXPECT_TRUE(SameBits(rows, rows_streamed));
  EXPECT_EQ(streamed.PointsOnRows(kStride), count);
}

// With search_max_points below the data's size the search runs on every k-th row and the
// refinement on all points: from the stuck start it reaches the minimum of the full search,
// with the same bits on one rank alone.
TEST(NlsqCmaes, SearchOnRowsFromAStuckStartReachesTheMinimum) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_rows_fit");
  const std::string path = WriteLaminarData(dir);
  const NlsqRunResult reference =
      RunNlsqFit(world, LaminarConfig(kTruth, path, ""), Quiet(), Logger::Silent());
  const config::Config cfg =
      LaminarConfig(kStuckStart, path,
                    "      nlsq_warmstart: false\n      popsize: 16\n      max_generations: 150\n"
                    "      max_restarts: 5\n      search_max_points: 1000\n");
  const global::GlobalStageOptions g =
      global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes);
  EXPECT_EQ(g.search_max_points, 1000);
  const global::GlobalSelection sel = global::SelectGlobalStage(cfg, g);
  const NlsqRunResult r =
      global::RunGlobalNlsqFit(world, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  ASSERT_TRUE(r.report.global_search.has_value());
  const GlobalSearchReport& gs = *r.report.global_search;
  // ceil(2964 / 1000) = 3, but 39 times leave 2 (at least 16 rows per angle).
  EXPECT_EQ(gs.search_row_stride, 2);
  EXPECT_TRUE(std::isfinite(gs.search_chi_squared_on_rows));
  EXPECT_LT(gs.search_chi_squared_on_rows, gs.cmaes_chi_squared);  // a third of the points
  EXPECT_EQ(gs.selected, "cmaes_refined");
  EXPECT_LE(std::abs(r.report.chi_squared - reference.report.chi_squared),
            1e-8 * reference.report.chi_squared);
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone =
      global::RunGlobalNlsqFit(self, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
  // A negative value is bad input naming the key.
  EXPECT_THROW(
      global::GlobalStageOptions::FromConfig(
          LaminarConfig(kTruth, path, "      search_max_points: -1\n").optimization.nlsq.cmaes),
      Error);
}

// With D_offset and gamma_dot_t_offset held (at the truth), CMA-ES searches the five others
// only: the held values come back exactly, with σ 0, and the answer is the held local fit's.
TEST(NlsqCmaes, HeldParametersAreNotSearched) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_held");
  const std::string path = WriteLaminarData(dir);
  const auto hold = [](config::Config cfg) {
    for (const char* name : {"D_offset", "gamma_dot_t_offset"}) {
      for (auto& p : cfg.parameters) {
        if (p.name == name) p.vary = false;
      }
    }
    return cfg;
  };
  const NlsqRunResult reference =
      RunNlsqFit(world, hold(LaminarConfig(kTruth, path, "")), Quiet(), Logger::Silent());
  ASSERT_TRUE(reference.summary.IsUsable());
  const config::Config cfg =
      hold(LaminarConfig("100, 0.5, 10, 0.1, 0.2, 0.0002, 8", path,
                         "      nlsq_warmstart: false\n      popsize: 16\n"
                         "      max_generations: 150\n      max_restarts: 5\n"));
  const global::GlobalStageOptions g =
      global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes);
  const global::GlobalSelection sel = global::SelectGlobalStage(cfg, g);
  const NlsqRunResult r =
      global::RunGlobalNlsqFit(world, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  ASSERT_TRUE(r.report.global_search.has_value());
  EXPECT_GT(r.report.global_search->evaluations, 0);
  EXPECT_EQ(r.n_optimised, 2 + 5);  // averaged contrast and offset, five physics
  EXPECT_EQ(r.summary.x.size(), 7u);
  EXPECT_EQ(r.report.physical_values[2], 10.0);
  EXPECT_EQ(r.report.physical_values[5], 0.0002);
  EXPECT_EQ(r.report.physical_uncertainties[2], 0.0);
  EXPECT_EQ(r.report.physical_uncertainties[5], 0.0);
  EXPECT_LE(std::abs(r.report.chi_squared - reference.report.chi_squared),
            1e-8 * reference.report.chi_squared);
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone =
      global::RunGlobalNlsqFit(self, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
}

TEST(NlsqCmaes, LaminarFitFromAStuckStartReachesTheMinimum) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_laminar");
  const std::string path = WriteLaminarData(dir);

  // The reference: the plain local fit from the truth.
  const NlsqRunResult reference =
      RunNlsqFit(world, LaminarConfig(kTruth, path, ""), Quiet(), Logger::Silent());
  ASSERT_TRUE(reference.summary.IsUsable());
  // The plain local fit from the stuck start does not get there (it ends at over 3 times the
  // minimum's reduced chi2).
  const NlsqRunResult stuck =
      RunNlsqFit(world, LaminarConfig(kStuckStart, path, ""), Quiet(), Logger::Silent());
  EXPECT_GT(stuck.report.reduced_chi_squared, 3.0 * reference.report.reduced_chi_squared);

  // The default pipeline: the warm start stalls (not converged), so CMA-ES searches the box
  // from the configured start with sigma and bipop restarts, and the refinement reaches the
  // minimum; whatever it finds, the answer is never worse than the local fit's.
  {
    const config::Config cfg = LaminarConfig(kStuckStart, path, "      popsize: 16\n");
    const global::GlobalStageOptions g =
        global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes);
    const NlsqRunResult r = global::RunGlobalNlsqFit(world, cfg, Quiet(), g, 1e6, Logger::Silent());
    ASSERT_TRUE(r.report.global_search.has_value());
    const GlobalSearchReport& gs = *r.report.global_search;
    EXPECT_FALSE(gs.cmaes_skipped);
    EXPECT_EQ(gs.warmstart_termination, "stalled");
    EXPECT_EQ(gs.restart_strategy, "bipop");
    EXPECT_DOUBLE_EQ(gs.sigma, 0.5);
    EXPECT_GT(gs.evaluations, 0);
    EXPECT_LE(r.report.chi_squared, stuck.report.chi_squared);
    EXPECT_GE(gs.chi_squared_improvement, 0.0);
    EXPECT_LE(r.report.chi_squared, reference.report.chi_squared * (1.0 + 1e-6));
    EXPECT_EQ(r.report.convergence_status, "converged");
  }

  // Without the warm start: CMA-ES with bipop restarts from the stuck start, then the
  // refinement, reaches the minimum.
  const config::Config cfg =
      LaminarConfig(kStuckStart, path,
                    "      nlsq_warmstart: false\n      popsize: 16\n      max_generations: 150\n"
                    "      max_restarts: 5\n");
  const global::GlobalStageOptions g =
      global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes);
  const global::GlobalSelection sel = global::SelectGlobalStage(cfg, g);
  ASSERT_TRUE(sel.run) << sel.reason;
  const NlsqRunResult r =
      global::RunGlobalNlsqFit(world, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  ASSERT_TRUE(r.report.global_search.has_value());
  const GlobalSearchReport& gs = *r.report.global_search;
  EXPECT_FALSE(gs.warmstart_ran);
  EXPECT_EQ(gs.restart_strategy, "bipop");
  EXPECT_EQ(gs.restarts, 5);
  EXPECT_EQ(gs.selected, "cmaes_refined");
  EXPECT_LT(gs.cmaes_chi_squared, stuck.report.chi_squared);
  EXPECT_TRUE(r.summary.IsUsable());
  EXPECT_LE(std::abs(r.report.chi_squared - reference.report.chi_squared),
            1e-8 * reference.report.chi_squared);
  EXPECT_LE(r.report.chi_squared, stuck.report.chi_squared);
  EXPECT_LT(r.report.reduced_chi_squared, 0.05);

  // The same bits on one rank alone.
  const Comm self = world.Split(world.rank(), 0);
  const NlsqRunResult alone =
      global::RunGlobalNlsqFit(self, cfg, Quiet(), g, sel.scale_ratio, Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, alone.expanded));
  EXPECT_EQ(r.report.global_search->evaluations, alone.report.global_search->evaluations);
}

TEST(NlsqCmaes, GoodWarmStartSkipsTheGlobalSearch) {
  const Comm& world = TestEnvironment().world();
  const MpiTempDir dir(world, "cmaes_skip");
  const std::string path = WriteLaminarData(dir);
  const config::Config cfg = LaminarConfig(kTruth, path, "");
  const global::GlobalStageOptions g =
      global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes);
  const NlsqRunResult r = global::RunGlobalNlsqFit(world, cfg, Quiet(), g, 1e6, Logger::Silent());
  ASSERT_TRUE(r.report.global_search.has_value());
  EXPECT_TRUE(r.report.global_search->cmaes_skipped);
  EXPECT_EQ(r.report.global_search->selected, "nlsq_warmstart");
  EXPECT_EQ(r.report.global_search->evaluations, 0);
  const NlsqRunResult plain = RunNlsqFit(world, cfg, Quiet(), Logger::Silent());
  EXPECT_TRUE(SameBits(r.expanded, plain.expanded));
}

}  // namespace
}  // namespace homodyne::nlsq
