// Mode-aware consensus: shards around two modes of a parameter (and one shard holding
// both) are split into two populations, each combined on its own, and mixed by shard
// counts; without a flagged parameter nothing is formed.
#include <gtest/gtest.h>

#include <random>

#include "cmc/mode_aware.h"

namespace homodyne::cmc {
namespace {

// n draws of (x, y): x around `mode` (or, for a bimodal shard, around 1 or 2 half the
// time), y around 0.5.
ShardDraws Shard(int n, double mode, bool bimodal, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  ShardDraws d{2, {}};
  for (int j = 0; j < n; ++j) {
    const double centre = bimodal ? (j % 2 == 0 ? 1.0 : 2.0) : mode;
    d.draws.push_back(centre + 0.05 * z(rng));
    d.draws.push_back(0.5 + 0.05 * z(rng));
  }
  return d;
}

TEST(CmcModeAware, TwoPopulationsAreCombinedApartAndMixed) {
  std::vector<ShardDraws> shards;
  std::vector<int> ids;
  for (int s = 0; s < 9; ++s) {  // 0–4 near 1, 5–7 near 2, 8 both
    shards.push_back(Shard(400, s < 5 ? 1.0 : 2.0, s == 8, 100 + s));
    ids.push_back(s);
  }
  BimodalParameter b;
  b.name = "x";
  b.shards_tested = 9;
  b.bimodal_shards = {8};
  b.lower_mode = 1.0;
  b.upper_mode = 2.0;
  b.flagged = true;
  // The sampling coordinates are the model parameters here (identity map).
  const ModeAwareResult m =
      CombineModeAware(shards, ids, shards, {"x", "y"}, {b}, {0.0, 0.0}, {3.0, 1.0});
  ASSERT_TRUE(m.applied) << m.reason;
  ASSERT_EQ(m.clusters.size(), 2u);
  EXPECT_EQ(m.clusters[0].shards, (std::vector<int>{0, 1, 2, 3, 4, 8}));
  EXPECT_EQ(m.clusters[1].shards, (std::vector<int>{5, 6, 7, 8}));
  EXPECT_NEAR(m.clusters[0].weight, 0.6, 1e-12);
  EXPECT_NEAR(m.clusters[1].weight, 0.4, 1e-12);
  // The mixture: 60 % of the draws near x = 1, 40 % near 2, none in between.
  int low = 0, high = 0, between = 0;
  for (int j = 0; j < m.draws.count(); ++j) {
    const double x = m.draws.draws[static_cast<std::size_t>(2 * j)];
    (x < 1.2 ? low : x > 1.8 ? high : between) += 1;
  }
  EXPECT_EQ(between, 0);
  EXPECT_EQ(low, m.clusters[0].draws);
  EXPECT_EQ(high, m.clusters[1].draws);
  EXPECT_NEAR(static_cast<double>(low) / (low + high), 0.6, 0.01);
}

TEST(CmcModeAware, NothingIsFormedWithoutAFlaggedParameterOrASecondPopulation) {
  std::vector<ShardDraws> shards = {Shard(400, 1.0, false, 1), Shard(400, 1.0, false, 2)};
  BimodalParameter b;
  b.name = "x";
  b.flagged = false;
  ModeAwareResult m = CombineModeAware(shards, {0, 1}, shards, {"x", "y"}, {b}, {0, 0}, {3, 1});
  EXPECT_FALSE(m.applied);
  EXPECT_FALSE(m.reason.empty());
  b.flagged = true;
  b.lower_mode = 1.0;
  b.upper_mode = 2.0;
  m = CombineModeAware(shards, {0, 1}, shards, {"x", "y"}, {b}, {0, 0}, {3, 1});
  EXPECT_FALSE(m.applied);
  EXPECT_NE(m.reason.find("one population"), std::string::npos) << m.reason;
}

}  // namespace
}  // namespace homodyne::cmc
