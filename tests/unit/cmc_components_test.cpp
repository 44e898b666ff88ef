// CMC building blocks: priors, bounded transforms, consensus combination.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "cmc/bounded_transform.h"
#include "cmc/consensus.h"
#include "cmc/prior.h"
#include "core/error.h"
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

TEST(Prior, TypesParseAndBadParametersAreRejected) {
  EXPECT_EQ(ParsePriorType("TruncatedNormal"), PriorType::kTruncatedNormal);
  EXPECT_EQ(ParsePriorType("halfnormal"), PriorType::kHalfNormal);
  EXPECT_THROW(ParsePriorType("Cauchy"), Error);
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

// K Gaussian shard posteriors N(μ_s, Σ_s) sampled exactly: the combination has the
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
  const ConsensusResult r = CombineConsensus(shards);
  ASSERT_EQ(r.draws.size(), static_cast<std::size_t>(2 * n));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(r.mean[static_cast<std::size_t>(i)], mean[i], 5.0 * std::sqrt(cov[i][i] / n));
    EXPECT_NEAR(r.covariance[static_cast<std::size_t>(3 * i)], cov[i][i], 0.05 * cov[i][i]);
  }
  EXPECT_NEAR(r.covariance[1], cov[0][1], 0.05 * std::sqrt(cov[0][0] * cov[1][1]));
}

TEST(Consensus, DegenerateShardIsRejected) {
  ShardDraws flat{2, std::vector<double>(20, 1.0)};
  EXPECT_THROW(CombineConsensus({flat}), Error);
  EXPECT_THROW(CombineConsensus({}), Error);
}

}  // namespace
}  // namespace homodyne::cmc
