// xpcsjax's L3 rows (nlsq/scaling_penalty.h): the CV and its gradient, and the rows' share
// of χ², Jᵀr and JᵀJ, against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/analysis_mode.h"
#include "model/expanded_parameters.h"
#include "model/normal_equations.h"
#include "nlsq/scaling_penalty.h"

namespace homodyne::nlsq {
namespace {

double PopulationStd(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double s = 0.0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

TEST(NlsqScalingPenalty, CoefficientOfVariationIsStdOverAbsMean) {
  const std::vector<double> v = {0.2, 0.25, 0.31, 0.18};
  const double mean = (0.2 + 0.25 + 0.31 + 0.18) / 4.0;
  EXPECT_NEAR(ComputeCoefficientOfVariation(v).value, PopulationStd(v) / mean, 1e-15);
  // A negative mean: divided by |mean|.
  const std::vector<double> neg = {-0.2, -0.25, -0.31};
  EXPECT_NEAR(ComputeCoefficientOfVariation(neg).value, PopulationStd(neg) / 0.2533333333333333,
              1e-12);
  // |mean| at most 1e-10: the std itself.
  const std::vector<double> centred = {-0.3, 0.3};
  EXPECT_DOUBLE_EQ(ComputeCoefficientOfVariation(centred).value, 0.3);
  // All equal: zero, with a zero gradient.
  const CoefficientOfVariation flat = ComputeCoefficientOfVariation(std::vector<double>{0.4, 0.4});
  EXPECT_EQ(flat.value, 0.0);
  EXPECT_EQ(flat.gradient, (std::vector<double>{0.0, 0.0}));
}

TEST(NlsqScalingPenalty, GradientMatchesFiniteDifferences) {
  for (const std::vector<double>& v :
       {std::vector<double>{0.2, 0.25, 0.31, 0.18}, std::vector<double>{-0.9, -1.1, -1.05},
        std::vector<double>{1.01, 0.98}, std::vector<double>{-0.3, 0.2999999, 0.05}}) {
    const CoefficientOfVariation cv = ComputeCoefficientOfVariation(v);
    ASSERT_EQ(cv.gradient.size(), v.size());
    for (std::size_t k = 0; k < v.size(); ++k) {
      const double h = 1e-7 * std::max(1.0, std::abs(v[k]));
      std::vector<double> up = v, down = v;
      up[k] += h;
      down[k] -= h;
      const double fd =
          (ComputeCoefficientOfVariation(up).value - ComputeCoefficientOfVariation(down).value) /
          (2.0 * h);
      EXPECT_NEAR(cv.gradient[k], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "k " << k;
    }
  }
}

// The rows enter the normal equations as two more residuals p = w·CV with w = sqrt(λ)/σ:
// χ² += Σp², Jᵀr += Σp∇p, JᵀJ += Σ∇p∇pᵀ, only in the scaling block.
TEST(NlsqScalingPenalty, RowsAddTheirShareOfTheNormalEquations) {
  const model::ExpandedIndex index(model::AnalysisMode::kTwoComponent, 3);
  const double lambda = 2.5, sigma = 0.01;
  const ScalingSpreadPenalty penalty(index, lambda, sigma);
  ASSERT_TRUE(penalty.active());
  EXPECT_EQ(penalty.rows(), 2);
  std::vector<double> x(static_cast<std::size_t>(index.size()), 0.7);
  x[0] = 0.21;
  x[1] = 0.26;
  x[2] = 0.3;  // contrasts
  x[3] = 1.01;
  x[4] = 0.99;
  x[5] = 1.04;  // offsets
  const double w = std::sqrt(lambda) / sigma;
  const auto rows = [&](const std::vector<double>& e) {
    return std::vector<double>{
        w * ComputeCoefficientOfVariation(std::vector<double>(e.begin(), e.begin() + 3)).value,
        w * ComputeCoefficientOfVariation(std::vector<double>(e.begin() + 3, e.begin() + 6)).value};
  };
  const std::vector<double> p = rows(x);
  EXPECT_NEAR(penalty.Chi2(x), p[0] * p[0] + p[1] * p[1], 1e-12 * penalty.Chi2(x));

  model::NormalEquations eq(index.size());
  eq.chi2 = 5.0;
  penalty.AddTo(x, eq);
  double chi2_only = 5.0;
  penalty.AddChi2(x, chi2_only);
  EXPECT_EQ(eq.chi2, chi2_only);  // the same bits with and without derivatives
  // Jacobian of the two rows by central differences; JᵀJ and Jᵀr from it.
  const auto n = static_cast<std::size_t>(index.size());
  std::vector<double> jac(2 * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double h = 1e-7;
    std::vector<double> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const std::vector<double> pu = rows(up), pd = rows(down);
    for (std::size_t r = 0; r < 2; ++r) jac[r * n + i] = (pu[r] - pd[r]) / (2.0 * h);
  }
  for (std::size_t a = 0; a < n; ++a) {
    const double jtr = p[0] * jac[a] + p[1] * jac[n + a];
    EXPECT_NEAR(eq.jtr[a], jtr, 1e-6 * std::max(1.0, std::abs(jtr))) << a;
    for (std::size_t b = 0; b < n; ++b) {
      const double jtj = jac[a] * jac[b] + jac[n + a] * jac[n + b];
      EXPECT_NEAR(eq.JtJ(static_cast<int>(a), static_cast<int>(b)), jtj,
                  1e-5 * std::max(1.0, std::abs(jtj)))
          << a << "," << b;
    }
  }
  // Physics untouched.
  for (std::size_t a = 6; a < n; ++a) EXPECT_EQ(eq.jtr[a], 0.0);
  // The gradient of ½χ² is Jᵀr: check against a finite difference of the penalty χ².
  for (std::size_t a = 0; a < 6; ++a) {
    const double h = 1e-7;
    std::vector<double> up = x, down = x;
    up[a] += h;
    down[a] -= h;
    const double fd = 0.5 * (penalty.Chi2(up) - penalty.Chi2(down)) / (2.0 * h);
    EXPECT_NEAR(eq.jtr[a], fd, 1e-5 * std::max(1.0, std::abs(fd))) << a;
  }

  // Inactive: nothing added.
  model::NormalEquations none(index.size());
  ScalingSpreadPenalty().AddTo(x, none);
  EXPECT_EQ(none.chi2, 0.0);
  EXPECT_EQ(ScalingSpreadPenalty().Chi2(x), 0.0);
}

}  // namespace
}  // namespace homodyne::nlsq
