// The distributed quantile estimator equals the serial one (model::EstimateScaling) bit
// for bit, in both variants (Q90, Q95) and against an independent oracle, and distributed
// percentiles equal numpy's on the pooled values; Q95's too-few-points error is agreed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/random.h"
#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "model/scaling_estimator.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
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
  synth::SynthOptions o;
  o.output = dir.file("scaling.h5");
  o.frames = 50;
  o.phi_deg = {0, 40, 80};
  o.noise = 0.01;
  o.seed = 4;
  const io::LoadOptions lo = WriteOnRootAndLoadOptions(world, cfg, o);
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
    EXPECT_TRUE(e.agreed());
    EXPECT_NE(e.message().find("angle 0 (phi = 0 deg): 81 finite point(s)"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("at least 100"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("at least 11 frames"), std::string::npos) << e.message();
    EXPECT_EQ(e.context().file, lo.path);
  }
  world.Barrier();  // every rank got here
}

}  // namespace
}  // namespace homodyne
