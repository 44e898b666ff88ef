// The Laplace map's axis check (cmc/whitening_check.h) on constructed targets: a Gaussian
// and its exact map pass, and so do a moderately curved ridge, a moderately skewed density
// and a map off by 10x (the sampler's adaptation recovers those); an extreme banana, an
// extremely skewed density, a wall within 1 map sd and a map off by 50x fail (a map away
// from the mode is reported and kept), each with the axis and the implied scale that say why.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cmc/whitening_check.h"
#include "nuts/log_density.h"

namespace homodyne::cmc {
namespace {

// log π(x, y) = −x²/2 − (y − b·x²)²/(2s²): its mode is (0, 0) and its Hessian there
// diag(1, 1/s²), whatever the curvature b of the ridge.
class Banana final : public nuts::LogDensity {
 public:
  Banana(double b, double s) : b_(b), s_(s) {}
  int dimension() const override { return 2; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    const double r = (q[1] - b_ * q[0] * q[0]) / s_;
    g[0] = -q[0] + 2.0 * b_ * q[0] * r / s_;
    g[1] = -r / s_;
    return -0.5 * q[0] * q[0] - 0.5 * r * r;
  }

 private:
  double b_, s_;
};

// log π(x) = a·x − e^x (log of a Gamma(a) variable): mode log a, Hessian a at the mode;
// skewed to the left, the more so the smaller a.
class LogGamma final : public nuts::LogDensity {
 public:
  explicit LogGamma(double a) : a_(a) {}
  int dimension() const override { return 1; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    g[0] = a_ - std::exp(q[0]);
    return a_ * q[0] - std::exp(q[0]);
  }

 private:
  double a_;
};

// A standard normal in 2-D cut at x > wall (zero density below).
class WalledNormal final : public nuts::LogDensity {
 public:
  explicit WalledNormal(double wall) : wall_(wall) {}
  int dimension() const override { return 2; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    g[0] = -q[0];
    g[1] = -q[1];
    if (q[0] <= wall_) return -std::numeric_limits<double>::infinity();
    return -0.5 * (q[0] * q[0] + q[1] * q[1]);
  }

