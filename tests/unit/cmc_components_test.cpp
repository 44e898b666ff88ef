// CMC building blocks: priors, bounded transforms, consensus combination.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "cmc/bounded_transform.h"
#include "cmc/consensus.h"
#include "cmc/prior.h"
#include "core/errors.h"
#include "core/random.h"

namespace homodyne::cmc {
namespace {

double CentralDifference(const std::function<double(double)>& f, double x, double h) {
  return (f(x + h) - f(x - h)) / (2.0 * h);
}

TEST(Prior, LogDensitiesMatchClosedFormsUpToConstants) {
  // Differences of log densities cancel the constants.
  const Prior normal{PriorType::kNormal, 1.0, 2.0};
  EXPECT_NEAR(normal.LogDensity(3.0) - normal.LogDensity(1.0), -0.5, 1e-15);
  const Prior lognormal{PriorType::kLogNormal, 0.5, 0.7};
  auto ln_pdf = [](double x) {
    return std::exp(-std::pow(std::log(x) - 0.5, 2) / (2 * 0.49)) /
           (x * 0.7 * std::sqrt(2 * std::numbers::pi));
  };
  EXPECT_NEAR(lognormal.LogDensity(2.0) - lognormal.LogDensity(0.8),
              std::log(ln_pdf(2.0)) - std::log(ln_pdf(0.8)), 1e-12);
  const Prior half{PriorType::kHalfNormal, 0.0, 0.3};
  EXPECT_EQ(half.LogDensity(-0.1), -std::numeric_limits<double>::infinity());
  const Prior trunc{PriorType::kTruncatedNormal, 0.2, 0.1, 0.0, 0.5};
  EXPECT_EQ(trunc.LogDensity(0.6), -std::numeric_limits<double>::infinity());
  EXPECT_NEAR(trunc.LogDensity(0.3) - trunc.LogDensity(0.2), -0.5, 1e-14);
  // BetaScaled with mean/sd of Beta(2, 5) on [0, 1].
  const double m = 2.0 / 7.0, v = 10.0 / (49.0 * 8.0);
  const Prior beta{PriorType::kBetaScaled, m, std::sqrt(v), 0.0, 1.0};
  beta.Validate("beta test");
  EXPECT_NEAR(beta.LogDensity(0.4) - beta.LogDensity(0.2),
              std::log(0.4 / 0.2) + 4.0 * std::log(0.6 / 0.8), 1e-10);
}

TEST(Prior, DerivativesMatchFiniteDifferencesAndTemperingDivides) {
  const Prior priors[] = {{PriorType::kNormal, 1.0, 2.0},
                          {PriorType::kTruncatedNormal, 0.3, 0.2, 0.0, 1.0},
                          {PriorType::kLogNormal, 0.1, 0.5},
                          {PriorType::kHalfNormal, 0.0, 1.5},
                          {PriorType::kBetaScaled, 0.4, 0.1, 0.0, 2.0},
                          {PriorType::kUniform, 0.0, 1.0, -1.0, 1.0}};
  for (Prior p : priors) {
    for (double x : {0.25, 0.6, 0.9}) {
      const double fd = CentralDifference([&](double y) { return p.LogDensity(y); }, x, 1e-6);
      EXPECT_NEAR(p.DLogDensity(x), fd, 1e-6 * (1.0 + std::abs(fd)))
          << ToString(p.type) << " " << x;
      Prior t = p;
      t.temper = 4.0;
      EXPECT_NEAR(t.LogDensity(x), p.LogDensity(x) / 4.0, 1e-15);
      EXPECT_NEAR(t.DLogDensity(x), p.DLogDensity(x) / 4.0, 1e-15);
    }
  }
}

TEST(Prior, BadParametersAreRejected) {
  EXPECT_THROW((Prior{PriorType::kNormal, 0.0, -1.0}.Validate("x")), Error);
  EXPECT_THROW((Prior{PriorType::kUniform, 0.0, 1.0, 1.0, 1.0}.Validate("x")), Error);
  EXPECT_THROW((Prior{PriorType::kBetaScaled, 0.5, 0.9, 0.0, 1.0}.Validate("x")), Error);
}

TEST(BoundedTransform, RoundTripsAndJacobianMatchesFiniteDifferences) {
  const BoundedTransform transforms[] = {
      BoundedTransform(100.0, 1e5), BoundedTransform(-2.0, 2.0),
      BoundedTransform(0.0, std::numeric_limits<double>::infinity()), BoundedTransform()};
  for (const auto& tr : transforms) {
    for (double u : {-3.0, -0.5, 0.0, 0.7, 4.0}) {
      const double x = tr.ToConstrained(u);
      EXPECT_NEAR(tr.ToUnconstrained(x), u, 1e-9 * (1 + std::abs(u)));
      const double fd = CentralDifference([&](double v) { return tr.ToConstrained(v); }, u, 1e-6);
      EXPECT_NEAR(tr.DxDu(u), fd, 1e-6 * (1.0 + std::abs(fd)));
      EXPECT_NEAR(tr.LogJacobian(u), std::log(tr.DxDu(u)), 1e-12);
      const double fdj = CentralDifference([&](double v) { return tr.LogJacobian(v); }, u, 1e-5);
      EXPECT_NEAR(tr.DLogJacobian(u), fdj, 1e-7);
    }
  }
  EXPECT_THROW(BoundedTransform(1.0, 1.0), Error);
}

// K Gaussian shard posteriors N(μ_s, Σ_s) sampled exactly: the per-shard weights give the
// product-of-Gaussians mean and covariance within Monte-Carlo error.
TEST(Consensus, GaussianShardsCombineToTheProductOfGaussians) {
  const int n = 20000;
  const double mus[3][2] = {{1.0, -1.0}, {1.4, -0.6}, {0.8, -1.2}};
  const double sds[3][2] = {{1.0, 0.5}, {0.8, 0.7}, {1.2, 0.4}};
  const double rho = 0.6;
  std::vector<ShardDraws> shards;
  double prec[2][2] = {{0, 0}, {0, 0}}, weighted[2] = {0, 0};
  for (int s = 0; s < 3; ++s) {
    CounterRng rng(17, static_cast<std::uint64_t>(s), 0);
    ShardDraws d;
    d.dims = 2;
    for (int j = 0; j < n; ++j) {
      const double z1 = rng.Normal(), z2 = rng.Normal();
      d.draws.push_back(mus[s][0] + sds[s][0] * z1);
      d.draws.push_back(mus[s][1] + sds[s][1] * (rho * z1 + std::sqrt(1 - rho * rho) * z2));
    }
    shards.push_back(d);
    // Analytic precision of shard s.
    const double a = sds[s][0] * sds[s][0], c = sds[s][1] * sds[s][1],
                 b = rho * sds[s][0] * sds[s][1];
    const double det = a * c - b * b;
    const double p[2][2] = {{c / det, -b / det}, {-b / det, a / det}};
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 2; ++k) prec[i][k] += p[i][k];
      weighted[i] += p[i][0] * mus[s][0] + p[i][1] * mus[s][1];
    }
  }
  const double det = prec[0][0] * prec[1][1] - prec[0][1] * prec[1][0];
  const double cov[2][2] = {{prec[1][1] / det, -prec[0][1] / det},
                            {-prec[1][0] / det, prec[0][0] / det}};
  const double mean[2] = {cov[0][0] * weighted[0] + cov[0][1] * weighted[1],
                          cov[1][0] * weighted[0] + cov[1][1] * weighted[1]};
  const ConsensusResult r = CombineConsensus(shards, ConsensusShape::kPerShard);
  ASSERT_EQ(r.draws.size(), static_cast<std::size_t>(2 * n));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(r.mean[static_cast<std::size_t>(i)], mean[i], 5.0 * std::sqrt(cov[i][i] / n));
    EXPECT_NEAR(r.covariance[static_cast<std::size_t>(3 * i)], cov[i][i], 0.05 * cov[i][i]);
  }
  EXPECT_NEAR(r.covariance[1], cov[0][1], 0.05 * std::sqrt(cov[0][0] * cov[1][1]));
}

