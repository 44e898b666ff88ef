// NaN/Inf from the model never reaches a result silently: trial steps into a region
// where χ² is not finite are rejected, and a problem that is not finite at the start is
// reported as a numerical failure with a message saying so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lsq/bounded_solver.h"
#include "mpi_test_env.h"

namespace homodyne::lsq {
namespace {

// One residual r = x − 5 (replicated on every rank, no communication), whose model is
// NaN for x > nan_above: the minimum lies inside the NaN region.
class NanRegionProblem : public LeastSquaresProblem {
 public:
  explicit NanRegionProblem(double nan_above) : nan_above_(nan_above) {}
  int num_parameters() const override { return 1; }
  void Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) override {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const bool bad = x[0] > nan_above_;
    if (bad) ++nan_evaluations;
    const double r = bad ? nan : x[0] - 5.0;
    out.chi2 = r * r;
    out.n_points = 1;
    if (with_derivatives) {
      out.gradient = {bad ? nan : r};  // Jᵀr with J = 1
      out.hessian = {bad ? nan : 1.0};
    }
  }
  int nan_evaluations = 0;

 private:
  double nan_above_;
};

TEST(NumericalFaults, StepsIntoANanRegionAreRejected) {
  NanRegionProblem problem(4.0);
  SolverOptions options;
  options.max_iterations = 30;
  const SolverSummary s = SolveBounded(problem, {0.0}, {-10.0}, {10.0}, options);
  EXPECT_GT(problem.nan_evaluations, 0) << "the test did not reach the NaN region";
  ASSERT_EQ(s.x.size(), 1u);
  EXPECT_LE(s.x[0], 4.0) << s.BriefReport();
  EXPECT_TRUE(std::isfinite(s.final_chi2)) << s.BriefReport();
  // The solver stops at the best finite point and says why; whatever it reports is never NaN.
  EXPECT_THAT(s.message, ::testing::HasSubstr("gave NaN/Inf chi2 or gradient and were rejected"));
  for (double c : s.chi2_history) EXPECT_TRUE(std::isfinite(c));
  // The minimum x = 5 lies in the NaN region: the best finite point is not optimal, and the
  // answer says so.
  EXPECT_EQ(s.termination, Termination::kStalled) << s.BriefReport();
  EXPECT_FALSE(IsOptimal(s.optimality, options.ftol, options.gtol));
}

TEST(NumericalFaults, NonFiniteStartIsANumericalFailureNeverAFit) {
  NanRegionProblem problem(-100.0);  // NaN everywhere inside the bounds
  SolverOptions options;
  options.max_iterations = 10;
  const SolverSummary s = SolveBounded(problem, {1.0}, {-10.0}, {10.0}, options);
  EXPECT_EQ(s.termination, Termination::kNumericalFailure) << s.BriefReport();
  EXPECT_FALSE(s.IsUsable());
  EXPECT_THAT(s.message, ::testing::HasSubstr("numerical failure"));
  EXPECT_THAT(s.message, ::testing::HasSubstr("not finite at the starting point"));
}

// y = c + max(k, 0)·t: for k <= 0 the model does not respond to k (as D(t) floored at every
// time does not respond to D0), and its gradient vanishes there without a minimum. Started on
// that plateau the fit fits c, cannot move k, and must say so: stalled, naming the plateau,
// never converged (the bound-midpoint start of a laminar fit once ended "converged" at D0 =
// 50050 this way).
class PlateauProblem : public LeastSquaresProblem {
 public:
  int num_parameters() const override { return 2; }
  void Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) override {
    out.chi2 = 0.0;
    out.gradient.assign(2, 0.0);
    out.hessian.assign(4, 0.0);
    out.n_points = kPoints;
    for (int p = 0; p < kPoints; ++p) {
      const double t = 0.01 * p;
      const double y = 1.0 + 0.5 * t + (p % 2 == 0 ? 1e-3 : -1e-3);
      const double r = y - (x[0] + std::max(x[1], 0.0) * t);
      out.chi2 += r * r;
      if (!with_derivatives) continue;
      const double j[2] = {-1.0, x[1] > 0.0 ? -t : 0.0};  // ∂r/∂x
      for (int a = 0; a < 2; ++a) {
        out.gradient[static_cast<std::size_t>(a)] += j[a] * r;
        for (int b = 0; b < 2; ++b) out.hessian[static_cast<std::size_t>(2 * a + b)] += j[a] * j[b];
      }
    }
  }

 private:
  static constexpr int kPoints = 200;
};

TEST(NumericalFaults, PlateauStartIsStalledNeverConverged) {
  PlateauProblem problem;
  const SolverSummary s = SolveBounded(problem, {0.0, -1.0}, {-5.0, -2.0}, {5.0, 2.0}, {});
  EXPECT_EQ(s.termination, Termination::kStalled) << s.BriefReport();
  EXPECT_EQ(ConvergenceStatus(s.termination), "stalled");
  EXPECT_TRUE(s.IsUsable());
  ASSERT_EQ(s.optimality.insensitive.size(), 1u);
  EXPECT_EQ(s.optimality.insensitive[0], 1);
  EXPECT_THAT(s.message, ::testing::HasSubstr("parameter(s) 1 here (a plateau"));
  EXPECT_DOUBLE_EQ(s.x[1], -1.0);  // k never moved
  // With the parameters' names, the message names the one on the plateau.
  SolverOptions named;
  named.parameter_names = {"c", "k"};
  const SolverSummary n = SolveBounded(problem, {0.0, -1.0}, {-5.0, -2.0}, {5.0, 2.0}, named);
  EXPECT_THAT(n.message, ::testing::HasSubstr("parameter(s) k here (a plateau"));
}

// r = (atan(x), 0.5) (a constant residual, so that the minimum is not a zero-residual one
// where the relative optimality tests cannot hold): from x = 3 the Gauss–Newton step overshoots to
// where |r| is larger, so an undamped step is rejected. A state whose damping has shrunk to 0
// (Nielsen's rule over a long crawl underflowed it once) must still end: the damping grows from its
// floor instead of staying 0 until 0·∞ = NaN made every step unsolvable and the loop never ended.
class AtanProblem : public LeastSquaresProblem {
 public:
  int num_parameters() const override { return 1; }
  void Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) override {
    const double r = std::atan(x[0]);
    const double j = 1.0 / (1.0 + x[0] * x[0]);
    out.chi2 = r * r + 0.25;
    out.n_points = 2;
    if (with_derivatives) {
      out.gradient = {j * r};
      out.hessian = {j * j};
    }
  }
};

TEST(NumericalFaults, ADampingShrunkToZeroStillEnds) {
  AtanProblem problem;
  SolverState state;
  state.x = {3.0};
  problem.Evaluate(state.x, true, state.equations);
  state.lambda = 0.0;
  state.nu = 2.0;
  state.scale = {std::sqrt(state.equations.hessian[0])};
  state.chi2_history = {state.equations.chi2};
  SolverHooks hooks;
  hooks.resume = &state;
  SolverOptions options;
  options.max_iterations = 200;
  const SolverSummary s = SolveBounded(problem, {3.0}, {-10.0}, {10.0}, options, {}, hooks);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.BriefReport();
  ASSERT_EQ(s.x.size(), 1u);
  EXPECT_NEAR(s.x[0], 0.0, 1e-4) << s.BriefReport();
  EXPECT_TRUE(std::isfinite(s.final_state.lambda) && s.final_state.lambda > 0.0) << s.BriefReport();
}
}  // namespace
}  // namespace homodyne::lsq
