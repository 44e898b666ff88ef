// NaN/Inf from the model never reaches a result silently: trial steps into a region
// where χ² is not finite are rejected, and a problem that is not finite at the start is
// reported as a numerical failure with a message saying so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mpi_test_env.h"
#include "nlsq/bounded_solver.h"

namespace homodyne::nlsq {
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

}  // namespace
}  // namespace homodyne::nlsq
