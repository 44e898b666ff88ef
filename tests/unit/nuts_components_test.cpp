// Unit tests of the NUTS building blocks: metrics, leapfrog, U-turn criterion, Welford
// estimators, dual averaging, window schedule, initial step size, options.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/random.h"
#include "nuts/dense_metric.h"
#include "nuts/diag_metric.h"
#include "nuts/initial_step_size.h"
#include "nuts/leapfrog.h"
#include "nuts/log_density.h"
#include "nuts/metric_adaptation.h"
#include "nuts/nuts_options.h"
#include "nuts/nuts_transition.h"
#include "nuts/phase_point.h"
#include "nuts/stepsize_adaptation.h"
#include "nuts/uturn.h"
#include "nuts/welford_variance.h"
#include "nuts/windowed_adaptation.h"

namespace homodyne::nuts {
namespace {

TEST(NutsMetric, DiagMomentumHasCovarianceM) {
  DiagMetric metric(2);
  metric.SetInverseMetric(std::vector<double>{4.0, 0.25});  // M = diag(0.25, 4)
  CounterRng rng(1, 2, 3);
  std::vector<double> p(2);
  double s0 = 0.0, s1 = 0.0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    metric.SampleMomentum(rng, p);
    s0 += p[0] * p[0];
    s1 += p[1] * p[1];
  }
  // Var of a sample second moment of N(0, v) over n draws: 2v²/n.
  EXPECT_NEAR(s0 / n, 0.25, 5 * 0.25 * std::sqrt(2.0 / n));
  EXPECT_NEAR(s1 / n, 4.0, 5 * 4.0 * std::sqrt(2.0 / n));
  EXPECT_DOUBLE_EQ(metric.KineticEnergy(std::vector<double>{1.0, 2.0}), 0.5 * (4.0 + 0.25 * 4.0));
}

TEST(NutsMetric, DenseMomentumHasCovarianceInverseOfInverseMetric) {
  // M⁻¹ = [[2, 0.9], [0.9, 1]] → M = [[1, -0.9], [-0.9, 2]] / 1.19.
  DenseMetric metric(2);
  metric.SetInverseMetric(std::vector<double>{2.0, 0.9, 0.9, 1.0});
  const double det = 2.0 - 0.81;
  const double m00 = 1.0 / det, m01 = -0.9 / det, m11 = 2.0 / det;
  CounterRng rng(7, 0, 0);
  std::vector<double> p(2);
  double c00 = 0.0, c01 = 0.0, c11 = 0.0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    metric.SampleMomentum(rng, p);
    c00 += p[0] * p[0];
    c01 += p[0] * p[1];
    c11 += p[1] * p[1];
  }
  const double tol = 5.0 * std::sqrt(2.0 / n) * 2.0;
  EXPECT_NEAR(c00 / n, m00, tol * m00);
  EXPECT_NEAR(c01 / n, m01, tol * std::fabs(m00));
  EXPECT_NEAR(c11 / n, m11, tol * m11);
  std::vector<double> sharp(2);
  metric.Sharp(std::vector<double>{1.0, -1.0}, sharp);
  EXPECT_DOUBLE_EQ(sharp[0], 2.0 - 0.9);
  EXPECT_DOUBLE_EQ(sharp[1], 0.9 - 1.0);
  EXPECT_DOUBLE_EQ(metric.KineticEnergy(std::vector<double>{1.0, -1.0}), 0.5 * (2.0 - 1.8 + 1.0));
}

TEST(NutsMetric, RejectsInvalidInverseMetric) {
  DiagMetric diag(2);
  EXPECT_THROW(diag.SetInverseMetric(std::vector<double>{1.0, -1.0}), Error);
  DenseMetric dense(2);
  EXPECT_THROW(dense.SetInverseMetric(std::vector<double>{1.0, 2.0, 2.0, 1.0}), Error);
}

