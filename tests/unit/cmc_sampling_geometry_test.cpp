// The CMC shard posterior in changed coordinates: log contrast / c2 at zero lag / log D0
// (sampling_geometry.h), the Laplace whitening and a known σ. Each is the same posterior:
// the log density differs from the plain one by exactly the change's log-Jacobian, the
// gradient matches finite differences, and the whitened Hessian at the mode is ~identity.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cmc/bounded_transform.h"
#include "cmc/sampling_geometry.h"
#include "cmc/shard_posterior.h"
#include "core/random.h"
#include "gradient_check.h"
#include "model/reference_model.h"

namespace homodyne::cmc {
namespace {

// Static, 2 angles, one contrast/offset per angle, 28 times, noise σ = 0.004.
struct Data {
  std::vector<double> t, phi{0.0, 90.0}, values;
  std::vector<model::RowTile> tiles;
  model::Geometry geometry{0.0054, 2e6, 0.1};
  // Optimiser order of the individual layout: contrast_0, contrast_1, offset_0, offset_1,
  // D0, alpha, D_offset.
  std::vector<double> truth{0.25, 0.3, 1.0, 0.98, 30000.0, -0.6, 20.0};
  std::vector<std::string> names{"contrast_0", "contrast_1", "offset_0", "offset_1",
                                 "D0",         "alpha",      "D_offset"};
  std::vector<double> lower{0.0, 0.0, 0.5, 0.5, 100.0, -2.0, -1000.0};
  std::vector<double> upper{1.0, 1.0, 1.5, 1.5, 1e5, 2.0, 1000.0};
  double noise = 0.004;
};

Data MakeData() {
  Data d;
  const int n = 28;
  for (int m = 1; m <= n; ++m) d.t.push_back(0.1 * m);
  model::reference::ModelInput in{model::AnalysisMode::kStatic,
                                  d.geometry,
                                  d.t,
                                  d.phi,
                                  {d.truth[4], d.truth[5], d.truth[6]},
                                  {d.truth[0], d.truth[1]},
                                  {d.truth[2], d.truth[3]}};
  const auto ref = model::reference::Evaluate(in);
  CounterRng rng(21, 0, 0);
  d.values.reserve(static_cast<std::size_t>(n * n));
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      d.tiles.push_back({k, i, i + 1, n - i - 1, d.values.data() + d.values.size(), nullptr, 1.0});
      for (int j = i + 1; j < n; ++j) d.values.push_back(ref.C2(k, i, j) + d.noise * rng.Normal());
    }
  }
  return d;
}

ShardPosteriorSetup BaseSetup(const Data& d) {
  ShardPosteriorSetup setup;
  setup.mode = model::AnalysisMode::kStatic;
  setup.geometry = d.geometry;
  setup.t = d.t;
  setup.phi_deg = d.phi;
  setup.tiles = d.tiles;
  setup.lower = d.lower;
  setup.upper = d.upper;
  setup.priors = {{PriorType::kTruncatedNormal, 0.25, 0.1, 0.0, 1.0},
                  {PriorType::kTruncatedNormal, 0.25, 0.1, 0.0, 1.0},
                  {PriorType::kTruncatedNormal, 1.0, 0.1, 0.5, 1.5},
                  {PriorType::kTruncatedNormal, 1.0, 0.1, 0.5, 1.5},
                  {PriorType::kTruncatedNormal, 20000.0, 20000.0, 100.0, 1e5},
                  {PriorType::kTruncatedNormal, 0.0, 1.0, -2.0, 2.0},
                  {PriorType::kTruncatedNormal, 0.0, 100.0, -1000.0, 1000.0}};
  setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 0.05};
  return setup;
}

model::ParameterLayout Layout() {
  return model::ParameterLayout::Individual(model::AnalysisMode::kStatic, 2);
}

// The geometry on the sites of the base setup: unbounded changed sites, θ's box as walls.
ShardPosteriorSetup GeometrySetup(const Data& d) {
  ShardPosteriorSetup setup = BaseSetup(d);
  setup.sampling_geometry = MakeSamplingGeometry(d.names, d.lower, true, true);
  setup.theta_lower = d.lower;
  setup.theta_upper = d.upper;
  for (int i = 0; i < 7; ++i) {
    if (!setup.sampling_geometry.Changes(i)) continue;
    setup.lower[static_cast<std::size_t>(i)] = -std::numeric_limits<double>::infinity();
    setup.upper[static_cast<std::size_t>(i)] = std::numeric_limits<double>::infinity();
  }
  return setup;
}

void ExpectGradientMatches(const ShardPosterior& post, const std::vector<double>& q) {
  testing::ExpectGradientMatchesFiniteDifferences(post, q, 2e-5);
}

