// Bimodal shard posteriors: the two-Gaussian EM finds two separated modes and their
// weights; a skewed single mode that passes homodyne's two-Gaussian screen is not two modes
// (kernel-density trough, BIC against a skew-normal); two modes seen by one chain only are
// not confirmed unless another shard holds them; a parameter is flagged when at least 5 % of
// the shards hold two confirmed modes.
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
    for (int j = 0; j < 600; ++j) {  // 4 chains of 150, each holding both modes
      d.draws.push_back(d0[j]);
      d.draws.push_back(alpha[j]);
    }
    shards.push_back(d);
  }
  const auto r = DetectBimodality(shards, {"D0", "alpha"}, {"D0", "alpha", "beta"}, 0.2, 0.5, 4);
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
  EXPECT_FALSE(DetectBimodality(shards, {"D0", "alpha"}, {"D0"}, 0.2, 0.5, 4)[0].flagged);
}

// n draws of a log-normal: one mode, skewed to the right (skewness ≈ 2.9 at s = 0.7). With
// rho > 0 the underlying normal is an AR(1) walk: autocorrelated, MCMC-like draws.
std::vector<double> LogNormal(int n, double scale, double s, std::uint64_t seed, double rho = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> x;
  double e = z(rng);
  for (int i = 0; i < n; ++i) {
    e = rho * e + std::sqrt(1.0 - rho * rho) * z(rng);
    x.push_back(scale * std::exp(s * e));
  }
  return x;
}

// n autocorrelated draws that stay near lo or hi, switching with probability `hop` per draw
// (an AR(1) walk of correlation 0.9 and marginal sd `sd` around the current mode).
std::vector<double> Hopping(int n, double hop, double lo, double hi, double sd,
                            std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x;
  bool upper = u(rng) < 0.5;
  double e = 0.0;
  for (int i = 0; i < n; ++i) {
    if (u(rng) < hop) upper = !upper;
    e = 0.9 * e + std::sqrt(1.0 - 0.81) * sd * z(rng);
    x.push_back((upper ? hi : lo) + e);
  }
  return x;
}

TEST(CmcBimodality, ASkewedSingleModeThatPassesTheScreenIsNotTwoModes) {
  // 4 chains of 500 draws of a wide, right-skewed single mode (issue #38's D_offset shape).
  for (std::uint64_t seed : {21u, 22u, 23u, 24u}) {
    const std::vector<double> x = LogNormal(2000, 100.0, 0.7, seed);
    const ModeTest t = TestTwoModes(x, 4, 0.2, 0.5);
    EXPECT_TRUE(t.screen) << "seed " << seed << ": homodyne's screen alone would split it";
    EXPECT_FALSE(t.two_modes) << "seed " << seed << ": dip " << t.dip_ratio << ", ΔBIC "
                              << t.delta_bic;
  }
  // The same with autocorrelated draws (the chains' ESS is what counts).
  const ModeTest t = TestTwoModes(LogNormal(2000, 100.0, 0.7, 25, 0.9), 4, 0.2, 0.5);
  EXPECT_TRUE(t.screen);
  EXPECT_FALSE(t.two_modes) << "dip " << t.dip_ratio << ", ΔBIC " << t.delta_bic;
  // And through the detector: screened, neither two modes nor flagged.
  std::vector<ShardDraws> shards;
  for (int s = 0; s < 3; ++s) {
    shards.push_back({1, LogNormal(2000, 100.0, 0.7, 30 + static_cast<std::uint64_t>(s))});
  }
  const auto r = DetectBimodality(shards, {"D_offset"}, {"D_offset"}, 0.2, 0.5, 4);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].screened_shards.size(), 3u);
  EXPECT_TRUE(r[0].bimodal_shards.empty());
  EXPECT_TRUE(r[0].unconfirmed_shards.empty());
  EXPECT_FALSE(r[0].flagged);
}

TEST(CmcBimodality, TwoSeparatedModesSeenByEveryChainAreConfirmed) {
  const std::vector<double> x = Sample(2000, 0.4, 18000.0, 32000.0, 1500.0, 41);
  const ModeTest t = TestTwoModes(x, 4, 0.2, 0.5);
  EXPECT_TRUE(t.screen);
  EXPECT_LT(t.dip_ratio, kMaxDipRatio);
  EXPECT_GT(t.trough, 18000.0);
  EXPECT_LT(t.trough, 32000.0);
  EXPECT_GT(t.delta_bic, 0.0);
  EXPECT_TRUE(t.two_modes);
  EXPECT_EQ(t.chains_lower, 4);
  EXPECT_EQ(t.chains_upper, 4);
  EXPECT_TRUE(t.confirmed_by_chains());
  // Autocorrelated chains that hop between the modes: fewer effective draws, the same
  // verdict.
  std::vector<double> y;
  for (std::uint64_t c = 0; c < 4; ++c) {
    const std::vector<double> chain = Hopping(500, 0.02, 18000.0, 32000.0, 1500.0, 42 + c);
    y.insert(y.end(), chain.begin(), chain.end());
  }
  const ModeTest c = TestTwoModes(y, 4, 0.2, 0.5);
  EXPECT_LT(c.effective_draws, 1000.0);
  EXPECT_TRUE(c.confirmed_by_chains()) << "dip " << c.dip_ratio << ", ΔBIC " << c.delta_bic;
}

