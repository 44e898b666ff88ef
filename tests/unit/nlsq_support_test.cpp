// Covariance, quality rules and Latin-hypercube starts of the NLSQ module.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/random.h"
#include "global/latin_hypercube.h"
#include "lsq/covariance.h"
#include "nlsq/fit_quality.h"

namespace homodyne::nlsq {
namespace {

// Straight line y = a + b·x with known noise: the covariance from JᵀJ must equal the
// textbook formula s²·(XᵀX)⁻¹.
TEST(Covariance, MatchesClosedFormForLinearModel) {
  const int m = 50;
  CounterRng rng(3, 0, 0);
  double sxx = 0, sx = 0, chi2 = 0;
  for (int i = 0; i < m; ++i) {
    const double x = i * 0.1;
    sx += x;
    sxx += x * x;
    const double r = 0.05 * rng.Normal();
    chi2 += r * r;
  }
  const std::vector<double> jtj = {double(m), sx, sx, sxx};
  auto c = lsq::CovarianceFromNormalEquations(jtj, 2, chi2, m, 2);
  const double s2 = chi2 / (m - 2);
  const double det = m * sxx - sx * sx;
  EXPECT_NEAR(c.reduced_chi2, s2, 1e-15);
  EXPECT_NEAR(c.covariance[0], s2 * sxx / det, 1e-12 * s2 * sxx / det);
  EXPECT_NEAR(c.covariance[1], -s2 * sx / det, 1e-12 * std::abs(s2 * sx / det));
  EXPECT_NEAR(c.covariance[3], s2 * m / det, 1e-12 * s2 * m / det);
  EXPECT_NEAR(c.uncertainties[1], std::sqrt(s2 * m / det), 1e-12);
  EXPECT_EQ(c.dropped_directions, 0);
}

TEST(Covariance, SingularDirectionIsDroppedNotInfinite) {
  const std::vector<double> jtj = {1, 1, 1, 1};  // two identical columns
  auto c = lsq::CovarianceFromNormalEquations(jtj, 2, 10.0, 12, 2);
  EXPECT_EQ(c.dropped_directions, 1);
  for (double u : c.uncertainties) EXPECT_TRUE(std::isfinite(u));
}

// Parameters on very different scales with a strongly correlated pair (as D0 ~ 1e4 and
// γ̇0 ~ 1e-3 in a laminar fit, with D0 and D_offset correlated): the uncertainties must be
// those of the same problem in units of order one, rescaled, and must not move when the last
// bits of JᵀJ do. On the raw JᵀJ the small eigenvalues were rounding noise.
TEST(Covariance, UncertaintiesAreIndependentOfParameterUnits) {
  // A unit-scale 3-parameter problem: J columns with correlation 0.9999 between 0 and 1.
  const int n = 3;
  const double rho = 0.9999;
  const std::vector<double> unit = {1.0, rho, 0.1, rho, 1.0, 0.1, 0.1, 0.1, 1.0};
  const double chi2 = 80.0;
  const std::int64_t m = 100;
  const auto ref = lsq::CovarianceFromNormalEquations(unit, n, chi2, m, n);
  // The same problem with the parameters in units 1e-4, 1e3 and 1e6 times smaller:
  // JᵀJ_ij → JᵀJ_ij·u_i·u_j and σ_i → σ_i/u_i.
  const double u[3] = {1e-4, 1e-3 * 1e6, 1e6};
  for (double wobble : {0.0, 1e-15, -2e-15}) {
    std::vector<double> scaled(unit.size());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        scaled[static_cast<std::size_t>(i * n + j)] =
            unit[static_cast<std::size_t>(i * n + j)] * u[i] * u[j] * (1.0 + (i != j ? wobble : 0));
      }
    }
    const auto c = lsq::CovarianceFromNormalEquations(scaled, n, chi2, m, n);
    EXPECT_EQ(c.dropped_directions, 0);
    for (int i = 0; i < n; ++i) {
      const double expect = ref.uncertainties[static_cast<std::size_t>(i)] / u[i];
      EXPECT_NEAR(c.uncertainties[static_cast<std::size_t>(i)], expect, 1e-9 * expect)
          << "parameter " << i << ", relative change of the off-diagonal " << wobble;
    }
  }
}