// Shard s drawn from N(μ_s, R(ε_s)·diag(a, b)·R(ε_s)ᵀ), R a rotation by ε_s.
ShardDraws RotatedGaussianShard(int s, int n, double mu, double eps, double a, double b) {
  CounterRng rng(23, static_cast<std::uint64_t>(s), 0);
  ShardDraws d;
  d.dims = 2;
  for (int j = 0; j < n; ++j) {
    const double u = std::sqrt(a) * rng.Normal(), v = std::sqrt(b) * rng.Normal();
    d.draws.push_back(mu + std::cos(eps) * u - std::sin(eps) * v);
    d.draws.push_back(mu + std::sin(eps) * u + std::cos(eps) * v);
  }
  return d;
}

// Shards whose covariances are proportional (Σ_s = c_s Σ, here the halves and sixth of the
// data: c = 2, 3, 6): both weightings are the product of Gaussians, covariance
// Σ / Σ_s(1/c_s) = Σ, and precision-weighted means.
TEST(Consensus, ProportionalShardsGiveTheProductUnderBothWeightings) {
  const int n = 20000;
  const double c[3] = {2.0, 3.0, 6.0}, mu[3] = {1.0, 2.0, 4.0};
  std::vector<ShardDraws> shards;
  for (int s = 0; s < 3; ++s) {
    shards.push_back(RotatedGaussianShard(s, n, mu[s], 0.5, 4.0 * c[s], 0.25 * c[s]));
  }
  const double mean = (mu[0] / c[0] + mu[1] / c[1] + mu[2] / c[2]);  // Σ 1/c_s = 1
  // Σ = R(0.5) diag(4, 0.25) R(0.5)ᵀ.
  const double cs = std::cos(0.5), sn = std::sin(0.5);
  const double sxx = 4.0 * cs * cs + 0.25 * sn * sn, syy = 4.0 * sn * sn + 0.25 * cs * cs;
  const double sxy = (4.0 - 0.25) * cs * sn;
  for (ConsensusShape shape : {ConsensusShape::kPooled, ConsensusShape::kPerShard}) {
    const ConsensusResult r = CombineConsensus(shards, shape);
    EXPECT_NEAR(r.mean[0], mean, 0.03);
    EXPECT_NEAR(r.mean[1], mean, 0.03);
    EXPECT_NEAR(r.covariance[0], sxx, 0.04 * sxx);
    EXPECT_NEAR(r.covariance[3], syy, 0.04 * syy);
    EXPECT_NEAR(r.covariance[1], sxy, 0.04 * std::sqrt(sxx * syy));
  }
}

