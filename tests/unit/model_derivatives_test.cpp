// Analytic derivatives of c2 (ReferenceGradient) against Richardson-extrapolated central
// finite differences of the literal reference model.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "model/reference_gradient.h"
#include "model/reference_model.h"
#include "model/sinc_derivative.h"

namespace homodyne::model::reference {
namespace {

struct Point {
  AnalysisMode mode;
  Geometry geometry;
  std::vector<double> t;
  std::vector<double> phi;
  std::vector<double> params;  // expanded order
};

std::vector<double> UniformGrid(double first, double step, int n) {
  std::vector<double> t(static_cast<size_t>(n));
  for (int m = 0; m < n; ++m) t[static_cast<size_t>(m)] = first + step * m;
  return t;
}

// All c2 values of the literal model, flattened [k][i][j].
std::vector<double> AllC2(const Point& pt, const std::vector<double>& params) {
  ExpandedIndex idx(pt.mode, static_cast<int>(pt.phi.size()));
  ModelInput in;
  in.mode = pt.mode;
  in.geometry = pt.geometry;
  in.t = pt.t;
  in.phi_deg = pt.phi;
  in.contrast.assign(params.begin(), params.begin() + idx.n_angles);
  in.offset.assign(params.begin() + idx.n_angles, params.begin() + 2 * idx.n_angles);
  in.physical.assign(params.begin() + idx.phys(0), params.end());
  const auto ev = Evaluate(in);
  std::vector<double> out;
  for (const auto& m : ev.c2) out.insert(out.end(), m.begin(), m.end());
  return out;
}

// Typical magnitude of each parameter (sets the finite-difference step).
double Scale(const ExpandedIndex& idx, int p) {
  if (p < 2 * idx.n_angles) return 0.1;
  static const double kPhys[7] = {1e3, 0.1, 10.0, 1e-3, 0.1, 1e-4, 1.0};
  return kPhys[p - idx.phys(0)];
}

void CheckAgainstFiniteDifferences(const Point& pt, int* checked_nonzero) {
  const ExpandedIndex idx(pt.mode, static_cast<int>(pt.phi.size()));
  const int n = static_cast<int>(pt.t.size());
  const ReferenceGradient ref(pt.mode, pt.geometry, pt.t, pt.phi, pt.params);
  const auto base = AllC2(pt, pt.params);
  std::vector<double> grad(static_cast<size_t>(idx.size()));
  double max_c2 = 0.0;
  for (double v : base) max_c2 = std::max(max_c2, std::abs(v));
  const size_t n_points = base.size();
  std::vector<double> analytic(n_points * static_cast<size_t>(idx.size()));
  for (int k = 0; k < idx.n_angles; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const size_t e = static_cast<size_t>((k * n + i) * n + j);
        const double c2 = ref.C2(k, i, j, grad);
        ASSERT_NEAR(c2, base[e], 1e-15);
        for (int p = 0; p < idx.size(); ++p) {
          analytic[e * static_cast<size_t>(idx.size()) + static_cast<size_t>(p)] =
              grad[static_cast<size_t>(p)];
        }
      }
    }
  }
  for (int p = 0; p < idx.size(); ++p) {
    SCOPED_TRACE(idx.Names(pt.mode)[static_cast<size_t>(p)]);
    const double x = pt.params[static_cast<size_t>(p)];
    const double h = 1e-5 * std::max(std::abs(x), Scale(idx, p));
    auto central = [&](double step) {
      auto plus = pt.params, minus = pt.params;
      plus[static_cast<size_t>(p)] += step;
      minus[static_cast<size_t>(p)] -= step;
      const auto fp = AllC2(pt, plus), fm = AllC2(pt, minus);
      std::vector<double> d(n_points);
      for (size_t e = 0; e < n_points; ++e) d[e] = (fp[e] - fm[e]) / (2.0 * step);
      return d;
    };
    const auto d1 = central(h), d2 = central(0.5 * h);
    double max_abs = 0.0;
    for (size_t e = 0; e < n_points; ++e) {
      max_abs = std::max(
          max_abs,
          std::abs(analytic[e * static_cast<size_t>(idx.size()) + static_cast<size_t>(p)]));
    }
    for (size_t e = 0; e < n_points; ++e) {
      const double fd = (4.0 * d2[e] - d1[e]) / 3.0;  // Richardson extrapolation
      const double an = analytic[e * static_cast<size_t>(idx.size()) + static_cast<size_t>(p)];
      // Relative 1e-6, plus the rounding noise of the differences (≈ 3·ε·|c2|/h).
      const double tol = 1e-6 * std::abs(an) + 1e-8 * max_abs + 3e-15 * max_c2 / h;
      ASSERT_NEAR(an, fd, tol) << "point " << e;
      if (std::abs(an) > 1e-6 * max_abs && an != 0.0) ++*checked_nonzero;
    }
  }
}