TEST(Covariance, TransformExpandsAveragedParameters) {
  // One shared contrast replicated to three angles: B = [1;1;1].
  const std::vector<double> cov = {0.04};
  auto out = lsq::TransformCovariance(cov, 1, {1, 1, 1}, 3);
  for (double v : out) EXPECT_DOUBLE_EQ(v, 0.04);
}

TEST(FitQuality, ThresholdsAndWarnings) {
  EXPECT_EQ(AssessFitQuality(1.2, true, {}).flag, FitQuality::kGood);
  EXPECT_TRUE(AssessFitQuality(1.2, true, {}).passed);
  EXPECT_EQ(AssessFitQuality(2.0, true, {}).flag, FitQuality::kAcceptable);
  EXPECT_EQ(AssessFitQuality(5.0, true, {}).flag, FitQuality::kPoor);
  EXPECT_TRUE(AssessFitQuality(5.0, true, {}).passed);  // poor but below the warning level
  auto q = AssessFitQuality(12.0, false,
                            {{"D0", true, false, true}, {"contrast_0", false, true, false}});
  EXPECT_FALSE(q.passed);
  ASSERT_EQ(q.warnings.size(), 3u);  // chi2 > 10, not converged, D0 at bound (scaling ignored)
  EXPECT_THAT(q.warnings[2], ::testing::HasSubstr("D0 is at its upper bound"));
}

TEST(LatinHypercube, OnePointPerStratumAndDeterministic) {
  const std::vector<double> lo = {0.0, -2.0, 100.0};
  const std::vector<double> hi = {1.0, 2.0, 1e5};
  const int n = 16;
  auto pts = global::LatinHypercube(n, lo, hi, 42);
  ASSERT_EQ(pts.size(), 16u);
  for (std::size_t d = 0; d < lo.size(); ++d) {
    std::set<int> strata;
    for (const auto& p : pts) {
      ASSERT_GE(p[d], lo[d]);
      ASSERT_LE(p[d], hi[d]);
      strata.insert(static_cast<int>((p[d] - lo[d]) / (hi[d] - lo[d]) * n));
    }
    EXPECT_EQ(strata.size(), static_cast<std::size_t>(n)) << "dimension " << d;
  }
  EXPECT_EQ(pts, global::LatinHypercube(n, lo, hi, 42));
  EXPECT_NE(pts, global::LatinHypercube(n, lo, hi, 43));
}

// homodyne's "random" sampling: inside the bounds, deterministic for a seed, and not a
// hypercube (some stratum of some dimension holds two points among 16 draws).
TEST(UniformPoints, InsideTheBoundsDeterministicAndNotStratified) {
  const std::vector<double> lo = {0.0, -2.0, 100.0};
  const std::vector<double> hi = {1.0, 2.0, 1e5};
  const int n = 16;
  const auto pts = global::UniformPoints(n, lo, hi, 42);
  ASSERT_EQ(pts.size(), 16u);
  bool some_stratum_twice = false;
  for (std::size_t d = 0; d < lo.size(); ++d) {
    std::set<int> strata;
    for (const auto& p : pts) {
      ASSERT_GE(p[d], lo[d]);
      ASSERT_LE(p[d], hi[d]);
      strata.insert(static_cast<int>((p[d] - lo[d]) / (hi[d] - lo[d]) * n));
    }
    some_stratum_twice = some_stratum_twice || strata.size() < static_cast<std::size_t>(n);
  }
  EXPECT_TRUE(some_stratum_twice);
  EXPECT_EQ(pts, global::UniformPoints(n, lo, hi, 42));
  EXPECT_NE(pts, global::UniformPoints(n, lo, hi, 43));
  EXPECT_NE(pts, global::LatinHypercube(n, lo, hi, 42));
}

}  // namespace
}  // namespace homodyne::nlsq
