#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/errors.h"
#include "model/parameter_layout.h"

namespace homodyne::model {
namespace {

const AnalysisMode kLam = AnalysisMode::kLaminarFlow;

std::vector<double> RandomVector(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<ParameterLayout> AllLayouts(const std::vector<double>& phi) {
  std::vector<ScalingEstimate> est;
  for (size_t k = 0; k < phi.size(); ++k) est.push_back({0.1 + 0.01 * k, 1.0 + 0.02 * k});
  return {ParameterLayout::Individual(kLam, static_cast<int>(phi.size())),
          ParameterLayout::Averaged(kLam, static_cast<int>(phi.size())),
          ParameterLayout::FixedConstant(kLam, est), ParameterLayout::ConstantAveraged(kLam, est),
          ParameterLayout::Fourier(kLam, phi, 2)};
}

TEST(ParameterLayoutTest, ModeParsingAndResolution) {
  LayoutOptions opt;
  EXPECT_EQ(ResolveScalingLayout(opt, 2), ScalingLayout::kIndividual);
  EXPECT_EQ(ResolveScalingLayout(opt, 3), ScalingLayout::kAveraged);
  opt.constant_scaling_threshold = 5;
  EXPECT_EQ(ResolveScalingLayout(opt, 4), ScalingLayout::kIndividual);
  opt.mode = PerAngleMode::kFourier;
  EXPECT_EQ(ResolveScalingLayout(opt, 4), ScalingLayout::kIndividual);  // needs 1 + 2K = 5
  EXPECT_EQ(ResolveScalingLayout(opt, 5), ScalingLayout::kFourier);
  opt.fourier_order = 1;
  EXPECT_EQ(ResolveScalingLayout(opt, 3), ScalingLayout::kFourier);
  opt.mode = PerAngleMode::kConstant;
  EXPECT_EQ(ResolveScalingLayout(opt, 1), ScalingLayout::kFixedConstant);
  EXPECT_THROW(ParameterLayout::Fourier(kLam, std::vector<double>{0, 10, 20, 30}, 2), Error);
}

TEST(ParameterLayoutTest, SizesAndNames) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  const auto layouts = AllLayouts(phi);
  EXPECT_EQ(layouts[0].num_optimised(), 7 + 12);
  EXPECT_EQ(layouts[1].num_optimised(), 9);
  EXPECT_EQ(layouts[2].num_optimised(), 7);
  EXPECT_EQ(layouts[3].num_optimised(), 7);
  EXPECT_EQ(layouts[4].num_optimised(), 17);
  for (const auto& l : layouts) {
    EXPECT_EQ(l.num_expanded(), 19);
    EXPECT_EQ(static_cast<int>(l.names().size()), l.num_optimised());
    EXPECT_EQ(l.names().back(), "phi0");
  }
  EXPECT_EQ(layouts[1].names()[0], "contrast");
  EXPECT_EQ(layouts[4].names()[2], "contrast_sin1");
  EXPECT_EQ(layouts[4].names()[5], "offset_c0");
}

TEST(ParameterLayoutTest, ExpandMatchesEachModeDefinition) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  const auto layouts = AllLayouts(phi);
  std::mt19937_64 rng(1);
  // averaged: one value replicated.
  auto opt = RandomVector(9, rng);
  auto ex = layouts[1].Expand(opt);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(ex[static_cast<size_t>(k)], opt[0]);
    EXPECT_EQ(ex[static_cast<size_t>(6 + k)], opt[1]);
  }
  EXPECT_EQ(ex[12], opt[2]);
  // fixed: the per-angle estimates; constant_averaged: their means.
  opt = RandomVector(7, rng);
  ex = layouts[2].Expand(opt);
  EXPECT_DOUBLE_EQ(ex[3], 0.13);
  EXPECT_DOUBLE_EQ(ex[9], 1.06);
  EXPECT_EQ(ex[18], opt[6]);
  ex = layouts[3].Expand(opt);
  EXPECT_NEAR(ex[0], 0.125, 1e-15);
  EXPECT_NEAR(ex[11], 1.05, 1e-15);
  // fourier: contrast(φ) = c0 + c1 cos φ + s1 sin φ + c2 cos 2φ + s2 sin 2φ, φ in radians.
  opt = RandomVector(17, rng);
  ex = layouts[4].Expand(opt);
  for (int k = 0; k < 6; ++k) {
    const double x = phi[static_cast<size_t>(k)] * std::numbers::pi / 180.0;
    auto series = [&](size_t b) {
      return opt[b] + opt[b + 1] * std::cos(x) + opt[b + 2] * std::sin(x) +
             opt[b + 3] * std::cos(2 * x) + opt[b + 4] * std::sin(2 * x);
    };
    EXPECT_NEAR(ex[static_cast<size_t>(k)], series(0), 1e-14);
    EXPECT_NEAR(ex[static_cast<size_t>(6 + k)], series(5), 1e-14);
  }
}