TEST(ModelDerivativesTest, LaminarGeneralWithTimeFloorAndNegativeExponents) {
  // Case D of the spec on the loader grid (t = 0 → dt/2 floor), nonzero beta, negative alpha.
  Point pt{AnalysisMode::kLaminarFlow,
           Geometry{0.01, 2e6, 0.1},
           UniformGrid(0.0, 0.1, 9),
           {-30.0, 0.0, 45.0, 90.0, 170.0},
           {}};
  pt.params = {0.3, 0.25, 0.2,  0.35,  0.1,  1.0,  1.01, 0.99, 1.02,
               1.0, 2e4,  -0.5, 100.0, 2e-3, -0.3, 1e-3, 5.0};
  int nonzero = 0;
  CheckAgainstFiniteDifferences(pt, &nonzero);
  EXPECT_GT(nonzero, 1000);
}

TEST(ModelDerivativesTest, LaminarPositiveBetaTemplateGrid) {
  Point pt{AnalysisMode::kLaminarFlow,
           Geometry{0.0054, 2e6, 1e-3},
           UniformGrid(1e-3, 1e-3, 12),
           {0.0, 30.0, 90.0},
           {}};
  pt.params = {0.2, 0.25, 0.3, 1.0, 1.02, 0.98, 5e4, 0.5, -50.0, 0.25, 0.7, 0.01, -2.0};
  int nonzero = 0;
  CheckAgainstFiniteDifferences(pt, &nonzero);
  EXPECT_GT(nonzero, 500);
}

TEST(ModelDerivativesTest, LaminarNegativeShearIsFlooredAndHasZeroShearGradient) {
  // γ̇(t) = 1e-6·t^0.3 − 0.1 < 0 everywhere → floored to 1e-10, shear derivatives vanish.
  Point pt{AnalysisMode::kLaminarFlow,
           Geometry{0.01, 2e6, 0.1},
           UniformGrid(0.1, 0.1, 8),
           {0.0, 60.0},
           {}};
  pt.params = {0.4, 0.3, 1.0, 1.0, 3e3, -1.2, 20.0, 1e-6, 0.3, -0.1, 3.0};
  const ReferenceGradient ref(pt.mode, pt.geometry, pt.t, pt.phi, pt.params);
  std::vector<double> grad(11);
  ref.C2(0, 1, 5, grad);
  EXPECT_EQ(grad[7], 0.0);
  EXPECT_EQ(grad[8], 0.0);
  EXPECT_EQ(grad[9], 0.0);
  EXPECT_NE(grad[4], 0.0);
  int nonzero = 0;
  CheckAgainstFiniteDifferences(pt, &nonzero);
  EXPECT_GT(nonzero, 100);
}

TEST(ModelDerivativesTest, StaticNegativeAlphaFromZero) {
  Point pt{AnalysisMode::kStatic, Geometry{0.01, 2e6, 0.1}, UniformGrid(0.0, 0.1, 10), {0.0}, {}};
  pt.params = {0.3, 1.0, 2e4, -1.5, -30.0};
  int nonzero = 0;
  CheckAgainstFiniteDifferences(pt, &nonzero);
  EXPECT_GT(nonzero, 150);
}

