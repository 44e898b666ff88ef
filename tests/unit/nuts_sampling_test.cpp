// Sampling tests of the full adaptive NUTS on targets with known answers. Tolerances
// come from the Monte Carlo standard errors of the draws themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nuts/diagnostics.h"
#include "nuts/log_density.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"

namespace homodyne::nuts {
namespace {

std::vector<ChainRun> RunChains(const LogDensity& density, const NutsOptions& options,
                                int num_chains, double init_value = 0.5) {
  std::vector<ChainRun> runs;
  for (int c = 0; c < num_chains; ++c) {
    std::vector<double> init(density.dimension());
    for (int i = 0; i < density.dimension(); ++i) init[i] = init_value * ((i + c) % 2 ? 1 : -1);
    NutsChain chain(density, options, init, /*shard=*/0, /*chain=*/c);
    runs.push_back(RunChain(chain));
  }
  return runs;
}

Chains Parameter(const std::vector<ChainRun>& runs, int parameter) {
  Chains chains;
  for (const auto& run : runs) chains.push_back(run.Parameter(parameter));
  return chains;
}

Chains Squared(Chains chains) {
  for (auto& chain : chains) {
    for (double& v : chain) v = v * v;
  }
  return chains;
}

double PooledMean(const Chains& chains) {
  double sum = 0.0;
  std::size_t n = 0;
  for (const auto& chain : chains) {
    for (double v : chain) sum += v;
    n += chain.size();
  }
  return sum / static_cast<double>(n);
}

// Means and variances of N(0, I) within 4.5 MCSE; max(bulk, tail) split R̂ < 1.01.
void CheckStandardNormal(int dimension, MetricKind metric) {
  StandardNormalDensity density(dimension);
  NutsOptions options;
  options.num_warmup = 500;
  options.num_samples = 1000;
  options.metric = metric;
  options.seed = 20261122;
  const auto runs = RunChains(density, options, 4);
  double worst_rhat = 0.0;
  for (int i = 0; i < dimension; ++i) {
    const Chains x = Parameter(runs, i);
    const Chains x2 = Squared(x);
    EXPECT_NEAR(PooledMean(x), 0.0, 4.5 * McseMean(x)) << "parameter " << i;
    // E[x²] = 1 is the variance since the mean is 0.
    EXPECT_NEAR(PooledMean(x2), 1.0, 4.5 * McseMean(x2)) << "parameter " << i;
    worst_rhat = std::max(worst_rhat, SplitRankNormalizedRhat(x).Max());
  }
  EXPECT_LT(worst_rhat, 1.01);
  for (const auto& run : runs) {
    EXPECT_EQ(run.summary.num_divergent, 0);
    EXPECT_EQ(run.summary.num_draws, options.num_samples);
  }
}

TEST(NutsSampling, StandardNormal1D) { CheckStandardNormal(1, MetricKind::kDiag); }
TEST(NutsSampling, StandardNormal10D) { CheckStandardNormal(10, MetricKind::kDiag); }
TEST(NutsSampling, StandardNormal100D) { CheckStandardNormal(100, MetricKind::kDiag); }
TEST(NutsSampling, StandardNormal10DDense) { CheckStandardNormal(10, MetricKind::kDense); }

// A 5-D Gaussian with eigenvalues 1e-2 … 1e2 (condition number 1e4) rotated so that
// the coordinates are strongly correlated.
std::vector<double> CorrelatedCovariance() {
  const int n = 5;
  // Householder rotation H = I − 2vvᵀ/|v|² with v = (1, 2, 3, 4, 5), applied to
  // diag(λ): Σ = H Λ H.
  const std::vector<double> v{1.0, 2.0, 3.0, 4.0, 5.0};
  const double vv = 55.0;
  const std::vector<double> lambda{1e-2, 1e-1, 1.0, 1e1, 1e2};
  std::vector<double> h(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) h[i * n + j] = (i == j ? 1.0 : 0.0) - 2.0 * v[i] * v[j] / vv;
  }
  std::vector<double> sigma(n * n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) sigma[i * n + j] += h[i * n + k] * lambda[k] * h[j * n + k];
    }
  }
  return sigma;
}