TEST(SamplingGeometry, PairsContrastWithOffsetAndRoundTrips) {
  const Data d = MakeData();
  const SamplingGeometry g = MakeSamplingGeometry(d.names, d.lower, true, true);
  ASSERT_EQ(g.scaling.size(), 2u);
  EXPECT_EQ(g.scaling[0], (std::pair<int, int>{0, 2}));
  EXPECT_EQ(g.scaling[1], (std::pair<int, int>{1, 3}));
  EXPECT_EQ(g.log_d0, 4);
  const auto names = g.SiteNames(d.names);
  EXPECT_EQ(names[0], "log_contrast_0");
  EXPECT_EQ(names[3], "c2_zero_lag_1");
  EXPECT_EQ(names[4], "log_D0");
  const auto sites = g.ToSites(d.truth);
  EXPECT_NEAR(sites[2], d.truth[0] + d.truth[2], 1e-15);
  const auto back = g.ToTheta(sites);
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], d.truth[i], 1e-12 * 3e4);
  // A contrast bound below zero (no log) or D0's lower bound at zero leave them alone.
  std::vector<double> lower = d.lower;
  lower[0] = -0.1;
  lower[4] = 0.0;
  const SamplingGeometry partial = MakeSamplingGeometry(d.names, lower, true, true);
  ASSERT_EQ(partial.scaling.size(), 1u);
  EXPECT_EQ(partial.scaling[0].first, 1);
  EXPECT_EQ(partial.log_d0, -1);
}

// log π(θ) is the same in both coordinate systems: lp(q) − log|∂θ/∂q| agrees.
TEST(SamplingGeometry, SamePosteriorAsThePlainCoordinates) {
  const Data d = MakeData();
  const ShardPosterior plain(BaseSetup(d), Layout());
  const ShardPosterior changed(GeometrySetup(d), Layout());
  const SamplingGeometry g = MakeSamplingGeometry(d.names, d.lower, true, true);
  for (const std::vector<double>& theta :
       {d.truth, std::vector<double>{0.22, 0.33, 1.03, 0.95, 25000.0, -0.5, -40.0},
        std::vector<double>{0.3, 0.27, 0.97, 1.01, 36000.0, -0.7, 60.0}}) {
    const auto qp = plain.ToUnconstrained(theta, 0.005);
    const auto qc = changed.ToUnconstrained(theta, 0.005);
    std::vector<double> grad(8);
    const double lp_plain = plain.LogDensityGradient(qp, grad);
    const double lp_changed = changed.LogDensityGradient(qc, grad);
    // Plain: every θ_i through its box transform; changed: the geometry's log-Jacobian at
    // its positions, the same box transforms elsewhere.
    double lj_plain = 0.0, lj_changed = g.LogJacobian(g.ToSites(theta));
    for (std::size_t i = 0; i < 7; ++i) {
      const BoundedTransform box(d.lower[i], d.upper[i]);
      const double lj = box.LogJacobian(box.ToUnconstrained(theta[i]));
      lj_plain += lj;
      if (!g.Changes(static_cast<int>(i))) lj_changed += lj;
    }
    EXPECT_NEAR(lp_plain - lj_plain, lp_changed - lj_changed, 1e-9 * std::abs(lp_plain));
  }
}

TEST(SamplingGeometry, GradientWithGeometryWhiteningAndKnownSigma) {
  const Data d = MakeData();
  const std::vector<double> theta{0.24, 0.31, 1.01, 0.97, 28000.0, -0.55, 30.0};
  {
    const ShardPosterior post(GeometrySetup(d), Layout());
    ExpectGradientMatches(post, post.ToUnconstrained(theta, 0.0045));
  }
  ShardPosteriorSetup setup = GeometrySetup(d);
  const Whitening w = ShardPosterior(GeometrySetup(d), Layout()).Laplace(d.truth, d.noise);
  ASSERT_FALSE(w.empty());
  setup.whitening = w;
  const ShardPosterior whitened(std::move(setup), Layout());
  const auto q = whitened.ToUnconstrained(theta, 0.0045);
  ExpectGradientMatches(whitened, q);
  const auto back = whitened.ToConstrained(q);
  for (std::size_t i = 0; i < theta.size(); ++i) {
    EXPECT_NEAR(back[i], theta[i], 1e-9 * std::abs(theta[i])) << "parameter " << i;
  }
  // The start of the whitening maps to the origin.
  for (double v : whitened.ToUnconstrained(d.truth, d.noise)) EXPECT_NEAR(v, 0.0, 1e-9);

  ShardPosteriorSetup known = GeometrySetup(d);
  known.known_sigma = 0.0045;
  const ShardPosterior fixed(std::move(known), Layout());
  ASSERT_EQ(fixed.dimension(), 7);
  ExpectGradientMatches(fixed, fixed.ToUnconstrained(theta, 1.0));
  EXPECT_DOUBLE_EQ(fixed.ToConstrained(fixed.ToUnconstrained(theta, 1.0)).back(), 0.0045);
}