TEST(NutsLeapfrog, ConservesEnergyToSecondOrderAndIsReversible) {
  StandardNormalDensity density(3);
  DiagMetric metric(3);
  auto energy_error = [&](double eps) {
    PhasePoint z(3);
    z.q = {0.5, -1.0, 2.0};
    z.p = {1.0, 0.3, -0.7};
    UpdatePotentialGradient(density, z);
    const double h0 = Hamiltonian(metric, z);
    LeapfrogStep(density, metric, z, eps);
    return std::fabs(Hamiltonian(metric, z) - h0);
  };
  // Local energy error of leapfrog is O(ε³); halving ε divides it by about 8.
  const double e1 = energy_error(0.1);
  const double e2 = energy_error(0.05);
  EXPECT_GT(e1 / e2, 5.0);
  EXPECT_LT(e1 / e2, 11.0);

  PhasePoint z(3);
  z.q = {0.5, -1.0, 2.0};
  z.p = {1.0, 0.3, -0.7};
  UpdatePotentialGradient(density, z);
  const PhasePoint start = z;
  for (int i = 0; i < 10; ++i) LeapfrogStep(density, metric, z, 0.2);
  for (int i = 0; i < 10; ++i) LeapfrogStep(density, metric, z, -0.2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(z.q[i], start.q[i], 1e-12);
    EXPECT_NEAR(z.p[i], start.p[i], 1e-12);
  }
}

TEST(NutsPhasePoint, NonFiniteDensityGivesInfinitePotential) {
  class Broken final : public LogDensity {
   public:
    int dimension() const override { return 1; }
    double LogDensityGradient(std::span<const double>, std::span<double> g) const override {
      g[0] = 0.0;
      return std::nan("");
    }
  } broken;
  PhasePoint z(1);
  UpdatePotentialGradient(broken, z);
  EXPECT_TRUE(std::isinf(z.potential));
  DiagMetric metric(1);
  EXPECT_TRUE(std::isinf(Hamiltonian(metric, z)));
}

// --- U-turn criterion on hand-built trajectories (identity metric: p♯ = p) -----------

SubtreeEnds Ends(std::vector<double> first, std::vector<double> last, std::vector<double> rho) {
  return SubtreeEnds{first, first, last, last, rho};
}

TEST(NutsUTurn, StraightTrajectoryContinues) {
  const std::vector<double> p{1.0, 0.0};
  EXPECT_TRUE(NoUTurn(p, p, std::vector<double>{5.0, 0.0}));
  const SubtreeEnds a = Ends({1.0, 0.0}, {1.0, 0.1}, {2.0, 0.1});
  const SubtreeEnds b = Ends({1.0, 0.2}, {0.9, 0.3}, {1.9, 0.5});
  EXPECT_TRUE(MergedSpanContinues(a, b));
}

TEST(NutsUTurn, ReversedEndStops) {
  // Trajectory that went right then came back: the forward end moves against ρ.
  EXPECT_FALSE(NoUTurn(std::vector<double>{1.0, 0.0}, std::vector<double>{-1.0, 0.0},
                       std::vector<double>{0.5, 0.0}));
  // The backward end moving against ρ stops it too.
  EXPECT_FALSE(NoUTurn(std::vector<double>{-1.0, 0.0}, std::vector<double>{1.0, 0.0},
                       std::vector<double>{0.5, 0.0}));
  // Orthogonal counts as a U-turn (strict inequality).
  EXPECT_FALSE(NoUTurn(std::vector<double>{0.0, 1.0}, std::vector<double>{1.0, 0.0},
                       std::vector<double>{1.0, 0.0}));
}

TEST(NutsUTurn, SeamCheckCatchesUTurnTheWholeSpanMisses) {
  // a: two states p = (1,0); b: first state (−1, 0.1), last state (3, 3).
  const SubtreeEnds a = Ends({1.0, 0.0}, {1.0, 0.0}, {2.0, 0.0});
  const SubtreeEnds b = Ends({-1.0, 0.1}, {3.0, 3.0}, {2.0, 3.1});
  // Whole span: ρ = (4, 3.1); (1,0)·ρ = 4 > 0 and (3,3)·ρ > 0 → passes.
  EXPECT_TRUE(NoUTurn(a.p_sharp_first, b.p_sharp_last, std::vector<double>{4.0, 3.1}));
  // a + b's first state: ρ = (1, 0.1); (−1, 0.1)·ρ = −0.99 < 0 → U-turn at the seam.
  EXPECT_FALSE(MergedSpanContinues(a, b));
}