GaussianDensity CorrelatedGaussian() {
  return GaussianDensity(std::vector<double>(5, 1.0), CorrelatedCovariance());
}

double MinBulkEssPerGradient(const std::vector<ChainRun>& runs, int dimension) {
  double gradients = 0.0;
  for (const auto& run : runs) {
    for (const auto& s : run.stats) gradients += s.n_leapfrog;
  }
  double min_ess = 1e300;
  for (int i = 0; i < dimension; ++i) {
    min_ess = std::min(min_ess, SplitRankNormalizedEss(Parameter(runs, i)).bulk);
  }
  return min_ess / gradients;
}

TEST(NutsSampling, DenseMetricBeatsDiagonalOnCorrelatedGaussian) {
  const GaussianDensity density = CorrelatedGaussian();
  NutsOptions options;
  options.num_warmup = 1000;
  options.num_samples = 1000;
  options.seed = 7;
  options.metric = MetricKind::kDiag;
  const auto diag_runs = RunChains(density, options, 2);
  options.metric = MetricKind::kDense;
  const auto dense_runs = RunChains(density, options, 2);
  const double diag = MinBulkEssPerGradient(diag_runs, 5);
  const double dense = MinBulkEssPerGradient(dense_runs, 5);
  EXPECT_GT(dense, 10.0 * diag) << "ESS per gradient: dense " << dense << ", diag " << diag;
  // The adapted dense inverse metric estimates Σ (relative Frobenius error).
  const std::vector<double> sigma = CorrelatedCovariance();
  for (const auto& run : dense_runs) {
    double err = 0.0, norm = 0.0;
    for (std::size_t k = 0; k < sigma.size(); ++k) {
      err += std::pow(run.summary.inverse_metric[k] - sigma[k], 2);
      norm += sigma[k] * sigma[k];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.3);
  }
  // The dense sampler is also correct: mean 1 within MCSE on every coordinate.
  for (int i = 0; i < 5; ++i) {
    const Chains x = Parameter(dense_runs, i);
    EXPECT_NEAR(PooledMean(x), 1.0, 4.5 * McseMean(x));
  }
}

TEST(NutsSampling, ForcedLargeStepDiverges) {
  // No adaptation (num_warmup 0): ε = 10 on N(0, I) makes leapfrog unstable at once.
  StandardNormalDensity density(10);
  NutsOptions options;
  options.num_warmup = 0;
  options.num_samples = 50;
  options.init_step_size = 10.0;
  const auto runs = RunChains(density, options, 1);
  EXPECT_GT(runs[0].summary.num_divergent, 45);
  for (const auto& s : runs[0].stats) EXPECT_DOUBLE_EQ(s.step_size, 10.0);
}

// Neal's funnel: v ~ N(0, 3²), x_i | v ~ N(0, e^v), i = 1..9.
class Funnel final : public LogDensity {
 public:
  int dimension() const override { return 10; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    const double v = q[0];
    double sum_sq = 0.0;
    for (int i = 1; i < 10; ++i) sum_sq += q[i] * q[i];
    const double e = std::exp(-v);
    g[0] = -v / 9.0 - 4.5 + 0.5 * sum_sq * e;
    for (int i = 1; i < 10; ++i) g[i] = -q[i] * e;
    return -v * v / 18.0 - 4.5 * v - 0.5 * sum_sq * e;
  }
};

TEST(NutsSampling, FunnelProducesDivergences) {
  const Funnel funnel;
  NutsOptions options;
  options.num_warmup = 1000;
  options.num_samples = 1000;
  options.seed = 3;
  const auto runs = RunChains(funnel, options, 4, 0.1);
  int divergent = 0;
  for (const auto& run : runs) {
    divergent += run.summary.num_divergent;
    int flagged = 0;
    for (const auto& s : run.stats) flagged += s.divergent ? 1 : 0;
    EXPECT_EQ(flagged, run.summary.num_divergent);
  }
  EXPECT_GT(divergent, 0);
}

// log of a Gamma(3, 1) variable: π(y) ∝ exp(3y − eʸ), skewed, with
// E[y] = ψ(3) = 3/2 − γ and Var[y] = ψ'(3) = π²/6 − 5/4.
class LogGamma3 final : public LogDensity {
 public:
  int dimension() const override { return 1; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    g[0] = 3.0 - std::exp(q[0]);
    return 3.0 * q[0] - std::exp(q[0]);
  }
};

