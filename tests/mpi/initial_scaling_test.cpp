// The distributed quantile estimator equals the serial one (model::EstimateScaling) bit
// for bit, in both variants (Q90, Q95), over both pools (homodyne's fit grid,
// two_component's full matrix; in core and streamed) and against an independent oracle,
// and distributed percentiles equal numpy's on the pooled values; Q95's too-few-points
// error is agreed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/errors.h"
#include "core/random.h"
#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "model/kernel_factory.h"
#include "model/scaling_estimator.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/block_stream.h"
#include "nlsq/initial_scaling.h"
#include "parallel/collective.h"
#include "parallel/order_statistics.h"
#include "scaling_oracle.h"
#include "synth/synthetic_dataset.h"
#include "synth_fixture.h"

namespace homodyne {
namespace {

// Rank 0 writes the synthetic dataset `o` (overwriting); every rank then gets the load
// options of that file (dt 0.1).
io::LoadOptions WriteOnRootAndLoadOptions(const Comm& world, const config::Config& cfg,
                                          synth::SynthOptions o) {
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

// The three-angle dataset (0, 40, 80 deg, noise 0.01, seed 4) of `frames` frames at `path`.
synth::SynthOptions ThreeAngles(const std::string& path, int frames) {
  synth::SynthOptions o;
  o.output = path;
  o.frames = frames;
  o.phi_deg = {0, 40, 80};
  o.noise = 0.01;
  o.seed = 4;
  return o;
}

TEST(DistributedPercentile, EqualsTheSerialPercentileOfThePooledValues) {
  const Comm& world = testing::TestEnvironment().world();
  // Every rank draws the same pool and keeps its share (with ties and negatives).
  CounterRng rng(9, 0, 0);
  std::vector<double> pool;
  for (int i = 0; i < 1001; ++i) pool.push_back(std::round(rng.Normal() * 50.0) / 8.0);
  std::vector<double> mine;
  for (std::size_t i = static_cast<std::size_t>(world.rank()); i < pool.size();
       i += static_cast<std::size_t>(world.size())) {
    mine.push_back(pool[i]);
  }
  std::sort(mine.begin(), mine.end());
  for (double p : {0.0, 10.0, 20.0, 33.3, 50.0, 80.0, 90.0, 99.9, 100.0}) {
    EXPECT_EQ(DistributedPercentile(world, mine, p), model::Percentile(pool, p)) << p;
  }
  std::vector<double> sorted = pool;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t k : {0, 1, 500, 999, 1000}) {
    EXPECT_EQ(DistributedKthSmallest(world, mine, k), sorted[static_cast<std::size_t>(k)]);
  }
}

TEST(InitialScaling, DistributedEstimateEqualsTheSerialEstimator) {
  const Comm& world = testing::TestEnvironment().world();
  const config::Config cfg =
      testing::SynthConfig("laminar_flow", "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4");
  const testing::MpiTempDir dir(world, "initial_scaling");
  const io::LoadOptions lo =
      WriteOnRootAndLoadOptions(world, cfg, ThreeAngles(dir.file("scaling.h5"), 50));
  const io::LocalData local = io::LoadDistributed(world, lo, Logger::Silent());
  const model::ScalingBounds bounds;
  const auto distributed = nlsq::EstimateInitialScaling(world, local, bounds);
  const auto distributed95 =
      nlsq::EstimateInitialScaling(world, local, bounds, model::ScalingQuantiles::kQ95);

  // Oracle: the serial estimator on the full fit grid (t = 0 excluded, full matrix).
  const io::Dataset data = io::LoadDataset(lo, Logger::Silent());
  ASSERT_EQ(distributed.size(), data.c2.size());
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    std::vector<double> dt, c2;
    for (std::int64_t i = 1; i < data.meta.n_frames; ++i) {
      for (std::int64_t j = 1; j < data.meta.n_frames; ++j) {
        dt.push_back(std::abs(data.meta.t[static_cast<std::size_t>(i)] -
                              data.meta.t[static_cast<std::size_t>(j)]));
        c2.push_back(data.at(k, i, j));
      }
    }
    const auto serial = model::EstimateScaling(dt, c2, bounds);
    EXPECT_EQ(distributed[k].contrast, serial.contrast) << "angle " << k;
    EXPECT_EQ(distributed[k].offset, serial.offset) << "angle " << k;
    const auto serial95 = model::EstimateScaling(dt, c2, bounds, model::ScalingQuantiles::kQ95);
    EXPECT_EQ(distributed95[k].contrast, serial95.contrast) << "angle " << k;
    EXPECT_EQ(distributed95[k].offset, serial95.offset) << "angle " << k;
    const auto oracle = testing::OracleEstimate(dt, c2, true);
    EXPECT_NEAR(distributed95[k].contrast, oracle.contrast, 1e-14) << "angle " << k;
    EXPECT_NEAR(distributed95[k].offset, oracle.offset, 1e-14) << "angle " << k;
    EXPECT_NE(distributed95[k].contrast, distributed[k].contrast) << "angle " << k;
  }
}

// Angle k's points of the full N×N matrix as xpcsjax pools them (heterodyne spec §3):
// every (i, j) with i, j = 0..N−1, row and column 0 and the corrected diagonal included,
// lags |t_i − t_j| on `t`.
void FullMatrix(const io::Dataset& data, std::size_t k, const std::vector<double>& t,
                std::vector<double>& dt, std::vector<double>& c2) {
  dt.clear();
  c2.clear();
  for (std::int64_t i = 0; i < data.meta.n_frames; ++i) {
    for (std::int64_t j = 0; j < data.meta.n_frames; ++j) {
      dt.push_back(std::abs(t[static_cast<std::size_t>(i)] - t[static_cast<std::size_t>(j)]));
      c2.push_back(data.at(k, i, j));
    }
  }
}

// two_component's pool (the full matrix, lags on xpcsjax's grid t_m = m·dt + dt) against
// the serial estimator and the oracle over all N² points, in core and streamed. 49 frames
// at dt = 0.1: the loader's linspace step differs from dt in its last bit there, and the
// check tells the pool apart from the fit grid and from lags on either other time grid.
TEST(InitialScaling, FullMatrixPoolEqualsTheOracleOverAllNSquaredPoints) {
  const Comm& world = testing::TestEnvironment().world();
  const config::Config cfg =
      testing::SynthConfig("laminar_flow", "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4");
  const testing::MpiTempDir dir(world, "initial_scaling_full");
  io::LoadOptions lo =
      WriteOnRootAndLoadOptions(world, cfg, ThreeAngles(dir.file("scaling_full.h5"), 49));
  lo.first_row = true;
  const io::LocalData local = io::LoadDistributed(world, lo, Logger::Silent());
  const io::LocalData layout = io::LoadDistributedLayout(world, lo, Logger::Silent());
  const model::ScalingBounds bounds;
  const auto kFull = nlsq::ScalingPool::kFullMatrix;
  const io::Dataset data = io::LoadDataset(lo, Logger::Silent());
  const auto n = static_cast<std::size_t>(data.meta.n_frames);
  ASSERT_EQ(n, 49u);
  ASSERT_NE(data.meta.t[1], 0.1);  // the loader's step is not dt here
  // xpcsjax's model.t, arange(N)·dt + dt: the product rounded (volatile: no FMA), then the sum.
  std::vector<double> xpcsjax_t(n);
  for (std::size_t m = 0; m < n; ++m) {
    const volatile double product = static_cast<double>(m) * 0.1;
    xpcsjax_t[m] = product + 0.1;
  }
  EXPECT_EQ(model::TwoComponentLagTimes(49, 0.1), xpcsjax_t);
  const std::vector<double> linspace_t = model::TwoComponentTimes(data.meta.t, 0.1);
  ASSERT_NE(linspace_t, xpcsjax_t);

  bool without_row0_differs = false, loader_lags_differ = false, linspace_lags_differ = false;
  for (const bool q95 : {false, true}) {
    const auto rule = q95 ? model::ScalingQuantiles::kQ95 : model::ScalingQuantiles::kQ90;
    const auto in_core = nlsq::EstimateInitialScaling(world, local, bounds, rule, kFull);
    nlsq::BlockStream stream(world, layout, std::max<std::int64_t>(local.local_points() / 5, 1),
                             100);
    const auto streamed =
        nlsq::EstimateInitialScalingStreaming(world, layout, stream, bounds, rule, kFull);
    const auto fit_grid = nlsq::EstimateInitialScaling(world, local, bounds, rule);
    ASSERT_EQ(in_core.size(), data.c2.size());
    ASSERT_EQ(streamed.size(), data.c2.size());
    for (std::size_t k = 0; k < data.c2.size(); ++k) {
      std::vector<double> dt, c2;
      FullMatrix(data, k, xpcsjax_t, dt, c2);
      ASSERT_EQ(c2.size(), n * n);
      const auto serial = model::EstimateScaling(dt, c2, bounds, rule);
      EXPECT_EQ(in_core[k].contrast, serial.contrast) << "angle " << k << " Q95 " << q95;
      EXPECT_EQ(in_core[k].offset, serial.offset) << "angle " << k << " Q95 " << q95;
      EXPECT_EQ(streamed[k].contrast, in_core[k].contrast) << "angle " << k << " Q95 " << q95;
      EXPECT_EQ(streamed[k].offset, in_core[k].offset) << "angle " << k << " Q95 " << q95;
      const auto oracle = testing::OracleEstimate(dt, c2, q95);
      EXPECT_NEAR(in_core[k].contrast, oracle.contrast, 1e-14) << "angle " << k << " Q95 " << q95;
      EXPECT_NEAR(in_core[k].offset, oracle.offset, 1e-14) << "angle " << k << " Q95 " << q95;
      // The alternatives the check must reject.
      auto differs = [&](const testing::OracleScaling& other) {
        return std::abs(other.contrast - oracle.contrast) > 1e-12 ||
               std::abs(other.offset - oracle.offset) > 1e-12;
      };
      without_row0_differs |=
          fit_grid[k].contrast != in_core[k].contrast || fit_grid[k].offset != in_core[k].offset;
      FullMatrix(data, k, data.meta.t, dt, c2);
      loader_lags_differ |= differs(testing::OracleEstimate(dt, c2, q95));
      FullMatrix(data, k, linspace_t, dt, c2);
      linspace_lags_differ |= differs(testing::OracleEstimate(dt, c2, q95));
    }
  }
  EXPECT_TRUE(without_row0_differs);
  EXPECT_TRUE(loader_lags_differ);
  EXPECT_TRUE(linspace_lags_differ);
}

TEST(InitialScaling, Q95WithFewerThan100PointsIsAnAgreedBadInputError) {
  const Comm& world = testing::TestEnvironment().world();
  const config::Config cfg = testing::SynthConfig("static", "3000, -0.6, 20");
  const testing::MpiTempDir dir(world, "initial_scaling_few");
  synth::SynthOptions o;
  o.output = dir.file("few.h5");
  o.frames = 10;  // the fit grid: 9 x 9 = 81 points per angle
  o.phi_deg = {0, 40};
  o.seed = 5;
  const io::LoadOptions lo = WriteOnRootAndLoadOptions(world, cfg, o);
  const io::LocalData local = io::LoadDistributed(world, lo, Logger::Silent());
  // Q90: the bounds' midpoints.
  const auto q90 = nlsq::EstimateInitialScaling(world, local, {});
  ASSERT_EQ(q90.size(), 2u);
  EXPECT_EQ(q90[0].contrast, 0.5);
  EXPECT_EQ(q90[1].offset, 1.0);
  // Q95: the same error on every rank (no hang), naming the first angle and the count.
  try {
    nlsq::EstimateInitialScaling(world, local, {}, model::ScalingQuantiles::kQ95);
    ADD_FAILURE() << "no error on rank " << world.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_TRUE(IsAgreed(e));
    EXPECT_NE(e.message().find("angle 0 (phi = 0 deg): 81 finite point(s)"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("at least 100"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("at least 11 frames"), std::string::npos) << e.message();
    EXPECT_EQ(e.context().file, lo.path);
  }
  world.Barrier();  // every rank got here

  // The full matrix (two_component's pool): 10 frames are 100 points, enough, as for
  // xpcsjax; 9 frames are 81, the same error with the full matrix's minimum.
  io::LoadOptions full = lo;
  full.first_row = true;
  const io::LocalData ten = io::LoadDistributed(world, full, Logger::Silent());
  const auto kFull = nlsq::ScalingPool::kFullMatrix;
  const auto q95 =
      nlsq::EstimateInitialScaling(world, ten, {}, model::ScalingQuantiles::kQ95, kFull);
  ASSERT_EQ(q95.size(), 2u);
  EXPECT_NE(q95[0].contrast, 0.5);  // from the data, not the midpoint
  full.end_frame = 9;
  const io::LocalData nine = io::LoadDistributed(world, full, Logger::Silent());
  try {
    nlsq::EstimateInitialScaling(world, nine, {}, model::ScalingQuantiles::kQ95, kFull);
    ADD_FAILURE() << "no error on rank " << world.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_TRUE(IsAgreed(e));
    EXPECT_NE(e.message().find("angle 0 (phi = 0 deg): 81 finite point(s)"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("full matrix"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("at least 10 frames"), std::string::npos) << e.message();
  }
  world.Barrier();
}

}  // namespace
}  // namespace homodyne
