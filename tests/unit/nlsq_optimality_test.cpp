// The first-order optimality test of the NLSQ solvers (lsq/optimality.h): when the
// Gauss–Newton decrement may end a solve.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lsq/optimality.h"

namespace homodyne::nlsq {
namespace {

// Normal equations of two parameters with unit columns (H = [[1, c], [c, 1]]), residual
// norm² chi2 and gradient g: the cosine is max |g_i| / sqrt(chi2).
lsq::NormalEquations Equations(double g0, double g1, double coupling, double chi2) {
  lsq::NormalEquations eq;
  eq.chi2 = chi2;
  eq.gradient = {g0, g1};
  eq.hessian = {1.0, coupling, coupling, 1.0};
  eq.n_points = 1000;
  return eq;
}

const std::vector<double> kX = {0.0, 0.0};
const std::vector<double> kLower = {-10.0, -10.0};
const std::vector<double> kUpper = {10.0, 10.0};

// The two-component case of the issue: the template's ftol = gtol = 1e-6, a point 52x above
// the minimum's chi2 where the decrement (4.5e-7) passed while the cosine was 4.6e-4. The
// decrement there is a slow stretch's promise, not a minimum, whatever ftol says.
TEST(NlsqOptimality, DecrementWithALargeCosineIsNotOptimal) {
  const double chi2 = 184457.0;
  const double g = 4.6e-4 * std::sqrt(chi2);
  const lsq::OptimalityMeasure m =
      lsq::MeasureOptimality(kX, Equations(g, 0.0, 0.0, chi2), kLower, kUpper);
  EXPECT_NEAR(m.cosine, 4.6e-4, 1e-12);
  EXPECT_LE(m.decrement, 1e-6);
  EXPECT_TRUE(m.insensitive.empty());
  EXPECT_FALSE(lsq::DecrementHolds(m, 1e-6));
  EXPECT_FALSE(IsOptimal(m, 1e-6, 1e-6));
  EXPECT_FALSE(IsOptimal(m, 1e-2, 1e-6));
  // Only the cosine's own test can pass such a point.
  EXPECT_TRUE(IsOptimal(m, 1e-6, 4.7e-4));
}

// The measured true minimum of a two-component fit with the default tolerances: the cosine
// stayed at 1.17e-6, 117 gtol, with the decrement at 1.4e-12. The decrement ends it.
TEST(NlsqOptimality, DecrementWithTheCosineBelowTheCapIsOptimal) {
  const double chi2 = 980.25;
  const double g = 1.17e-6 * std::sqrt(chi2);
  const lsq::OptimalityMeasure m =
      lsq::MeasureOptimality(kX, Equations(g, 0.0, 0.0, chi2), kLower, kUpper);
  EXPECT_GT(m.cosine, 100 * 1e-8);
  EXPECT_LE(m.decrement, 1e-8);
  EXPECT_TRUE(lsq::DecrementHolds(m, 1e-8));
  EXPECT_TRUE(IsOptimal(m, 1e-8, 1e-8));
  // The decrement has to hold itself.
  EXPECT_FALSE(IsOptimal(m, 0.5 * m.decrement, 1e-8));
}

// With the default ftol the cap never binds: decrement ≥ cosine², so decrement ≤ 1e-8 means
// cosine ≤ 1e-4. Strongly coupled columns make the decrement exceed cosine².
TEST(NlsqOptimality, TheDecrementBoundsTheCosine) {
  const double chi2 = 1e4;
  for (const double coupling : {0.0, 0.5, 0.96, -0.999}) {
    for (const double cos0 : {1e-3, 1e-4, 3e-5}) {
      const double c = cos0 * std::sqrt(chi2);
      const lsq::OptimalityMeasure m =
          lsq::MeasureOptimality(kX, Equations(c, -0.3 * c, coupling, chi2), kLower, kUpper);
      EXPECT_NEAR(m.cosine, cos0, 1e-12 * cos0);
      EXPECT_GE(m.decrement, m.cosine * m.cosine * (1.0 - 1e-12));
      EXPECT_TRUE(m.decrement > 1e-8 || lsq::DecrementHolds(m, 1e-8));
    }
  }
  // Coupled columns, g = (c, -c): the decrement is 2c²/(1 - 0.96) / chi2, 50 cosine².
  const double c = 1e-7 * std::sqrt(chi2);
  const lsq::OptimalityMeasure m =
      lsq::MeasureOptimality(kX, Equations(c, -c, 0.96, chi2), kLower, kUpper);
  EXPECT_NEAR(m.decrement, 50.0 * 1e-14, 1e-18);
  EXPECT_TRUE(IsOptimal(m, 1e-20, 1.1e-7));  // the cosine test alone
  EXPECT_FALSE(IsOptimal(m, 1e-20, 0.9e-7));
  EXPECT_TRUE(IsOptimal(m, 1e-12, 0.0));  // the decrement test alone
}

// A parameter the model does not respond to makes no point optimal, whatever the measures.
TEST(NlsqOptimality, PlateauIsNeverOptimal) {
  lsq::NormalEquations eq = Equations(0.0, 0.0, 0.0, 1e4);
  eq.hessian[3] = 1e-14;  // parameter 1 moves the model by nothing across its range
  const lsq::OptimalityMeasure m = lsq::MeasureOptimality(kX, eq, kLower, kUpper);
  ASSERT_EQ(m.insensitive.size(), 1u);
  EXPECT_EQ(m.insensitive[0], 1);
  EXPECT_FALSE(IsOptimal(m, 1e-6, 1e-6));
}

}  // namespace
}  // namespace homodyne::nlsq