TEST(NutsUTurn, SecondSeamCheckCatchesUTurn) {
  // Mirror image: a's last state turns back against b.
  // a: first (3,3), last (0.1,-1); b: two states (0,1).
  const SubtreeEnds a = Ends({3.0, 3.0}, {0.1, -1.0}, {3.1, 2.0});
  const SubtreeEnds b = Ends({0.0, 1.0}, {0.0, 1.0}, {0.0, 2.0});
  // Whole: ρ = (3.1, 4): (3,3)·ρ > 0, (0,1)·ρ = 4 > 0.
  EXPECT_TRUE(NoUTurn(a.p_sharp_first, b.p_sharp_last, std::vector<double>{3.1, 4.0}));
  // a + b.first: ρ = (3.1, 3): (3,3)·ρ > 0, (0,1)·ρ = 3 > 0 → passes.
  EXPECT_TRUE(NoUTurn(a.p_sharp_first, b.p_sharp_first, std::vector<double>{3.1, 3.0}));
  // b + a.last: ρ = (0.1, 1): (0.1,−1)·ρ = 0.01 − 1 < 0 → fails.
  EXPECT_FALSE(MergedSpanContinues(a, b));
}

TEST(NutsTransition, HarmonicOscillatorNeverRunsPastAPeriod) {
  // 1-D standard normal, unit metric: phase-space orbits are circles of period 2π and
  // the momentum changes sign every half period, which is a U-turn. So no trajectory
  // may last much longer than one period, and on average they last a good fraction of
  // a half period (a sampler that stops at once, or never, fails this).
  StandardNormalDensity density(1);
  DiagMetric metric(1);
  CounterRng rng(11, 0, 0);
  PhasePoint z(1);
  z.q = {0.3};
  UpdatePotentialGradient(density, z);
  const double eps = 0.05;
  const double pi = 3.14159265358979;
  double total_length = 0.0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    const TransitionStats stats = NutsTransition(density, metric, {eps, 0.0, 10}, z, rng);
    const double length = stats.n_leapfrog * eps;
    total_length += length;
    EXPECT_LT(length, 2.0 * pi + 4.0 * eps);
    EXPECT_FALSE(stats.divergent);
    EXPECT_GT(stats.accept_stat, 0.99);
    EXPECT_GE(stats.n_leapfrog, (1 << stats.tree_depth) - 1);
    EXPECT_DOUBLE_EQ(stats.potential, 0.5 * z.q[0] * z.q[0]);
    EXPECT_GE(stats.energy, stats.potential);
    EXPECT_LT(stats.n_leapfrog, 1 << (stats.tree_depth + 1));
  }
  EXPECT_GT(total_length / n, 0.5 * pi);
  EXPECT_LT(total_length / n, 2.0 * pi);
}

TEST(NutsTransition, MaxDepthLimitsWork) {
  StandardNormalDensity density(2);
  DiagMetric metric(2);
  CounterRng rng(5, 0, 0);
  PhasePoint z(2);
  UpdatePotentialGradient(density, z);
  // A tiny step never reaches a U-turn within 2^3 − 1 steps.
  const TransitionStats stats = NutsTransition(density, metric, {1e-3, 0.0, 3}, z, rng);
  EXPECT_EQ(stats.tree_depth, 3);
  EXPECT_EQ(stats.n_leapfrog, 7);
}

TEST(NutsTransition, NaNEnergyIsDivergentAndNeverSelected) {
  // Standard normal cut off by a wall where the density is NaN (q₀ > 0.5).
  class Wall final : public LogDensity {
   public:
    int dimension() const override { return 1; }
    double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
      g[0] = -q[0];
      return q[0] > 0.5 ? std::nan("") : -0.5 * q[0] * q[0];
    }
  } wall;
  DiagMetric metric(1);
  CounterRng rng(3, 1, 4);
  PhasePoint z(1);
  z.q = {0.0};
  UpdatePotentialGradient(wall, z);
  int divergent = 0;
  for (int i = 0; i < 300; ++i) {
    const TransitionStats stats = NutsTransition(wall, metric, {0.2, 0.0, 10}, z, rng);
    divergent += stats.divergent ? 1 : 0;
    EXPECT_LE(z.q[0], 0.5);
    EXPECT_TRUE(std::isfinite(stats.energy));
  }
  EXPECT_GT(divergent, 10);
}