TEST(ParameterLayoutTest, BEqualsFiniteDifferencesOfExpand) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  std::mt19937_64 rng(2);
  for (const auto& l : AllLayouts(phi)) {
    SCOPED_TRACE(std::string(ToString(l.layout())));
    const auto opt = RandomVector(static_cast<size_t>(l.num_optimised()), rng);
    for (int c = 0; c < l.num_optimised(); ++c) {
      auto plus = opt, minus = opt;
      plus[static_cast<size_t>(c)] += 1e-3;
      minus[static_cast<size_t>(c)] -= 1e-3;
      const auto ep = l.Expand(plus), em = l.Expand(minus);
      for (int r = 0; r < l.num_expanded(); ++r) {
        EXPECT_NEAR((ep[static_cast<size_t>(r)] - em[static_cast<size_t>(r)]) / 2e-3, l.B(r, c),
                    1e-10);
      }
    }
  }
}

TEST(ParameterLayoutTest, RoundTrips) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  const auto layouts = AllLayouts(phi);
  std::mt19937_64 rng(3);
  for (const auto& l : layouts) {
    if (l.layout() == ScalingLayout::kFixedConstant) continue;
    const auto opt = RandomVector(static_cast<size_t>(l.num_optimised()), rng);
    const auto back = l.FromExpanded(l.Expand(opt));
    ASSERT_EQ(back.size(), opt.size());
    for (size_t e = 0; e < opt.size(); ++e) EXPECT_NEAR(back[e], opt[e], 1e-12);
  }
  // Averaged from per-angle values: NaN-skipping means.
  std::vector<double> expanded(19, 0.0);
  for (int k = 0; k < 6; ++k) {
    expanded[static_cast<size_t>(k)] = 0.1 * k;
    expanded[static_cast<size_t>(6 + k)] = 1.0;
  }
  expanded[2] = std::numeric_limits<double>::quiet_NaN();
  const auto avg = layouts[1].FromExpanded(expanded);
  EXPECT_NEAR(avg[0], (0.0 + 0.1 + 0.3 + 0.4 + 0.5) / 5.0, 1e-15);
  EXPECT_DOUBLE_EQ(avg[1], 1.0);
}

