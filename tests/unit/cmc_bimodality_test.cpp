// Bimodal shard posteriors: the two-Gaussian EM finds two separated modes and their
// weights, a unimodal sample is not called bimodal, and a parameter is flagged when at
// least 5 % of the shards hold two modes.
#include <gtest/gtest.h>

#include <random>

#include "cmc/bimodality.h"

namespace homodyne::cmc {
namespace {

std::vector<double> Sample(int n, double w_upper, double lo, double hi, double sd,
                           std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x;
  for (int i = 0; i < n; ++i) x.push_back((u(rng) < w_upper ? hi : lo) + sd * z(rng));
  return x;
}

TEST(CmcBimodality, TwoSeparatedModesAreFoundWithTheirWeights) {
  const std::vector<double> x = Sample(4000, 0.35, 19000.0, 32000.0, 1000.0, 1);
  const TwoGaussians m = FitTwoGaussians(x);
  EXPECT_NEAR(m.mean[0], 19000.0, 150.0);
  EXPECT_NEAR(m.mean[1], 32000.0, 150.0);
  EXPECT_NEAR(m.weight[1], 0.35, 0.03);
  EXPECT_NEAR(std::sqrt(m.variance[0]), 1000.0, 100.0);
  EXPECT_TRUE(IsBimodal(m, 0.2, 0.5));
  // A minor mode below the weight threshold, or modes too close, are not bimodal.
  EXPECT_FALSE(
      IsBimodal(FitTwoGaussians(Sample(4000, 0.1, 19000.0, 32000.0, 1000.0, 2)), 0.2, 0.5));
  EXPECT_FALSE(IsBimodal(m, 0.2, 0.6));  // separation 13000/25500 ≈ 0.51
}

TEST(CmcBimodality, UnimodalAndDegenerateSamplesAreNotBimodal) {
  EXPECT_FALSE(IsBimodal(FitTwoGaussians(Sample(4000, 0.0, 1000.0, 0.0, 30.0, 3)), 0.2, 0.5));
  const TwoGaussians flat = FitTwoGaussians(std::vector<double>(50, 7.0));
  EXPECT_EQ(flat.weight[0], 1.0);
  EXPECT_FALSE(IsBimodal(flat, 0.2, 0.5));
  EXPECT_FALSE(IsBimodal(FitTwoGaussians(std::vector<double>{1.0, 2.0}), 0.2, 0.5));
}

TEST(CmcBimodality, AParameterIsFlaggedWhenEnoughShardsHoldTwoModes) {
  // 20 shards of (D0, alpha): shard 7 bimodal in D0 (1 of 20 = 5 %), alpha never.
  std::vector<ShardDraws> shards;
  for (int s = 0; s < 20; ++s) {
    const std::vector<double> d0 = s == 7 ? Sample(600, 0.5, 19000.0, 32000.0, 800.0, 10 + s)
                                          : Sample(600, 0.0, 25000.0, 0.0, 800.0, 10 + s);
    const std::vector<double> alpha = Sample(600, 0.0, -0.5, 0.0, 0.01, 100 + s);
    ShardDraws d{2, {}};
    for (int j = 0; j < 600; ++j) {
      d.draws.push_back(d0[j]);
      d.draws.push_back(alpha[j]);
    }
    shards.push_back(d);
  }
  const auto r = DetectBimodality(shards, {"D0", "alpha"}, {"D0", "alpha", "beta"}, 0.2, 0.5);
  ASSERT_EQ(r.size(), 2u);  // beta is not sampled
  EXPECT_EQ(r[0].name, "D0");
  EXPECT_EQ(r[0].shards_tested, 20);
  EXPECT_EQ(r[0].bimodal_shards, std::vector<int>{7});
  EXPECT_TRUE(r[0].flagged);
  EXPECT_NEAR(r[0].lower_mode, 19000.0, 300.0);
  EXPECT_NEAR(r[0].upper_mode, 32000.0, 300.0);
  EXPECT_EQ(r[1].name, "alpha");
  EXPECT_TRUE(r[1].bimodal_shards.empty());
  EXPECT_FALSE(r[1].flagged);
  // One in 21 shards is below 5 %.
  shards.push_back(shards[0]);
  EXPECT_FALSE(DetectBimodality(shards, {"D0", "alpha"}, {"D0"}, 0.2, 0.5)[0].flagged);
}

}  // namespace
}  // namespace homodyne::cmc
