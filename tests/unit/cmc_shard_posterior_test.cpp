// The CMC shard posterior: its gradient matches finite differences of its log density
// (homodyne, reparameterised laminar_flow, two_component with the sampling geometry), and
// NUTS on it recovers the parameters of a synthetic shard.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cmc/reparameterization.h"
#include "cmc/sampling_geometry.h"
#include "cmc/shard_posterior.h"
#include "core/random.h"
#include "gradient_check.h"
#include "model/heterodyne_reference.h"
#include "model/reference_model.h"
#include "nuts/diagnostics.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"

namespace homodyne::cmc {
namespace {

// A static, 2-angle synthetic shard on a 30-time grid with Gaussian noise σ = 0.01.
struct Shard {
  std::vector<double> t, phi{0.0, 90.0}, values;
  std::vector<model::RowTile> tiles;
  model::Geometry geometry{0.0054, 2e6, 0.1};
  std::vector<double> truth{30000.0, -0.6, 20.0};  // D0, alpha, D_offset
  double contrast = 0.3, offset = 1.0, noise = 0.01;
};

Shard MakeShard(int n) {
  Shard s;
  for (int m = 1; m <= n; ++m) s.t.push_back(0.1 * m);
  model::reference::ModelInput in{
      model::AnalysisMode::kStatic, s.geometry,          s.t, s.phi, s.truth,
      {s.contrast, s.contrast},     {s.offset, s.offset}};
  const auto ref = model::reference::Evaluate(in);
  CounterRng rng(5, 0, 0);
  s.values.reserve(static_cast<std::size_t>(2 * n * n));
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) s.values.push_back(ref.C2(k, i, j) + s.noise * rng.Normal());
    }
  }
  std::size_t offset = 0;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      s.tiles.push_back({k, i, i + 1, n - i - 1, s.values.data() + offset, nullptr, 2.0});
      offset += static_cast<std::size_t>(n - i - 1);
    }
  }
  return s;
}

ShardPosterior MakePosterior(const Shard& s) {
  ShardPosteriorSetup setup;
  setup.mode = model::AnalysisMode::kStatic;
  setup.geometry = s.geometry;
  setup.t = s.t;
  setup.phi_deg = s.phi;
  setup.tiles = s.tiles;
  const auto layout = model::ParameterLayout::Averaged(model::AnalysisMode::kStatic, 2);
  // Sampled: contrast, offset, D0, alpha, D_offset.
  setup.lower = {0.0, 0.5, 100.0, -2.0, -1000.0};
  setup.upper = {1.0, 1.5, 1e5, 2.0, 1000.0};
  setup.priors = {{PriorType::kUniform, 0, 1, 0.0, 1.0},
                  {PriorType::kUniform, 0, 1, 0.5, 1.5},
                  {PriorType::kTruncatedNormal, 30000, 20000, 100.0, 1e5},
                  {PriorType::kTruncatedNormal, 0.0, 1.0, -2.0, 2.0},
                  {PriorType::kTruncatedNormal, 0.0, 300.0, -1000.0, 1000.0}};
  setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 0.05};
  return ShardPosterior(std::move(setup), layout);
}

TEST(ShardPosterior, GradientMatchesFiniteDifferences) {
  const Shard s = MakeShard(30);
  const ShardPosterior post = MakePosterior(s);
  ASSERT_EQ(post.dimension(), 6);
  const std::vector<double> theta{0.28, 1.01, 25000.0, -0.5, 40.0};
  const auto q = post.ToUnconstrained(theta, 0.012);
  std::vector<double> grad(6);
  post.LogDensityGradient(q, grad);
  for (std::size_t i = 0; i < q.size(); ++i) {
    const double h = 1e-5;
    std::vector<double> qp = q, qm = q, g(6);
    qp[i] += h;
    qm[i] -= h;
    const double fd = (post.LogDensityGradient(qp, g) - post.LogDensityGradient(qm, g)) / (2 * h);
    EXPECT_NEAR(grad[i], fd, 1e-5 * (1.0 + std::abs(fd))) << "coordinate " << i;
  }
  const auto back = post.ToConstrained(q);
  for (std::size_t i = 0; i < theta.size(); ++i)
    EXPECT_NEAR(back[i], theta[i], 1e-9 * std::abs(theta[i]) + 1e-12);
  EXPECT_NEAR(back[5], 0.012, 1e-15);
}

