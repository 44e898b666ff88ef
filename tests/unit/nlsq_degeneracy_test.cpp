// Degeneracy diagnostics on normal equations whose structure is known.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lsq/covariance.h"
#include "nlsq/degeneracy.h"

namespace homodyne::nlsq {
namespace {

// JᵀJ of a 3-parameter model whose columns 0 and 2 are almost the same up to scale (a
// degenerate pair) and column 1 independent of both: J = [u, v, 1000·(u + ε·w)].
std::vector<double> NearlyDegenerateJtj(double eps) {
  const int m = 50;
  std::vector<double> jtj(9, 0.0);
  for (int k = 0; k < m; ++k) {
    const double u = std::sin(0.3 * k + 0.1), v = std::cos(1.7 * k), w = std::sin(2.9 * k + 1.0);
    const double row[3] = {u, v, 1000.0 * (u + eps * w)};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) jtj[static_cast<std::size_t>(i * 3 + j)] += row[i] * row[j];
    }
  }
  return jtj;
}

TEST(NlsqDegeneracy, NamesTheDegeneratePairAndTheDirectionThatSpansIt) {
  const std::vector<std::string> names = {"D0", "alpha", "D_offset"};
  const std::vector<double> jtj = NearlyDegenerateJtj(1e-5);
  const lsq::CovarianceResult cov = lsq::CovarianceFromNormalEquations(jtj, 3, 10.0, 1000, 3);
  const DegeneracyDiagnostics d =
      DiagnoseDegeneracy(names, cov, {false, true, false}, {false, false, false});
  ASSERT_EQ(d.correlated.size(), 1U);
  EXPECT_EQ(d.correlated[0].first, "D0");
  EXPECT_EQ(d.correlated[0].second, "D_offset");
  EXPECT_LT(d.correlated[0].correlation, -kCorrelationWarning);  // D0 and D_offset trade off
  ASSERT_EQ(d.weakest.size(), 3U);
  EXPECT_LT(d.weakest[0].relative_eigenvalue, kWeakDirectionWarning);
  EXPECT_LE(d.weakest[0].relative_eigenvalue, d.weakest[1].relative_eigenvalue);
  ASSERT_EQ(d.weakest[0].components.size(), 2U);  // D0 and D_offset, not alpha
  EXPECT_NEAR(std::abs(d.weakest[0].components[0].second), std::sqrt(0.5), 1e-3);
  EXPECT_EQ(d.at_bound, std::vector<std::string>{"alpha (lower bound)"});
  EXPECT_EQ(d.warnings.size(), 2U);  // the pair and the direction
  EXPECT_NE(d.warnings[0].find("D0 and D_offset"), std::string::npos);
  // The correlation matrix: unit diagonal, symmetric.
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(d.correlation[static_cast<std::size_t>(i * 4)], 1.0, 1e-12);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(d.correlation[static_cast<std::size_t>(i * 3 + j)],
                d.correlation[static_cast<std::size_t>(j * 3 + i)]);
    }
  }
}

TEST(NlsqDegeneracy, WellDeterminedParametersRaiseNoWarning) {
  const std::vector<std::string> names = {"D0", "alpha", "D_offset"};
  const std::vector<double> jtj = NearlyDegenerateJtj(1.0);  // column 2 no longer follows 0
  const lsq::CovarianceResult cov = lsq::CovarianceFromNormalEquations(jtj, 3, 10.0, 1000, 3);
  const DegeneracyDiagnostics d =
      DiagnoseDegeneracy(names, cov, {false, false, false}, {false, false, false});
  EXPECT_TRUE(d.correlated.empty());
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_GT(d.weakest[0].relative_eigenvalue, kWeakDirectionWarning);
}

}  // namespace
}  // namespace homodyne::nlsq