// Three exchangeable shards of a near-degenerate ridge (sds 1.73 along it and 1.7e-3
// across, as a shard of 3 holds; correlation 0.999 999), whose Gaussian fits differ in
// orientation by ±0.02 rad (what the curvature of the ridge and a few tens of effective
// draws do to a sample covariance). The product of the three per-shard Gaussians is
// pinned along the ridge by the others' narrow directions: sd ≈ 0.1 instead of 1.
// Parameter by parameter the consensus keeps the full-data width, 1.73/√3 = 1, along it.
TEST(Consensus, PooledShapeKeepsTheWidthAlongARidge) {
  const int n = 20000;
  const double eps[3] = {-0.02, 0.0, 0.02};
  std::vector<ShardDraws> shards;
  for (int s = 0; s < 3; ++s) shards.push_back(RotatedGaussianShard(s, n, 0.0, eps[s], 3.0, 3e-6));
  const ConsensusResult per_shard = CombineConsensus(shards, ConsensusShape::kPerShard);
  EXPECT_LT(std::sqrt(per_shard.covariance[0]), 0.3);
  const ConsensusResult pooled = CombineConsensus(shards, ConsensusShape::kPooled);
  EXPECT_NEAR(std::sqrt(pooled.covariance[0]), 1.0, 0.03);
  // In y each shard weighs 1/its variance of y: the rotated shards' sin²ε·3 makes them
  // count far less there than the unrotated one.
  const double sn = std::sin(0.02), cs = std::cos(0.02);
  const double v_rot = 3.0 * sn * sn + 3e-6 * cs * cs;
  const double var_y = 1.0 / (2.0 / v_rot + 1.0 / 3e-6);
  EXPECT_NEAR(pooled.covariance[3], var_y, 0.05 * var_y);
}