TEST(ShardPosterior, NutsRecoversTheShardParameters) {
  const Shard s = MakeShard(30);
  const ShardPosterior post = MakePosterior(s);
  nuts::NutsOptions o;
  o.num_warmup = 300;
  o.num_samples = 300;
  o.metric = nuts::MetricKind::kDense;
  o.target_accept = 0.85;
  o.seed = 11;
  std::vector<std::vector<double>> chains_d0, chains_sigma;
  for (std::uint64_t c = 0; c < 2; ++c) {
    const auto q0 = post.ToUnconstrained(std::vector<double>{0.25, 1.0, 20000.0, -0.3, 0.0}, 0.02);
    nuts::NutsChain chain(post, o, q0, /*shard=*/0, c);
    const nuts::ChainRun run = nuts::RunChain(chain);
    std::vector<double> d0, sigma;
    for (int j = 0; j < o.num_samples; ++j) {
      const std::span<const double> qj(run.draws.data() + static_cast<std::size_t>(j) * 6, 6);
      const auto x = post.ToConstrained(qj);
      d0.push_back(x[2]);
      sigma.push_back(x[5]);
    }
    chains_d0.push_back(d0);
    chains_sigma.push_back(sigma);
  }
  double mean = 0, m2 = 0, smean = 0;
  int n = 0;
  for (std::size_t c = 0; c < 2; ++c) {
    for (std::size_t j = 0; j < chains_d0[c].size(); ++j) {
      mean += chains_d0[c][j];
      m2 += chains_d0[c][j] * chains_d0[c][j];
      smean += chains_sigma[c][j];
      ++n;
    }
  }
  mean /= n;
  smean /= n;
  const double sd = std::sqrt(m2 / n - mean * mean);
  EXPECT_LE(std::abs(mean - s.truth[0]), 3.0 * sd) << "D0 posterior " << mean << " ± " << sd;
  EXPECT_NEAR(smean, s.noise, 0.1 * s.noise);
  EXPECT_LT(nuts::SplitRankNormalizedRhat(chains_d0).Max(), 1.1);
}

}  // namespace
}  // namespace homodyne::cmc

namespace homodyne::cmc {
namespace {

// Laminar flow with the reparameterised sites (log D_ref, D_offset/D_ref, log γ_ref): the
// analytic gradient through the reparameterisation matches finite differences, and the
// coordinates round-trip to the physical parameters.
TEST(ShardPosterior, ReparameterisedGradientMatchesFiniteDifferences) {
  const int n = 24;
  std::vector<double> t, phi{-20.0, 50.0}, values;
  for (int m = 1; m <= n; ++m) t.push_back(0.1 * m);
  const model::Geometry geometry{0.0054, 2e6, 0.1};
  const std::vector<double> truth{20000.0, -0.4, 15.0, 0.003, 0.2, 1e-4, 4.0};
  model::reference::ModelInput in{
      model::AnalysisMode::kLaminarFlow, geometry, t, phi, truth, {0.3, 0.3}, {1.0, 1.0}};
  const auto ref = model::reference::Evaluate(in);
  CounterRng rng(8, 0, 0);
  values.reserve(static_cast<std::size_t>(2 * n * n));
  ShardPosteriorSetup setup;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      setup.tiles.push_back({k, i, i + 1, n - i - 1, values.data() + values.size(), nullptr, 1.0});
      for (int j = i + 1; j < n; ++j) values.push_back(ref.C2(k, i, j) + 0.005 * rng.Normal());
    }
  }
  setup.mode = model::AnalysisMode::kLaminarFlow;
  setup.geometry = geometry;
  setup.t = t;
  setup.phi_deg = phi;
  const auto layout = model::ParameterLayout::Averaged(model::AnalysisMode::kLaminarFlow, 2);
  setup.lower = {0.0, 0.5, 100.0, -2.0, -1e5, 1e-6, -2.0, -0.1, -10.0};
  setup.upper = {1.0, 1.5, 1e5, 2.0, 1e5, 0.5, 2.0, 0.1, 10.0};
  for (std::size_t i = 0; i < setup.lower.size(); ++i) {
    setup.priors.push_back({PriorType::kUniform, 0, 1, setup.lower[i], setup.upper[i]});
  }
  setup.reparam.diffusion = true;
  setup.reparam.shear = true;
  setup.reparam.first_phys = 2;
  setup.reparam.t_ref = std::sqrt(0.1 * 2.4);
  const std::vector<double> theta{0.31, 1.0, 21000.0, -0.35, 12.0, 0.0028, 0.25, 1.2e-4, 3.5};
  ReplaceSitePriors(setup.reparam,
                    ReparamPriorsFromEstimate(setup.reparam.t_ref,
                                              std::vector<double>(truth.begin(), truth.begin() + 5),
                                              std::vector<double>{500.0, 0.02, 3.0, 1e-4, 0.01}),
                    4.0, setup.priors, setup.lower, setup.upper);
  setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 0.05};
  const ShardPosterior post(std::move(setup), layout);
  const auto q = post.ToUnconstrained(theta, 0.006);
  const auto back = post.ToConstrained(q);
  for (std::size_t i = 0; i < theta.size(); ++i) {
    EXPECT_NEAR(back[i], theta[i], 1e-10 * std::abs(theta[i])) << "parameter " << i;
  }
  testing::ExpectGradientMatchesFiniteDifferences(post, q, 1e-5);
}

