#include "cmc/sharding.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "core/errors.h"

namespace homodyne::cmc {
namespace {

using Point = std::tuple<int, std::int64_t, std::int64_t>;

std::multiset<Point> PointsOf(const ShardPlan& plan) {
  std::multiset<Point> out;
  for (const auto& shard : plan.shards) {
    for (const auto& t : shard) {
      for (std::int64_t c = 0; c < t.count; ++c) out.emplace(t.angle, t.row, t.col_begin + c);
    }
  }
  return out;
}

TEST(Sharding, EveryPointLandsInExactlyOneShardForEveryStrategy) {
  std::multiset<Point> expected;
  for (int k = 0; k < 3; ++k) {
    for (std::int64_t i = 1; i <= 70; ++i) {
      for (std::int64_t j = i + 1; j <= 70; ++j) expected.emplace(k, i, j);
    }
  }
  for (const ShardStrategy strategy :
       {ShardStrategy::kRandom, ShardStrategy::kStratified, ShardStrategy::kContiguous}) {
    ShardingOptions o;
    o.strategy = strategy;
    o.segment = 16;
    o.seed = 3;
    const ShardPlan plan = BuildShardPlan(3, 1, 70, 5, o);
    ASSERT_EQ(plan.shards.size(), 5u);
    EXPECT_EQ(PointsOf(plan), expected) << static_cast<int>(strategy);
    for (const auto& shard : plan.shards) {
      for (const auto& t : shard) {
        EXPECT_LE(t.count, 16);
        EXPECT_GT(t.col_begin, t.row);
      }
    }
  }
}

TEST(Sharding, RandomShardsAreAngleBalancedAndDeterministic) {
  ShardingOptions o;
  o.seed = 9;
  const ShardPlan a = BuildShardPlan(4, 1, 199, 6, o);
  const ShardPlan b = BuildShardPlan(4, 1, 199, 6, o);
  o.seed = 10;
  const ShardPlan c = BuildShardPlan(4, 1, 199, 6, o);
  EXPECT_EQ(PointsOf(a), PointsOf(b));
  for (std::size_t s = 0; s < a.shards.size(); ++s)
    EXPECT_EQ(a.shards[s].size(), b.shards[s].size());
  bool differs = false;
  for (std::size_t s = 0; s < a.shards.size(); ++s) {
    std::set<std::tuple<int, std::int64_t, std::int64_t>> sa, sc;
    for (const auto& t : a.shards[s]) sa.emplace(t.angle, t.row, t.col_begin);
    for (const auto& t : c.shards[s]) sc.emplace(t.angle, t.row, t.col_begin);
    differs = differs || sa != sc;
  }
  EXPECT_TRUE(differs) << "a different seed must give different shards";
  // Every shard holds every angle, with segment counts within one of each other.
  for (int k = 0; k < 4; ++k) {
    std::size_t lo = SIZE_MAX, hi = 0;
    for (const auto& shard : a.shards) {
      std::size_t n = 0;
      for (const auto& t : shard) n += t.angle == k ? 1 : 0;
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    EXPECT_GT(lo, 0u);
    EXPECT_LE(hi - lo, 1u) << "angle " << k;
  }
}

TEST(Sharding, AutomaticShardCountFollowsHomodyneRules) {
  using model::AnalysisMode;
  // Laminar, 1M points, 8 angles, 500 + 1500 iterations: base 8000 × 0.85 = 6800.
  EXPECT_EQ(AutoShardSize(AnalysisMode::kLaminarFlow, 1'000'000, 8, 500, 1500), 6800);
  // Static, 3 angles: 10000 × 0.6 = 6000; iteration scaling 2000/4000 = 0.5 → 3000 → floor 5000.
  EXPECT_EQ(AutoShardSize(AnalysisMode::kStatic, 1'000'000, 3, 1000, 3000), 5000);
  ShardingOptions o;
  EXPECT_EQ(NumShards(o, AnalysisMode::kLaminarFlow, 1'000'000, 8, 500, 1500), 148);
  EXPECT_EQ(NumShards(o, AnalysisMode::kStatic, 1'000'000'000, 3, 500, 1500), 500);  // cap
  EXPECT_EQ(NumShards(o, AnalysisMode::kStatic, 100, 3, 500, 1500), 1);
  o.num_shards = 7;
  EXPECT_EQ(NumShards(o, AnalysisMode::kStatic, 100, 3, 500, 1500), 7);
}

}  // namespace
}  // namespace homodyne::cmc