TEST(CmcBimodality, ModesSeenByOneChainOnlyNeedAnotherShard) {
  // Chains 1–3 in the lower mode, chain 0 alone in the upper one.
  std::vector<double> x = Sample(500, 1.0, 0.0, 32000.0, 1500.0, 51);
  for (std::uint64_t c = 1; c < 4; ++c) {
    const std::vector<double> lower = Sample(500, 0.0, 18000.0, 0.0, 1500.0, 51 + c);
    x.insert(x.end(), lower.begin(), lower.end());
  }
  const ModeTest t = TestTwoModes(x, 4, 0.2, 0.5);
  EXPECT_TRUE(t.two_modes) << "dip " << t.dip_ratio << ", ΔBIC " << t.delta_bic;
  EXPECT_EQ(t.chains_lower, 3);
  EXPECT_EQ(t.chains_upper, 1);
  EXPECT_FALSE(t.confirmed_by_chains());
  // Alone (beside unimodal shards) it is reported, not flagged.
  std::vector<ShardDraws> shards{{1, x}, {1, Sample(2000, 0.0, 18000.0, 0.0, 1500.0, 60)}};
  auto r = DetectBimodality(shards, {"D0"}, {"D0"}, 0.2, 0.5, 4);
  EXPECT_EQ(r[0].unconfirmed_shards, std::vector<int>{0});
  EXPECT_TRUE(r[0].bimodal_shards.empty());
  EXPECT_FALSE(r[0].flagged);
  // Another shard whose chains hold the same two modes confirms it (and is confirmed).
  shards.push_back({1, Sample(2000, 0.5, 18000.0, 32000.0, 1500.0, 61)});
  r = DetectBimodality(shards, {"D0"}, {"D0"}, 0.2, 0.5, 4, {10, 11, 12});
  EXPECT_EQ(r[0].bimodal_shards, (std::vector<int>{10, 12}));
  EXPECT_TRUE(r[0].unconfirmed_shards.empty());
  EXPECT_TRUE(r[0].flagged);
  // Modes on other sides do not confirm: a second shard bimodal elsewhere.
  shards[2] = {1, Sample(2000, 0.5, 40000.0, 70000.0, 1500.0, 62)};
  r = DetectBimodality(shards, {"D0"}, {"D0"}, 0.2, 0.5, 1);
  EXPECT_EQ(r[0].unconfirmed_shards, (std::vector<int>{0, 2}));
  EXPECT_FALSE(r[0].flagged);
}

TEST(CmcBimodality, ShardsAboveTheDivergenceRateAreNotTested) {
  // Two shards holding the same two modes confirm each other; when one of them diverged
  // above the rate its chains do not count, and the other's modes stay unconfirmed
  // (one chain sees the upper mode).
  std::vector<double> x = Sample(500, 1.0, 0.0, 32000.0, 1500.0, 71);
  for (std::uint64_t c = 1; c < 4; ++c) {
    const std::vector<double> lower = Sample(500, 0.0, 18000.0, 0.0, 1500.0, 71 + c);
    x.insert(x.end(), lower.begin(), lower.end());
  }
  const std::vector<ShardDraws> shards{{1, x},
                                       {1, Sample(2000, 0.5, 18000.0, 32000.0, 1500.0, 75)}};
  auto r = DetectBimodality(DrawsOfSampledShards(shards, {0.02, 0.10}, 0.10), {"D0"}, {"D0"}, 0.2,
                            0.5, 4);
  EXPECT_EQ(r[0].shards_tested, 2);
  EXPECT_EQ(r[0].bimodal_shards, (std::vector<int>{0, 1}));
  r = DetectBimodality(DrawsOfSampledShards(shards, {0.02, 0.25}, 0.10), {"D0"}, {"D0"}, 0.2, 0.5,
                       4);
  EXPECT_EQ(r[0].shards_tested, 1);
  EXPECT_TRUE(r[0].bimodal_shards.empty());
  EXPECT_EQ(r[0].unconfirmed_shards, std::vector<int>{0});
  EXPECT_FALSE(r[0].flagged);
}

TEST(CmcBimodality, SkewNormalFitRecoversItsParameters) {
  // Skew-normal draws by δ|Z0| + √(1 − δ²)Z1 (shape 4, location 10, scale 3).
  std::mt19937_64 rng(71);
  std::normal_distribution<double> z(0.0, 1.0);
  const double shape = 4.0, delta = shape / std::sqrt(1.0 + shape * shape);
  std::vector<double> x;
  for (int i = 0; i < 20000; ++i) {
    x.push_back(10.0 + 3.0 * (delta * std::abs(z(rng)) + std::sqrt(1.0 - delta * delta) * z(rng)));
  }
  const SkewNormal s = FitSkewNormal(x);
  EXPECT_NEAR(s.location, 10.0, 0.1);
  EXPECT_NEAR(s.scale, 3.0, 0.1);
  EXPECT_NEAR(s.shape, 4.0, 0.6);
  // Its log-likelihood is the sum of the log density at the fit.
  double ll = 0.0;
  for (double v : x) {
    const double u = (v - s.location) / s.scale;
    ll += std::log(2.0 / s.scale) - 0.5 * u * u - 0.5 * std::log(2.0 * M_PI) +
          std::log(0.5 * std::erfc(-s.shape * u / std::sqrt(2.0)));
  }
  EXPECT_NEAR(s.log_likelihood, ll, 1e-6 * std::abs(ll));
}

}  // namespace
}  // namespace homodyne::cmc
