// Shard filters before the consensus: divergence, outliers (modified z-score), degenerate
// variances and heterogeneity, with the rejection reasons.
#include <gtest/gtest.h>

#include "cmc/shard_filter.h"
#include "core/errors.h"
#include "core/random.h"

namespace homodyne::cmc {
namespace {

// Shard s: 200 draws of two parameters, N(mean[s], sd[s]²) each.
std::vector<ShardDraws> Shards(const std::vector<double>& means, const std::vector<double>& sds) {
  std::vector<ShardDraws> out;
  for (std::size_t s = 0; s < means.size(); ++s) {
    CounterRng rng(3, s, 0);
    ShardDraws d{2, {}};
    for (int j = 0; j < 200; ++j) {
      d.draws.push_back(means[s] + sds[s] * rng.Normal());
      d.draws.push_back(10.0 + rng.Normal());
    }
    out.push_back(std::move(d));
  }
  return out;
}

const std::vector<std::string> kNames{"D0", "alpha"};

TEST(ShardFilter, DivergentShardsAreDropped) {
  const auto shards = Shards({1, 1, 1}, {1, 1, 1});
  const auto r = FilterShards(shards, {0.0, 0.25, 0.05}, kNames, {});
  EXPECT_EQ(r.keep, (std::vector<bool>{true, false, true}));
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].shard, 1);
  EXPECT_NE(r.rejected[0].reason.find("divergence"), std::string::npos);
  EXPECT_THROW(FilterShards(shards, {0.5, 0.5, 0.5}, kNames, {}), Error);
}

TEST(ShardFilter, RobustMethodDropsOutliersAndDegenerateShards) {
  // Shard 4's mean is 50 sd away; shard 5's variance is 1e-8 of the others.
  const auto shards = Shards({1.0, 1.1, 0.9, 1.05, 50.0, 1.0}, {1, 1, 1, 1, 1, 1e-5});
  const std::vector<double> div(6, 0.0);
  const auto r = FilterShards(shards, div, kNames, {});
  EXPECT_EQ(r.keep, (std::vector<bool>{true, true, true, true, false, false}));
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_NE(r.rejected[0].reason.find("outlier in D0"), std::string::npos);
  EXPECT_NE(r.rejected[1].reason.find("degenerate"), std::string::npos);
  ShardFilterOptions plain;
  plain.robust = false;
  const auto p = FilterShards(shards, div, kNames, plain);
  EXPECT_TRUE(p.rejected.empty());
}

TEST(ShardFilter, HeterogeneityWarnsOrAborts) {
  const auto shards = Shards({1.0, 3.0, 5.0}, {0.1, 0.1, 0.1});  // CV of the means 0.67
  const std::vector<double> div(3, 0.0);
  ShardFilterOptions o;
  o.robust = false;
  o.heterogeneity_parameters = {0};
  o.parameter_ranges = {4.0, 4.0};
  const auto warn = FilterShards(shards, div, kNames, o);
  ASSERT_EQ(warn.parameter_cv.size(), 1u);
  EXPECT_NEAR(warn.parameter_cv[0], 2.0 / 3.0, 0.02);
  EXPECT_EQ(warn.warnings.size(), 1u);
  o.max_parameter_cv = 0.5;
  EXPECT_THROW(FilterShards(shards, div, kNames, o), Error);
  o.heterogeneity_abort = false;
  EXPECT_EQ(FilterShards(shards, div, kNames, o).warnings.size(), 1u);
}

// two_component's rule: the shard means against the shards' posterior sds (Cochran's Q),
// not against |mean|.
TEST(ShardFilter, ScatterRuleJudgesTheMeansAgainstTheShardSds) {
  const std::vector<double> div(3, 0.0);
  ShardFilterOptions o;
  o.robust = false;
  o.heterogeneity_parameters = {0};
  o.parameter_ranges = {4.0, 4.0};
  // Wide shard posteriors that agree, near 0 (an exponent): the CV of the means is about 6,
  // above max_parameter_cv, but Q is about 0.5 on 2 degrees of freedom, so the CV rule warns
  // and combines instead of aborting.
  const auto agree = Shards({0.0, 0.3, -0.2}, {0.5, 0.5, 0.5});
  const auto cv_rule = FilterShards(agree, div, kNames, o);
  ASSERT_EQ(cv_rule.parameter_cv.size(), 1u);
  EXPECT_GT(cv_rule.parameter_cv[0], o.max_parameter_cv);
  ASSERT_EQ(cv_rule.warnings.size(), 1u);
  EXPECT_NE(cv_rule.warnings[0].find("agree within their posterior sds"), std::string::npos);
  o.scatter_rule = true;
  const auto a = FilterShards(agree, div, kNames, o);
  ASSERT_EQ(a.parameter_q.size(), 1u);
  EXPECT_LT(a.parameter_q[0], 2.0);
  EXPECT_TRUE(a.warnings.empty());
  // Narrow shards far apart: Q about 800, far above χ²(2)'s 0.999 quantile (13.8).
  const auto apart = Shards({1.0, 3.0, 5.0}, {0.1, 0.1, 0.1});
  EXPECT_THROW(FilterShards(apart, div, kNames, o), Error);
  o.heterogeneity_abort = false;
  const auto w = FilterShards(apart, div, kNames, o);
  EXPECT_NEAR(w.parameter_q[0], 800.0, 150.0);
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("Cochran"), std::string::npos);
  // Between the 0.99 and 0.999 quantiles (9.2 and 13.8): a warning, no abort.
  o.heterogeneity_abort = true;
  const auto between = Shards({0.0, 0.0, 4.15}, {1.0, 1.0, 1.0});
  const auto b = FilterShards(between, div, kNames, o);
  EXPECT_GT(b.parameter_q[0], 9.21);
  EXPECT_LT(b.parameter_q[0], 13.8);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("p < 0.01"), std::string::npos);
}

}  // namespace
}  // namespace homodyne::cmc