TEST(NutsSampling, SkewedTargetMoments) {
  const LogGamma3 density;
  NutsOptions options;
  options.num_warmup = 500;
  options.num_samples = 1000;
  options.seed = 17;
  const auto runs = RunChains(density, options, 4);
  const Chains y = Parameter(runs, 0);
  const double mean = 1.5 - 0.5772156649015329;
  const double variance = 3.14159265358979 * 3.14159265358979 / 6.0 - 1.25;
  EXPECT_NEAR(PooledMean(y), mean, 4.5 * McseMean(y));
  Chains centered = y;
  for (auto& chain : centered) {
    for (double& v : chain) v = (v - mean) * (v - mean);
  }
  EXPECT_NEAR(PooledMean(centered), variance, 4.5 * McseMean(centered));
  EXPECT_LT(SplitRankNormalizedRhat(y).Max(), 1.01);
}

TEST(NutsSampling, DualAveragingHitsTargetAcceptance) {
  // Dual averaging drives the mean accept_stat of the transitions it adapts on to δ. We
  // check it over the last slow window (iterations 450..949, after the restart at 449).
  // With ε frozen at exp(x̄) the sampling-phase acceptance is typically somewhat above
  // δ (as in Stan, since ε fluctuates during adaptation); it must not fall below δ.
  StandardNormalDensity density(10);
  for (double delta : {0.8, 0.95}) {
    NutsOptions options;
    options.num_warmup = 1000;
    options.num_samples = 1000;
    options.target_accept = delta;
    options.seed = 101;
    const auto runs = RunChains(density, options, 1);
    double adapting = 0.0;
    for (int i = 450; i < 950; ++i) adapting += runs[0].warmup_stats[i].accept_stat;
    EXPECT_NEAR(adapting / 500.0, delta, 0.05) << "delta " << delta;
    EXPECT_GT(runs[0].summary.mean_accept_stat, delta - 0.05) << "delta " << delta;
    EXPECT_LT(runs[0].summary.mean_accept_stat, 1.0);
  }
}

TEST(NutsSampling, MetricUpdatesAtScheduledIterationsAndLearnsScales) {
  // Independent Gaussian with variances 4 and 0.25.
  GaussianDensity density({0.0, 0.0}, {4.0, 0.0, 0.0, 0.25});
  NutsOptions options;
  options.num_warmup = 1000;
  options.num_samples = 10;
  NutsChain chain(density, options, std::vector<double>{0.1, 0.1}, 0, 0);
  std::vector<int> updates;
  while (!chain.Done()) {
    const IterationResult r = chain.Step();
    if (r.metric_updated) updates.push_back(static_cast<int>(r.iteration));
  }
  EXPECT_EQ(updates, (std::vector<int>{99, 149, 249, 449, 949}));
  const auto m = chain.inverse_metric();
  // Estimates from the last 500-draw window (autocorrelated draws): within 40%.
  EXPECT_NEAR(m[0], 4.0, 0.4 * 4.0);
  EXPECT_NEAR(m[1], 0.25, 0.4 * 0.25);
}

TEST(NutsSampling, SmallWarmupStillAdaptsTheMetric) {
  GaussianDensity density({0.0, 0.0}, {4.0, 0.0, 0.0, 0.25});
  for (MetricKind kind : {MetricKind::kDiag, MetricKind::kDense}) {
    NutsOptions options;
    options.num_warmup = 149;
    options.num_samples = 10;
    options.metric = kind;
    NutsChain chain(density, options, std::vector<double>{0.1, 0.1}, 0, 1);
    int updates = 0;
    while (!chain.Done()) updates += chain.Step().metric_updated ? 1 : 0;
    EXPECT_EQ(updates, 1);
    const auto m = chain.inverse_metric();
    const double v0 = m[0];
    const double v1 = kind == MetricKind::kDiag ? m[1] : m[3];
    // A 113-draw estimate: ratio of variances 16, far from the unit start.
    EXPECT_GT(v0 / v1, 5.0);
  }
}

}  // namespace
}  // namespace homodyne::nuts