// Known σ: the sampled-σ density at σ_known without σ's prior and log-Jacobian.
TEST(SamplingGeometry, KnownSigmaIsTheSampledDensityAtThatSigma) {
  const Data d = MakeData();
  const ShardPosterior sampled(BaseSetup(d), Layout());
  ShardPosteriorSetup setup = BaseSetup(d);
  setup.known_sigma = 0.0042;
  const ShardPosterior fixed(std::move(setup), Layout());
  EXPECT_TRUE(sampled.samples_sigma());
  EXPECT_FALSE(fixed.samples_sigma());
  const auto q = sampled.ToUnconstrained(d.truth, 0.0042);
  std::vector<double> g(8), gf(7);
  const double lp = sampled.LogDensityGradient(q, g);
  const double lpf = fixed.LogDensityGradient(fixed.ToUnconstrained(d.truth, 123.0), gf);
  const Prior sp{PriorType::kHalfNormal, 0.0, 0.05};
  EXPECT_NEAR(lpf, lp - sp.LogDensity(0.0042) - std::log(0.0042), 1e-9 * std::abs(lp));
  for (std::size_t i = 0; i < 7; ++i) EXPECT_NEAR(gf[i], g[i], 1e-9 * (1.0 + std::abs(g[i])));
}

// Whitened by the Laplace covariance at (near) the mode, the posterior's Hessian in the
// sampled coordinates is close to the identity (the Gauss–Newton approximation and the
// noise make it not exact).
TEST(SamplingGeometry, LaplaceWhiteningGivesUnitHessianAtTheMode) {
  const Data d = MakeData();
  ShardPosteriorSetup setup = GeometrySetup(d);
  setup.whitening = ShardPosterior(GeometrySetup(d), Layout()).Laplace(d.truth, d.noise);
  ASSERT_FALSE(setup.whitening.empty());
  const ShardPosterior post(std::move(setup), Layout());
  const int n = post.dimension();
  const std::vector<double> q0(static_cast<std::size_t>(n), 0.0);
  std::vector<double> gp(static_cast<std::size_t>(n)), gm(static_cast<std::size_t>(n));
  const double h = 1e-3;
  for (int i = 0; i < n; ++i) {
    std::vector<double> qp = q0, qm = q0;
    qp[static_cast<std::size_t>(i)] += h;
    qm[static_cast<std::size_t>(i)] -= h;
    post.LogDensityGradient(qp, gp);
    post.LogDensityGradient(qm, gm);
    for (int j = 0; j < n; ++j) {
      const double hij =
          -(gp[static_cast<std::size_t>(j)] - gm[static_cast<std::size_t>(j)]) / (2.0 * h);
      EXPECT_NEAR(hij, i == j ? 1.0 : 0.0, 0.25) << "Hessian (" << i << ", " << j << ")";
    }
  }
}

// The mode search starts σ at its conditional maximum given θ (σ̂² = χ²/N): from a σ 50
// times the noise (the data's spread, as a caller without a fit passes) it reaches the same
// mode in a few steps. Before, its steps moved log σ by at most 4/√(2N) = 0.10 here, so 15
// steps could not cover log 50 = 3.9 and it stopped short.
TEST(SamplingGeometry, ModeSearchStartsSigmaAtItsConditionalMaximum) {
  const Data d = MakeData();
  const ShardPosterior post(GeometrySetup(d), Layout());
  const ShardMode near = post.FindMode(d.truth, d.noise, 200);
  ASSERT_TRUE(near.converged);
  const ShardMode far = post.FindMode(d.truth, 50.0 * d.noise, 15);
  EXPECT_TRUE(far.converged) << far.iterations << " steps";
  EXPECT_NEAR(far.log_density, near.log_density, 1e-6 * std::abs(near.log_density));
  EXPECT_NEAR(far.sigma, near.sigma, 0.01 * near.sigma);
  EXPECT_NEAR(near.sigma, d.noise, 0.1 * d.noise);
}

TEST(SamplingGeometry, OutsideTheBoxIsAWall) {
  const Data d = MakeData();
  const ShardPosterior post(GeometrySetup(d), Layout());
  auto q = post.ToUnconstrained(d.truth, d.noise);
  std::vector<double> g(q.size());
  EXPECT_TRUE(std::isfinite(post.LogDensityGradient(q, g)));
  q[2] = 0.25 + 0.49;  // c2 at zero lag 0.74: offset_0 = 0.49 < 0.5
  EXPECT_EQ(post.LogDensityGradient(q, g), -std::numeric_limits<double>::infinity());
  q = post.ToUnconstrained(d.truth, d.noise);
  q[0] = std::log(1.01);  // contrast_0 above 1
  EXPECT_EQ(post.LogDensityGradient(q, g), -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace homodyne::cmc