// --- Welford ------------------------------------------------------------------------

TEST(NutsWelford, MatchesTwoPassVarianceAndCovariance) {
  const std::vector<std::vector<double>> xs = {
      {1.0, 2.0}, {2.5, -1.0}, {0.5, 0.0}, {4.0, 3.0}, {-1.0, 1.5}};
  WelfordVariance var(2);
  WelfordCovariance cov(2);
  for (const auto& x : xs) {
    var.Add(x);
    cov.Add(x);
  }
  double m0 = 0.0, m1 = 0.0;
  for (const auto& x : xs) {
    m0 += x[0] / 5.0;
    m1 += x[1] / 5.0;
  }
  double c00 = 0.0, c01 = 0.0, c11 = 0.0;
  for (const auto& x : xs) {
    c00 += (x[0] - m0) * (x[0] - m0) / 4.0;
    c01 += (x[0] - m0) * (x[1] - m1) / 4.0;
    c11 += (x[1] - m1) * (x[1] - m1) / 4.0;
  }
  const auto v = var.SampleVariance();
  EXPECT_NEAR(v[0], c00, 1e-12);
  EXPECT_NEAR(v[1], c11, 1e-12);
  const auto c = cov.SampleCovariance();
  EXPECT_NEAR(c[0], c00, 1e-12);
  EXPECT_NEAR(c[1], c01, 1e-12);
  EXPECT_NEAR(c[2], c01, 1e-12);
  EXPECT_NEAR(c[3], c11, 1e-12);
  var.Restart();
  EXPECT_EQ(var.count(), 0);
}

// --- Dual averaging -------------------------------------------------------------------

TEST(NutsDualAveraging, FirstUpdateFollowsTheFormula) {
  StepSizeAdaptation adaptation(DualAveragingOptions{.delta = 0.8});
  adaptation.SetMuFromStepSize(1.0);  // μ = log 10
  // t = 1, η = 1/11, s̄ = (0.8 − 1)/11, x = log 10 + 0.2/(11 · 0.05), x̄ = x.
  const double expected_x = std::log(10.0) + 0.2 / (11.0 * 0.05);
  EXPECT_NEAR(adaptation.Learn(1.5), std::exp(expected_x), 1e-12);  // a clipped to 1
  EXPECT_NEAR(adaptation.FinalStepSize(), std::exp(expected_x), 1e-12);
  EXPECT_EQ(adaptation.state().counter, 1.0);
  adaptation.Restart();
  EXPECT_EQ(adaptation.state().counter, 0.0);
  EXPECT_EQ(adaptation.state().x_bar, 0.0);
  EXPECT_NEAR(adaptation.state().mu, std::log(10.0), 1e-15);
}

TEST(NutsDualAveraging, ConvergesOnAnAcceptanceCurve) {
  // Synthetic acceptance a(ε) = exp(−ε²): the fixed point a = 0.8 is ε* = √(−log 0.8).
  StepSizeAdaptation adaptation(DualAveragingOptions{.delta = 0.8});
  adaptation.SetMuFromStepSize(1.0);
  double eps = 1.0;
  for (int i = 0; i < 5000; ++i) eps = adaptation.Learn(std::exp(-eps * eps));
  EXPECT_NEAR(adaptation.FinalStepSize(), std::sqrt(-std::log(0.8)), 0.02);
}

// --- Window schedule -----------------------------------------------------------------

TEST(NutsWindows, StanScheduleFor1000And2000) {
  EXPECT_EQ(WindowedAdaptation::UpdateIterations(1000), (std::vector<int>{99, 149, 249, 449, 949}));
  EXPECT_EQ(WindowedAdaptation::UpdateIterations(2000),
            (std::vector<int>{99, 149, 249, 449, 849, 1949}));
}

TEST(NutsWindows, SmallWarmupIsRecomputed) {
  // 149 < 75 + 25 + 50: buffers become ⌊0.15·149⌋ = 22 and ⌊0.1·149⌋ = 14, one window
  // of 113 draws ending at 149 − 14 − 1 = 134 (Stan never updates here).
  const WindowedAdaptation windows(149);
  EXPECT_EQ(windows.init_buffer(), 22);
  EXPECT_EQ(windows.term_buffer(), 14);
  EXPECT_EQ(windows.base_window(), 113);
  EXPECT_EQ(WindowedAdaptation::UpdateIterations(149), (std::vector<int>{134}));
  EXPECT_EQ(WindowedAdaptation::UpdateIterations(19), std::vector<int>{});
  EXPECT_FALSE(WindowedAdaptation(19).enabled());
  EXPECT_FALSE(WindowedAdaptation::UpdateIterations(20).empty());
}