TEST(ParameterLayoutTest, NormalEquationsAndCovarianceTransform) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  std::mt19937_64 rng(4);
  const int rows = 40, e = 19;
  const auto j = RandomVector(static_cast<size_t>(rows * e), rng);
  const auto r = RandomVector(static_cast<size_t>(rows), rng);
  NormalEquations ne(e);
  ne.chi2 = 3.5;
  for (int a = 0; a < e; ++a) {
    for (int row = 0; row < rows; ++row) {
      const double ja = j[static_cast<size_t>(row * e + a)];
      ne.jtr[static_cast<size_t>(a)] += ja * r[static_cast<size_t>(row)];
      for (int b = 0; b < e; ++b) ne.JtJ(a, b) += ja * j[static_cast<size_t>(row * e + b)];
    }
  }
  for (const auto& l : AllLayouts(phi)) {
    SCOPED_TRACE(std::string(ToString(l.layout())));
    const int p = l.num_optimised();
    const auto jo = l.JacobianToOptimiser(j, rows);
    const auto no = l.ToOptimiser(ne);
    EXPECT_EQ(no.chi2, 3.5);
    for (int a = 0; a < p; ++a) {
      double jr = 0.0;
      for (int row = 0; row < rows; ++row) {
        jr += jo[static_cast<size_t>(row * p + a)] * r[static_cast<size_t>(row)];
      }
      EXPECT_NEAR(no.jtr[static_cast<size_t>(a)], jr, 1e-11);
      for (int b = 0; b < p; ++b) {
        double jj = 0.0;
        for (int row = 0; row < rows; ++row) {
          jj += jo[static_cast<size_t>(row * p + a)] * jo[static_cast<size_t>(row * p + b)];
        }
        EXPECT_NEAR(no.JtJ(a, b), jj, 1e-11);
        EXPECT_EQ(no.JtJ(a, b), no.JtJ(b, a));
      }
    }
  }
  // Covariance: averaged → every contrast_k pair has Var(contrast); fourier → bᵀCb.
  const auto layouts = AllLayouts(phi);
  {
    const auto& l = layouts[1];
    std::vector<double> cov(81, 0.0);
    for (int a = 0; a < 9; ++a) cov[static_cast<size_t>(a * 9 + a)] = 1.0 + a;
    cov[1] = cov[9] = 0.25;
    const auto ce = l.ExpandCovariance(cov);
    EXPECT_DOUBLE_EQ(ce[2 * 19 + 4], 1.0);    // contrast_2 × contrast_4
    EXPECT_DOUBLE_EQ(ce[7 * 19 + 7], 2.0);    // offset_1 variance
    EXPECT_DOUBLE_EQ(ce[0 * 19 + 8], 0.25);   // contrast_0 × offset_2
    EXPECT_DOUBLE_EQ(ce[18 * 19 + 18], 9.0);  // phi0
    EXPECT_DOUBLE_EQ(ce[0 * 19 + 18], 0.0);
  }
  {
    const auto& l = layouts[4];
    std::vector<double> cov(17 * 17, 0.0);
    for (int a = 0; a < 17; ++a) cov[static_cast<size_t>(a * 17 + a)] = 0.5 + 0.1 * a;
    const auto ce = l.ExpandCovariance(cov);
    const double x = 45.0 * std::numbers::pi / 180.0;
    const double basis[5] = {1.0, std::cos(x), std::sin(x), std::cos(2 * x), std::sin(2 * x)};
    double var = 0.0;
    for (int c = 0; c < 5; ++c) var += basis[c] * basis[c] * (0.5 + 0.1 * c);
    EXPECT_NEAR(ce[3 * 19 + 3], var, 1e-14);  // contrast at φ = 45°
  }
}

