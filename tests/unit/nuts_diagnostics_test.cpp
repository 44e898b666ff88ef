// Diagnostics on synthetic draws with known properties (iid and AR(1) sequences).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/random.h"
#include "nuts/diagnostics.h"

namespace homodyne::nuts {
namespace {

// AR(1): x_t = φ x_{t−1} + √(1 − φ²) ε_t, stationary N(0, 1); its integrated
// autocorrelation time is (1 + φ)/(1 − φ).
Chains Ar1(int num_chains, int n, double phi, std::uint64_t seed) {
  Chains chains;
  for (int c = 0; c < num_chains; ++c) {
    CounterRng rng(seed, 0, c);
    std::vector<double> x(n);
    double prev = rng.Normal();
    for (int t = 0; t < n; ++t) {
      prev = phi * prev + std::sqrt(1.0 - phi * phi) * rng.Normal();
      x[t] = prev;
    }
    chains.push_back(std::move(x));
  }
  return chains;
}

TEST(NutsDiagnostics, SplitDropsMiddleDraw) {
  const Chains split = SplitChains({{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}});
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[0], (std::vector<double>{1, 2}));
  EXPECT_EQ(split[1], (std::vector<double>{4, 5}));
  EXPECT_EQ(split[3], (std::vector<double>{9, 10}));
}

TEST(NutsDiagnostics, RankNormalizationAveragesTies) {
  // Pooled 1, 2, 2, 3 → ranks 1, 2.5, 2.5, 4; (r − 3/8)/(4 + 1/4).
  const Chains z = RankNormalize({{1.0, 2.0}, {2.0, 3.0}});
  EXPECT_NEAR(z[0][1], 0.0, 1e-12);  // (2.5 − 0.375)/4.25 = 0.5
  EXPECT_NEAR(z[1][0], 0.0, 1e-12);
  EXPECT_NEAR(z[0][0], -z[1][1], 1e-12);
  // Φ⁻¹(0.625/4.25 = 0.147058…) ≈ −1.0491 (normal table).
  EXPECT_NEAR(z[0][0], -1.0491, 1e-3);
}

TEST(NutsDiagnostics, QuantileInterpolates) {
  EXPECT_DOUBLE_EQ(PooledQuantile({{4, 1}, {3, 2}}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(PooledQuantile({{4, 1}, {3, 2}}, 1.0), 4.0);
}

TEST(NutsDiagnostics, IidDrawsHaveRhatOneAndFullEss) {
  const Chains x = Ar1(4, 2000, 0.0, 1);
  const RhatResult rhat = SplitRankNormalizedRhat(x);
  EXPECT_LT(rhat.Max(), 1.01);
  EXPECT_GT(rhat.bulk, 0.99);
  const EssResult ess = SplitRankNormalizedEss(x);
  EXPECT_NEAR(ess.bulk / 8000.0, 1.0, 0.15);
  EXPECT_NEAR(ess.tail / 8000.0, 1.0, 0.3);
  EXPECT_NEAR(Ess(SplitChains(x)) / 8000.0, 1.0, 0.15);
  // MCSE of the mean of 8000 iid N(0,1) draws is 1/√8000; of the sd, 1/√16000.
  EXPECT_NEAR(McseMean(x) * std::sqrt(8000.0), 1.0, 0.1);
  EXPECT_NEAR(McseSd(x) * std::sqrt(16000.0), 1.0, 0.15);
}

TEST(NutsDiagnostics, Ar1EssMatchesTheory) {
  const double phi = 0.9;
  const Chains x = Ar1(4, 5000, phi, 2);
  const double expected = 20000.0 * (1.0 - phi) / (1.0 + phi);
  EXPECT_NEAR(Ess(SplitChains(x)) / expected, 1.0, 0.2);
  EXPECT_NEAR(SplitRankNormalizedEss(x).bulk / expected, 1.0, 0.2);
  // MCSE of the mean grows by √τ.
  EXPECT_NEAR(McseMean(x) / std::sqrt(1.0 / expected), 1.0, 0.15);
}

TEST(NutsDiagnostics, RhatDetectsShiftedChainAndTrend) {
  Chains x = Ar1(4, 1000, 0.0, 3);
  for (double& v : x[2]) v += 2.0;
  EXPECT_GT(SplitRankNormalizedRhat(x).bulk, 1.1);

  // Every chain drifts the same way: classic R̂ on whole chains misses it, split R̂ sees it.
  Chains trend = Ar1(4, 1000, 0.0, 4);
  for (auto& chain : trend) {
    for (std::size_t t = 0; t < chain.size(); ++t) chain[t] += 3.0 * t / chain.size();
  }
  EXPECT_LT(Rhat(trend), 1.02);
  EXPECT_GT(SplitRankNormalizedRhat(trend).bulk, 1.1);
}

TEST(NutsDiagnostics, TailRhatDetectsScaleDifference) {
  Chains x = Ar1(4, 1000, 0.0, 5);
  for (double& v : x[0]) v *= 4.0;
  const RhatResult rhat = SplitRankNormalizedRhat(x);
  EXPECT_GT(rhat.tail, 1.05);
  EXPECT_GT(rhat.tail, rhat.bulk);
}

TEST(NutsDiagnostics, DegenerateInputsGiveNaN) {
  EXPECT_TRUE(std::isnan(Ess({{1.0, 1.0, 1.0, 1.0, 1.0}})));
  EXPECT_TRUE(std::isnan(Ess({{1.0, 2.0, 3.0}})));
  EXPECT_TRUE(std::isnan(Rhat({{1.0, 2.0}, {1.0, std::nan("")}})));
  EXPECT_TRUE(std::isnan(RankNormalize({{1.0, INFINITY}})[0][0]));
}

}  // namespace
}  // namespace homodyne::nuts