TEST(NutsWindows, MetricAdaptationCollectsOnlyInsideWindows) {
  // Feed q = iteration; the first window collects iterations 75..99, whose sample
  // (n − 1) variance is that of 25 consecutive integers: n(n + 1)/12 = 25·26/12.
  MetricAdaptation adaptation(MetricKind::kDiag, 1, 1000);
  std::vector<double> inverse_metric;
  for (int it = 0; it < 99; ++it) {
    EXPECT_FALSE(adaptation.Learn(std::vector<double>{double(it)}, inverse_metric));
  }
  ASSERT_TRUE(adaptation.Learn(std::vector<double>{99.0}, inverse_metric));
  const double n = 25.0;
  EXPECT_NEAR(inverse_metric[0], n / (n + 5.0) * (25.0 * 26.0 / 12.0) + 1e-3 * 5.0 / (n + 5.0),
              1e-9);
}

// --- Initial step size ---------------------------------------------------------------

TEST(NutsInitialStepSize, MovesTowardTheCrossingFromBothSides) {
  StandardNormalDensity density(5);
  DiagMetric metric(5);
  PhasePoint z(5);
  z.q = {0.1, -0.2, 0.3, 0.0, 0.5};
  UpdatePotentialGradient(density, z);
  CounterRng rng(9, 0, 0);
  const double up = FindInitialStepSize(density, metric, z, 1e-3, rng);
  const double down = FindInitialStepSize(density, metric, z, 100.0, rng);
  // Doubling/halving by powers of two from the start values.
  EXPECT_EQ(std::log2(up / 1e-3), std::round(std::log2(up / 1e-3)));
  EXPECT_GT(up, 0.1);
  EXPECT_LT(up, 4.0);
  EXPECT_GT(down, 0.1);
  EXPECT_LT(down, 4.0);
}

// --- Options -------------------------------------------------------------------------

TEST(NutsOptions, ValidationNamesTheField) {
  NutsOptions options;
  std::string error;
  EXPECT_TRUE(options.IsValid(&error));
  options.target_accept = 1.0;
  EXPECT_FALSE(options.IsValid(&error));
  EXPECT_NE(error.find("target_accept"), std::string::npos);
  options = {};
  options.max_tree_depth = 0;
  EXPECT_FALSE(options.IsValid(&error));
  EXPECT_NE(error.find("max_tree_depth"), std::string::npos);
  options = {};
  options.init_step_size = -1.0;
  EXPECT_FALSE(options.IsValid(&error));
  EXPECT_NE(error.find("init_step_size"), std::string::npos);
  options = {};
  options.jitter = 1.0;
  EXPECT_THROW(options.Validate(), Error);
  MetricKind kind;
  EXPECT_TRUE(MetricKindFromString("dense", &kind));
  EXPECT_EQ(kind, MetricKind::kDense);
  EXPECT_FALSE(MetricKindFromString("unit", &kind));
}

// Every member of both metric instantiations is compiled and linked (Stan's latent
// template defect is exactly this kind of never-instantiated code).
TEST(NutsInstantiation, BothMetricsLinkEveryTemplate) {
  StandardNormalDensity density(2);
  CounterRng rng(1, 0, 0);
  PhasePoint z(2);
  UpdatePotentialGradient(density, z);
  DenseMetric dense(2);
  DiagMetric diag(2);
  EXPECT_GT(FindInitialStepSize(density, dense, z, 1.0, rng), 0.0);
  EXPECT_GT(FindInitialStepSize(density, diag, z, 1.0, rng), 0.0);
  EXPECT_GE(NutsTransition(density, dense, {0.5, 0.1, 5}, z, rng).n_leapfrog, 1);
  EXPECT_GE(NutsTransition(density, diag, {0.5, 0.1, 5}, z, rng).n_leapfrog, 1);
}

}  // namespace
}  // namespace homodyne::nuts