TEST(ParameterLayoutTest, BoundsMapping) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  const auto layouts = AllLayouts(phi);
  Bounds ex;
  for (int k = 0; k < 6; ++k) {
    ex.lower.push_back(0.01 * k);
    ex.upper.push_back(0.9 + 0.01 * k);
  }
  for (int k = 0; k < 6; ++k) {
    ex.lower.push_back(0.5 + 0.01 * k);
    ex.upper.push_back(1.4 + 0.01 * k);
  }
  const std::vector<double> plo = {1e2, -2, -1e5, 1e-6, -2, -0.1, -10};
  const std::vector<double> phi_hi = {1e5, 2, 1e5, 0.5, 2, 0.1, 10};
  ex.lower.insert(ex.lower.end(), plo.begin(), plo.end());
  ex.upper.insert(ex.upper.end(), phi_hi.begin(), phi_hi.end());
  const auto ind = layouts[0].OptimiserBounds(ex);
  EXPECT_EQ(ind.lower, ex.lower);
  const auto avg = layouts[1].OptimiserBounds(ex);
  ASSERT_EQ(avg.lower.size(), 9u);
  EXPECT_DOUBLE_EQ(avg.lower[0], 0.0);
  EXPECT_DOUBLE_EQ(avg.upper[0], 0.95);
  EXPECT_DOUBLE_EQ(avg.lower[1], 0.5);
  EXPECT_DOUBLE_EQ(avg.upper[1], 1.45);
  EXPECT_DOUBLE_EQ(avg.upper[8], 10.0);
  const auto fixed = layouts[2].OptimiserBounds(ex);
  EXPECT_EQ(fixed.lower, plo);
  const auto fourier = layouts[4].OptimiserBounds(ex);
  ASSERT_EQ(fourier.lower.size(), 17u);
  EXPECT_DOUBLE_EQ(fourier.lower[0], 0.1);
  EXPECT_DOUBLE_EQ(fourier.upper[0], 0.8);
  EXPECT_DOUBLE_EQ(fourier.lower[3], -0.2);
  EXPECT_DOUBLE_EQ(fourier.lower[5], 0.5);
  EXPECT_DOUBLE_EQ(fourier.upper[9], 0.3);
  EXPECT_DOUBLE_EQ(fourier.lower[10], 1e2);
}