TEST(ModelDerivativesTest, StaticFastDecayHitsFloorsWithZeroDerivative) {
  // Very strong decay (q = 2): the g1 floor is active far from the diagonal and the log clip
  // at −700 further out; both pass no gradient.
  Point pt{
      AnalysisMode::kStatic, Geometry{2.0, 2e6, 0.01}, UniformGrid(0.01, 0.01, 24), {10.0}, {}};
  pt.params = {0.4, 0.98, 1e5, 2.0, -20.0};
  const ReferenceGradient ref(pt.mode, pt.geometry, pt.t, pt.phi, pt.params);
  ModelInput in{pt.mode, pt.geometry, pt.t, pt.phi, {1e5, 2.0, -20.0}, {0.4}, {0.98}};
  const auto ev = Evaluate(in);
  std::vector<double> grad(5);
  int clipped = 0, floored = 0;
  for (int i = 0; i < 24; ++i) {
    for (int j = 0; j < 24; ++j) {
      const size_t e = static_cast<size_t>(i * 24 + j);
      ref.C2(0, i, j, grad);
      clipped += (-pt.geometry.DiffusionPrefactor() * ev.integral_d[e] < -700.0);
      if (ev.g1[0][e] == 1e-10) {  // g1 floor selected
        ++floored;
        EXPECT_EQ(grad[2], 0.0);
        EXPECT_EQ(grad[3], 0.0);
        EXPECT_EQ(grad[4], 0.0);
        EXPECT_DOUBLE_EQ(grad[0], 1e-20);
        EXPECT_EQ(grad[1], 1.0);
      } else if (i != j) {  // on the diagonal dI/dθ = Δ/I·dΔ = 0
        EXPECT_NE(grad[2], 0.0);
      }
    }
  }
  EXPECT_GT(clipped, 4);
  EXPECT_GT(floored, clipped + 10);
  int nonzero = 0;
  CheckAgainstFiniteDifferences(pt, &nonzero);
  EXPECT_GT(nonzero, 50);
}

}  // namespace
}  // namespace homodyne::model::reference

namespace homodyne::model {
namespace {

TEST(SincDerivativeTest, MatchesSeriesAndClosedFormWithoutCancellation) {
  // Taylor region: derivative of 1 − x²/6 + x⁴/120.
  EXPECT_DOUBLE_EQ(SincDerivative(5e-5, 0.0, 0.0), -5e-5 / 3.0 + 1.25e-13 / 30.0);
  // Series region against (x·cos x − sin x)/x² evaluated with 200-bit mpmath.
  const std::pair<double, double> cases[] = {
      {1.2e-4, -0.000039999999942400001043}, {1e-3, -0.00033333330000000119742},
      {3e-2, -0.0099991000289280889207},     {0.2, -0.066400380670322234521},
      {-0.45, 0.14698438544457084629},       {0.4999, -0.1625061598553675426}};
  for (const auto& [x, exact] : cases) {
    EXPECT_NEAR(SincDerivative(x, std::sin(x) / x, std::cos(x)), exact, 4e-16 * std::abs(exact))
        << x;
  }
  // Closed form above 0.5, continuous across the switch.
  const double below = SincDerivative(std::nextafter(0.5, 0.0), std::sin(0.5) / 0.5, std::cos(0.5));
  const double above = SincDerivative(0.5, std::sin(0.5) / 0.5, std::cos(0.5));
  EXPECT_NEAR(below, above, 1e-15);
  EXPECT_DOUBLE_EQ(SincDerivative(3.0, std::sin(3.0) / 3.0, std::cos(3.0)),
                   (std::cos(3.0) - std::sin(3.0) / 3.0) / 3.0);
}

}  // namespace
}  // namespace homodyne::model