// two_component: 14 physical parameters and per-angle contrast/offset (individual layout),
// sampled with the scaling geometry (log contrast_k, offset_k + contrast_k); the data are
// the reference model on xpcsjax's grid, frame m at (m + 1)·dt, which the kernel gets from
// the homodyne times m·dt the tiles refer to.
TEST(ShardPosterior, TwoComponentGradientMatchesFiniteDifferences) {
  const int n = 20;
  const double dt = 0.1;
  std::vector<double> t, t_model, phi{10.0, 80.0}, values;
  for (int m = 1; m <= n; ++m) {
    t.push_back(dt * m);
    t_model.push_back(dt * (m + 1));
  }
  const model::Geometry geometry{0.0054, 2e6, dt};
  const std::vector<double> truth{3000, 0.3, 20,   20000, -0.3, 50,   300,
                                  0.6,  2,   0.35, 0.3,   0.1,  0.05, 2.0};
  model::heterodyne::HeterodyneInput in{t_model, dt,          geometry.q, phi,
                                        truth,   {0.3, 0.25}, {1.0, 1.02}};
  const auto ref = model::heterodyne::Evaluate(in);
  CounterRng rng(9, 0, 0);
  values.reserve(static_cast<std::size_t>(2 * n * n));
  ShardPosteriorSetup setup;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      setup.tiles.push_back({k, i, i + 1, n - i - 1, values.data() + values.size(), nullptr, 1.0});
      for (int j = i + 1; j < n; ++j) values.push_back(ref.C2(k, i, j) + 0.003 * rng.Normal());
    }
  }
  setup.mode = model::AnalysisMode::kTwoComponent;
  setup.geometry = geometry;
  setup.t = t;
  setup.phi_deg = phi;
  const auto layout = model::ParameterLayout::Individual(model::AnalysisMode::kTwoComponent, 2);
  ASSERT_EQ(layout.num_optimised(), 18);
  setup.lower = {0.0, 0.0, 0.5, 0.5, 0, -2, -1e4, 0, -2, -1e4, 0, -1, -100, 0, -1, -1, -1, -10};
  setup.upper = {1, 1, 1.5, 1.5, 1e6, 2, 1e4, 1e6, 2, 1e4, 1e6, 2, 100, 1, 1, 1, 1, 10};
  for (std::size_t i = 0; i < setup.lower.size(); ++i) {
    const double w = setup.upper[i] - setup.lower[i];
    setup.priors.push_back({PriorType::kTruncatedNormal, setup.lower[i] + 0.3 * w, 0.25 * w,
                            setup.lower[i], setup.upper[i], 2.0});
  }
  setup.theta_lower = setup.lower;
  setup.theta_upper = setup.upper;
  setup.sampling_geometry = MakeSamplingGeometry(layout.names(), setup.lower, true, true);
  ASSERT_TRUE(setup.sampling_geometry.active());
  for (int i = 0; i < 4; ++i) {  // the scaling sites are unbounded (θ's box is a wall)
    setup.lower[static_cast<std::size_t>(i)] = -std::numeric_limits<double>::infinity();
    setup.upper[static_cast<std::size_t>(i)] = std::numeric_limits<double>::infinity();
  }
  setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 0.02};
  const ShardPosterior post(std::move(setup), layout);
  ASSERT_EQ(post.dimension(), 19);
  const std::vector<double> theta{0.29, 0.26, 1.01, 1.015, 3300, 0.27, 18,   18000, -0.33,
                                  55,   320,  0.55, 2.2,   0.33, 0.32, 0.12, 0.055, 1.5};
  const auto q = post.ToUnconstrained(theta, 0.0035);
  const auto back = post.ToConstrained(q);
  for (std::size_t i = 0; i < theta.size(); ++i) {
    EXPECT_NEAR(back[i], theta[i], 1e-10 * std::abs(theta[i]) + 1e-14) << "parameter " << i;
  }
  testing::ExpectGradientMatchesFiniteDifferences(post, q, 1e-5);
  // At the data's own parameters the density is higher than at the perturbed start.
  std::vector<double> truth_theta{0.3, 0.25, 1.0, 1.02};
  truth_theta.insert(truth_theta.end(), truth.begin(), truth.end());
  std::vector<double> g(19);
  EXPECT_GT(post.LogDensityGradient(post.ToUnconstrained(truth_theta, 0.003), g),
            post.LogDensityGradient(q, g));
}

}  // namespace
}  // namespace homodyne::cmc