 private:
  double wall_;
};

Whitening Map(std::vector<double> centre, std::vector<double> chol) {
  Whitening w;
  w.centre = std::move(centre);
  w.chol = std::move(chol);
  return w;
}

TEST(WhiteningCheck, ExactMapOfAGaussianPasses) {
  // Covariance [[4, 1.2], [1.2, 0.49]] around (3, −1): L = chol of it.
  const std::vector<double> cov{4.0, 1.2, 1.2, 0.49};
  const nuts::GaussianDensity gauss({3.0, -1.0}, cov);
  const double l00 = 2.0, l10 = 1.2 / l00, l11 = std::sqrt(0.49 - l10 * l10);
  const WhiteningCheck c = CheckWhiteningAxes(gauss, Map({3.0, -1.0}, {l00, 0.0, l10, l11}));
  EXPECT_FALSE(c.poor) << c.Describe();
  EXPECT_NEAR(c.min_scale, 1.0, 1e-9);
  EXPECT_NEAR(c.max_scale, 1.0, 1e-9);
  EXPECT_EQ(c.evaluations, 1 + 2 * 2);
}

TEST(WhiteningCheck, CurvedRidgeKeepsTheMapUnlessExtreme) {
  // The ridge bends by 4 of its widths at x = ±1: implied sd 1/√(1 + 16) ≈ 0.24 along x,
  // within the default tolerance (the demo's shear ridge looks like this), outside 4x.
  const Whitening map = Map({0.0, 0.0}, {1.0, 0.0, 0.0, 0.1});
  const WhiteningCheck curved = CheckWhiteningAxes(Banana(0.4, 0.1), map);
  EXPECT_FALSE(curved.poor) << curved.Describe();
  EXPECT_NEAR(curved.scale, 1.0 / std::sqrt(17.0), 1e-9);
  EXPECT_TRUE(CheckWhiteningAxes(Banana(0.4, 0.1), map, {4.0}).poor);
  // 40 widths: implied sd ≈ 0.025, the map is poor.
  const WhiteningCheck banana = CheckWhiteningAxes(Banana(4.0, 0.1), map);
  EXPECT_TRUE(banana.poor) << banana.Describe();
  EXPECT_EQ(banana.axis, 0);
  EXPECT_LT(banana.scale, 0.05);
  EXPECT_NEAR(banana.max_scale, 1.0, 1e-12);  // the other axis is exactly Gaussian
  EXPECT_NE(banana.Describe({"x", "y"}).find("axis 0 (x)"), std::string::npos) << banana.Describe();
}

TEST(WhiteningCheck, ExtremelySkewedDensityFailsAndAModerateOnePasses) {
  // Gamma(a) in log coordinates, mode log a, Laplace sd 1/√a; at +1 sd the density falls
  // by a·(e^(1/√a) − 1 − 1/√a).
  const auto check = [](double a) {
    return CheckWhiteningAxes(LogGamma(a), Map({std::log(a)}, {1.0 / std::sqrt(a)}));
  };
  const WhiteningCheck extreme = check(0.01);  // implied sd ≈ 0.048 at +1
  EXPECT_TRUE(extreme.poor) << extreme.Describe();
  EXPECT_EQ(extreme.k, 1.0);
  EXPECT_FALSE(check(0.05).poor);  // implied sds 0.35 … 1.7
  EXPECT_FALSE(check(50.0).poor);
}

TEST(WhiteningCheck, WallWithinOneMapSdFails) {
  const WhiteningCheck c =
      CheckWhiteningAxes(WalledNormal(-0.5), Map({0.0, 0.0}, {1.0, 0.0, 0.0, 1.0}));
  EXPECT_TRUE(c.poor);
  EXPECT_EQ(c.axis, 0);
  EXPECT_EQ(c.k, -1.0);
  EXPECT_EQ(c.scale, 0.0);
  EXPECT_EQ(c.min_scale, 0.0);
  EXPECT_FALSE(std::isfinite(c.drop));
  EXPECT_NE(c.Describe().find("zero"), std::string::npos) << c.Describe();
  // Beyond 1 map sd the wall is not probed: the map is kept.
  EXPECT_FALSE(CheckWhiteningAxes(WalledNormal(-1.5), Map({0.0, 0.0}, {1.0, 0.0, 0.0, 1.0})).poor);
}

TEST(WhiteningCheck, GrossScaleErrorOrWrongCentreFails) {
  const nuts::StandardNormalDensity normal(2);
  // The map 50x too narrow along y: implied sd 50 map sds.
  const WhiteningCheck narrow = CheckWhiteningAxes(normal, Map({0.0, 0.0}, {1.0, 0.0, 0.0, 0.02}));
  EXPECT_TRUE(narrow.poor);
  EXPECT_EQ(narrow.axis, 1);
  EXPECT_NEAR(narrow.scale, 50.0, 1e-9);
  // 50x too wide: 0.02.
  const WhiteningCheck wide = CheckWhiteningAxes(normal, Map({0.0, 0.0}, {50.0, 0.0, 0.0, 1.0}));
  EXPECT_TRUE(wide.poor);
  EXPECT_EQ(wide.axis, 0);
  EXPECT_NEAR(wide.scale, 0.02, 1e-12);
  // 10x off either way is inside the default tolerance (20x), and outside a tolerance of 4.
  const Whitening off10 = Map({0.0, 0.0}, {10.0, 0.0, 0.0, 0.1});
  EXPECT_FALSE(CheckWhiteningAxes(normal, off10).poor);
  EXPECT_TRUE(CheckWhiteningAxes(normal, off10, {4.0}).poor);
  // Centred 3 sds away from the mode: the density rises along that axis; reported, not
  // decisive (the warmup moves the chains to the mode), so the map is kept.
  const WhiteningCheck away = CheckWhiteningAxes(normal, Map({3.0, 0.0}, {1.0, 0.0, 0.0, 1.0}));
  EXPECT_TRUE(away.rises);
  EXPECT_FALSE(away.poor) << away.Describe();
  EXPECT_NE(away.Describe().find("stopped short"), std::string::npos) << away.Describe();
}

TEST(WhiteningCheck, RejectsABadTolerance) {
  const nuts::StandardNormalDensity normal(1);
  EXPECT_ANY_THROW(CheckWhiteningAxes(normal, Map({0.0}, {1.0}), {1.0}));
  EXPECT_ANY_THROW(
      CheckWhiteningAxes(normal, Map({0.0}, {1.0}), {std::numeric_limits<double>::infinity()}));
}

}  // namespace
}  // namespace homodyne::cmc