// Random shards hold the same angles and lags but not the same information in every
// direction: here three shards of one 6-parameter posterior agree in five directions and
// shard 2 is 3x wider (in sd) along a ridge of parameters 0 and 1 (at 45°, correlation
// 0.9998). The full-data posterior along the ridge is the product of the three,
// variance 1/(1/3 + 1/3 + 1/27) = 1.42, and so is the consensus with per-coordinate
// precisions. One scalar precision per shard (the rule before: κ_s ∝ det(Σ̂_s)^(−1/6), which
// a width in one direction of six barely changes) averaged the variances instead: 2.62,
// sd 1.36x.
TEST(Consensus, RandomShardsAddPrecisionsPerParameter) {
  const int n = 20000, d = 6;
  const double along[3] = {3.0, 3.0, 27.0}, across = 3e-4, other = 3.0;
  std::vector<ShardDraws> shards;
  for (int s = 0; s < 3; ++s) {
    CounterRng rng(29, static_cast<std::uint64_t>(s), 0);
    ShardDraws draws;
    draws.dims = d;
    for (int j = 0; j < n; ++j) {
      const double u = std::sqrt(along[s]) * rng.Normal(), v = std::sqrt(across) * rng.Normal();
      draws.draws.push_back((u - v) / std::sqrt(2.0));
      draws.draws.push_back((u + v) / std::sqrt(2.0));
      for (int k = 2; k < d; ++k) draws.draws.push_back(std::sqrt(other) * rng.Normal());
    }
    shards.push_back(draws);
  }
  const ConsensusResult r = CombineConsensus(shards, ConsensusShape::kPooled);
  const auto c = [&](int i, int k) { return r.covariance[static_cast<std::size_t>(i * d + k)]; };
  const double var_along = 0.5 * (c(0, 0) + c(1, 1) + 2.0 * c(0, 1));
  const double var_across = 0.5 * (c(0, 0) + c(1, 1) - 2.0 * c(0, 1));
  const double product_along = 1.0 / (1.0 / 3.0 + 1.0 / 3.0 + 1.0 / 27.0);
  EXPECT_NEAR(var_along, product_along, 0.05 * product_along);
  // Across the ridge the shards are alike (product: across/3) but weigh as along it, by
  // w_s ∝ 2/(along_s + across) on both parameters: Σ w_s²·across / (Σ w_s)², 1.35x the
  // product's variance (the cost of per-coordinate weights, docs/cmc.md step 8).
  double w_sum = 0.0, w2_sum = 0.0;
  for (const double a : along) {
    w_sum += 2.0 / (a + across);
    w2_sum += 4.0 / ((a + across) * (a + across));
  }
  const double rule_across = w2_sum * across / (w_sum * w_sum);
  EXPECT_NEAR(var_across, rule_across, 0.05 * rule_across);
  for (int k = 2; k < d; ++k) EXPECT_NEAR(c(k, k), other / 3.0, 0.05 * other / 3.0);
}

TEST(Consensus, DegenerateShardIsRejected) {
  ShardDraws flat{2, std::vector<double>(20, 1.0)};
  EXPECT_THROW(CombineConsensus({flat}), Error);
  EXPECT_THROW(CombineConsensus({}), Error);
}

}  // namespace
}  // namespace homodyne::cmc