// Holding D_offset (physical 2) and gamma_dot_t_offset (5): the held layout is the full one
// with those optimiser columns removed and their values moved into `fixed`.
TEST(ParameterLayoutTest, HeldPhysicsDropOutOfTheOptimiser) {
  const std::vector<double> phi = {-30, 0, 20, 45, 90, 150};
  const std::vector<bool> vary = {true, true, false, true, true, false, true};
  const std::vector<double> values = {9.0, 9.0, 0.0, 9.0, 9.0, 0.0, 9.0};  // only 2 and 5 used
  std::mt19937_64 rng(11);
  const int e = 19;
  NormalEquations ne(e);
  {
    const auto j = RandomVector(static_cast<size_t>(30 * e), rng);
    for (int a = 0; a < e; ++a) {
      for (int row = 0; row < 30; ++row) {
        const double ja = j[static_cast<size_t>(row * e + a)];
        ne.jtr[static_cast<size_t>(a)] += ja * (0.1 * row - 1.0);
        for (int b = 0; b < e; ++b) ne.JtJ(a, b) += ja * j[static_cast<size_t>(row * e + b)];
      }
    }
  }
  for (const auto& full : AllLayouts(phi)) {
    SCOPED_TRACE(std::string(ToString(full.layout())));
    // Nothing held: the same layout, bit for bit.
    const ParameterLayout same = full.WithHeldPhysics(std::vector<bool>(7, true), values);
    EXPECT_EQ(same.num_optimised(), full.num_optimised());
    EXPECT_EQ(same.B(), full.B());
    EXPECT_EQ(same.fixed(), full.fixed());
    EXPECT_EQ(same.names(), full.names());
    EXPECT_EQ(same.num_physical_held(), 0);

    const ParameterLayout held = full.WithHeldPhysics(vary, values);
    const int n_full = full.num_optimised();
    const int n = held.num_optimised();
    ASSERT_EQ(n, n_full - 2);
    EXPECT_EQ(held.num_physical_varying(), 5);
    EXPECT_EQ(held.num_physical_held(), 2);
    EXPECT_FALSE(held.PhysicalVaries(2));
    EXPECT_TRUE(held.PhysicalVaries(3));
    // Full optimiser column of each held column; the held ones are the full's n−7+2 and n−7+5.
    std::vector<int> col;
    for (int c = 0; c < n_full; ++c) {
      if (c != n_full - 7 + 2 && c != n_full - 7 + 5) col.push_back(c);
    }
    for (int c = 0; c < n; ++c) {
      EXPECT_EQ(held.names()[static_cast<size_t>(c)], full.names()[static_cast<size_t>(col[c])]);
    }
    EXPECT_EQ(std::count(held.names().begin(), held.names().end(), "D_offset"), 0);
    EXPECT_EQ(std::count(held.names().begin(), held.names().end(), "gamma_dot_t_offset"), 0);

    // Expand: the full layout at the same point with the held values in their columns.
    const auto x = RandomVector(static_cast<size_t>(n), rng);
    std::vector<double> x_full(static_cast<size_t>(n_full), 0.0);
    x_full[static_cast<size_t>(n_full - 7 + 2)] = values[2];
    x_full[static_cast<size_t>(n_full - 7 + 5)] = values[5];
    for (int c = 0; c < n; ++c) x_full[static_cast<size_t>(col[c])] = x[static_cast<size_t>(c)];
    const auto ex = held.Expand(x);
    EXPECT_EQ(ex, full.Expand(x_full));
    EXPECT_EQ(ex[14], 0.0);  // D_offset exactly its held value
    EXPECT_EQ(ex[17], 0.0);  // gamma_dot_t_offset
    std::vector<double> other = ex;
    other[14] = 123.0;  // FromExpanded ignores a held entry
    const auto back = held.FromExpanded(other);
    ASSERT_EQ(back.size(), static_cast<size_t>(n));
    const auto back_full = full.FromExpanded(other);
    for (int c = 0; c < n; ++c) {
      EXPECT_EQ(back[static_cast<size_t>(c)], back_full[static_cast<size_t>(col[c])]);
    }

    // Normal equations: the full ones with the held rows and columns removed.
    const auto no = held.ToOptimiser(ne);
    const auto no_full = full.ToOptimiser(ne);
    for (int a = 0; a < n; ++a) {
      EXPECT_EQ(no.jtr[static_cast<size_t>(a)], no_full.jtr[static_cast<size_t>(col[a])]);
      for (int b = 0; b < n; ++b) EXPECT_EQ(no.JtJ(a, b), no_full.JtJ(col[a], col[b]));
    }
    const auto jh = held.JacobianToOptimiser(std::vector<double>(static_cast<size_t>(e), 1.0), 1);
    EXPECT_EQ(jh.size(), static_cast<size_t>(n));

    // Covariance: a held parameter has a zero row and column (σ exactly 0).
    std::vector<double> cov(static_cast<size_t>(n * n), 0.0);
    std::vector<double> cov_full(static_cast<size_t>(n_full * n_full), 0.0);
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        const double v = a == b ? 1.0 + 0.1 * a : 0.01 * (a + b);
        cov[static_cast<size_t>(a * n + b)] = v;
        cov_full[static_cast<size_t>(col[a] * n_full + col[b])] = v;
      }
    }
    const auto ce = held.ExpandCovariance(cov);
    EXPECT_EQ(ce, full.ExpandCovariance(cov_full));
    for (int r = 0; r < e; ++r) {
      EXPECT_EQ(ce[static_cast<size_t>(14 * e + r)], 0.0);
      EXPECT_EQ(ce[static_cast<size_t>(r * e + 17)], 0.0);
    }
    EXPECT_GT(ce[static_cast<size_t>(12 * e + 12)], 0.0);  // D0 keeps its variance

    // Bounds: the held ones dropped.
    Bounds eb;
    for (int r = 0; r < e; ++r) {
      eb.lower.push_back(-1.0 - r);
      eb.upper.push_back(1.0 + r);
    }
    const auto bh = held.OptimiserBounds(eb);
    const auto bf = full.OptimiserBounds(eb);
    ASSERT_EQ(bh.lower.size(), static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) {
      EXPECT_EQ(bh.lower[static_cast<size_t>(c)], bf.lower[static_cast<size_t>(col[c])]);
      EXPECT_EQ(bh.upper[static_cast<size_t>(c)], bf.upper[static_cast<size_t>(col[c])]);
    }
  }
  const auto l = ParameterLayout::Individual(kLam, 2);
  EXPECT_THROW(l.WithHeldPhysics({true, false}, values), Error);
  std::vector<double> bad = values;
  bad[2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(l.WithHeldPhysics(vary, bad), Error);
}

}  // namespace
}  // namespace homodyne::model
