// Robust losses (src/model/robust_loss.h): ρ, ρ′, ρ″ against finite differences, the names, and
// the kernel's robust passes against the reference accumulation (SciPy's row scaling applied
// point by point).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/errors.h"
#include "model/kernel.h"
#include "model/reference_accumulate.h"
#include "model/robust_loss.h"

namespace homodyne::model {
namespace {

constexpr LossKind kRobustKinds[] = {LossKind::kSoftL1, LossKind::kHuber, LossKind::kCauchy,
                                     LossKind::kArctan};

TEST(ModelRobustLossTest, DerivativesMatchFiniteDifferences) {
  for (const LossKind kind : kRobustKinds) {
    // Both sides of huber's knee at z = 1 (not on it: ρ″ jumps there).
    for (const double z : {1e-3, 0.2, 0.7, 1.6, 4.0, 30.0}) {
      const double h = 1e-5 * z;
      const LossTerms t = EvaluateLoss(kind, z);
      const LossTerms plus = EvaluateLoss(kind, z + h), minus = EvaluateLoss(kind, z - h);
      const double d1 = (plus.rho - minus.rho) / (2.0 * h);
      EXPECT_NEAR(t.d1, d1, 1e-7 * std::abs(d1) + 1e-12) << ToString(kind) << " z " << z;
      // curvature = ρ′ + 2zρ″, with ρ″ the difference of ρ′.
      const double d2 = (plus.d1 - minus.d1) / (2.0 * h);
      EXPECT_NEAR(t.curvature, t.d1 + 2.0 * z * d2, 1e-6 * (std::abs(t.d1) + std::abs(2 * z * d2)))
          << ToString(kind) << " z " << z;
      EXPECT_GT(t.rho, 0.0);
      EXPECT_LE(t.rho, z * (1.0 + 1e-15));  // every robust ρ lies below the linear one
    }
    const LossTerms zero = EvaluateLoss(kind, 0.0);
    EXPECT_EQ(zero.rho, 0.0) << ToString(kind);
    EXPECT_EQ(zero.d1, 1.0) << ToString(kind);
    EXPECT_EQ(zero.curvature, 1.0) << ToString(kind);
  }
  // SciPy's closed forms at one point each.
  EXPECT_DOUBLE_EQ(EvaluateLoss(LossKind::kSoftL1, 3.0).rho, 2.0);
  EXPECT_DOUBLE_EQ(EvaluateLoss(LossKind::kHuber, 4.0).rho, 3.0);
  EXPECT_DOUBLE_EQ(EvaluateLoss(LossKind::kCauchy, 3.0).rho, std::log(4.0));
  EXPECT_DOUBLE_EQ(EvaluateLoss(LossKind::kArctan, 1.0).rho, std::atan(1.0));
  EXPECT_EQ(EvaluateLoss(LossKind::kLinear, 2.5).rho, 2.5);
}

// soft_l1's terms within 2 ulp of long-double closed forms on both sides of the end of its
// series (kSoftL1SeriesBelow), from z where homodyne's default f_scale puts most points up to
// far beyond the knee; the passes' weight times factor is ρ′.
TEST(ModelRobustLossTest, SoftL1TermsAreAccurateOnBothSidesOfTheSeries) {
  const auto ulps = [](double x, long double exact) {
    return static_cast<double>(std::fabs((static_cast<long double>(x) - exact) / exact)) /
           std::numeric_limits<double>::epsilon();
  };
  int series = 0;
  for (double z = 1e-14; z < 1e6; z *= 1.37) {
    const LossTerms t = EvaluateLoss(LossKind::kSoftL1, z);
    const long double a = 1.0L + static_cast<long double>(z);
    const long double sq = std::sqrt(a);
    const long double rho = 2.0L * static_cast<long double>(z) / (sq + 1.0L);
    EXPECT_LE(ulps(t.rho, rho), 2.0) << "rho at z " << z;
    EXPECT_LE(ulps(t.weight, 1.0L / (a * sq)), 4.0) << "weight at z " << z;
    EXPECT_LE(ulps(t.weight * t.factor, 1.0L / sq), 5.0) << "weight·factor = rho' at z " << z;
    EXPECT_EQ(t.curvature, t.weight) << "z " << z;  // no floor this side of z = 1e10
    if (z <= kSoftL1SeriesBelow) ++series;
  }
  EXPECT_GT(series, 50);
  // Densely over the long series (kSoftL1LongSeriesBelow), where the short one alone is off by
  // up to 4e-11 relative, and just past both ends.
  int long_series = 0;
  for (double z = 0.999 * kSoftL1SeriesBelow; z < 1.01 * kSoftL1LongSeriesBelow; z *= 1.001) {
    const LossTerms t = EvaluateLoss(LossKind::kSoftL1, z);
    const long double a = 1.0L + static_cast<long double>(z);
    const long double sq = std::sqrt(a);
    ASSERT_LE(ulps(t.rho, 2.0L * static_cast<long double>(z) / (sq + 1.0L)), 2.0) << "z " << z;
    ASSERT_LE(ulps(t.weight, 1.0L / (a * sq)), 4.0) << "weight at z " << z;
    ASSERT_LE(ulps(t.d1, 1.0L / sq), 4.0) << "rho' at z " << z;
    ASSERT_LE(ulps(t.weight * t.factor, 1.0L / sq), 5.0) << "weight·factor at z " << z;
    if (z > kSoftL1SeriesBelow && z <= kSoftL1LongSeriesBelow) ++long_series;
  }
  EXPECT_GT(long_series, 4000);
  // Overflowing residuals give ρ = ∞ (as SciPy's), never NaN.
  EXPECT_EQ(EvaluateLoss(LossKind::kSoftL1, std::numeric_limits<double>::infinity()).rho,
            std::numeric_limits<double>::infinity());
  // Far out the weight is floored; the factor keeps weight·factor = ρ′.
  const LossTerms far = EvaluateLoss(LossKind::kSoftL1, 1e40);
  EXPECT_EQ(far.weight, kLossCurvatureFloor);
  EXPECT_NEAR(far.weight * far.factor, 1e-20, 1e-33);
}

// cauchy's log1p and arctan's atan (model/loss_math.h, basic operations only, so that the
// vector copies need no libm call) against long double, over z from 1e-300 to 1e300, densely
// near 0, 1 and the bounds of atan's sectors; their stated bounds are 3 and 2 ulp.
TEST(ModelRobustLossTest, CauchyAndArctanRhoAreWithinTheirUlpBounds) {
  const auto ulps = [](double x, long double exact) {
    const long double ulp =
        std::ldexp(1.0L, std::ilogb(static_cast<double>(exact)) - 52);  // of the double result
    return static_cast<double>(std::fabs(static_cast<long double>(x) - exact) / ulp);
  };
  std::vector<double> zs;
  for (double z = 1e-300; z < 1e300; z *= 1.003) zs.push_back(z);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const double c :
       {1e-8, 0.198912367379658, 0.41421356237309503, 0.6681786379192989, 1.0, 1.496605762665489,
        2.414213562373095, 5.027339492125848, 0.41421356, 1.4142135623730951, 2.8284271247461903}) {
    for (int i = 0; i < 20000; ++i) zs.push_back(c * (1.0 + 0.02 * (unit(rng) - 0.5)));
  }
  double worst_log = 0.0, worst_atan = 0.0;
  for (const double z : zs) {
    const double lg =
        ulps(EvaluateLoss(LossKind::kCauchy, z).rho, std::log1p(static_cast<long double>(z)));
    const double at =
        ulps(EvaluateLoss(LossKind::kArctan, z).rho, std::atan(static_cast<long double>(z)));
    worst_log = std::max(worst_log, lg);
    worst_atan = std::max(worst_atan, at);
    ASSERT_LE(lg, 3.0) << "log1p at z " << z;
    ASSERT_LE(at, 2.0) << "atan at z " << z;
  }
  std::cout << "log1p worst " << worst_log << " ulp, atan worst " << worst_atan << " ulp over "
            << zs.size() << " z\n";
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(EvaluateLoss(LossKind::kCauchy, inf).rho, inf);
  EXPECT_EQ(EvaluateLoss(LossKind::kArctan, inf).rho, std::atan(inf));
  EXPECT_TRUE(std::isnan(EvaluateLoss(LossKind::kCauchy, std::nan("")).rho));
  EXPECT_TRUE(std::isnan(EvaluateLoss(LossKind::kArctan, std::nan("")).rho));
  EXPECT_EQ(EvaluateLoss(LossKind::kCauchy, 0x1p-1074).rho, 0x1p-1074);
  EXPECT_EQ(EvaluateLoss(LossKind::kArctan, 0x1p-1074).rho, 0x1p-1074);
}

// The two-component kernel's batched loop (the copy this machine runs) gives EvaluateLoss's
// bits point by point: the series and the closed forms mixed in one batch, zero weights left as
// they were, and without wr the term alone with w unchanged.
TEST(ModelRobustLossTest, BatchedPointTermsHaveTheBitsOfEvaluateLoss) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-9.0, 3.0), sign(-1.0, 1.0);
  const double f_scale = 0.7, inv_scale = 1.0 / f_scale, scale_sq = f_scale * f_scale;
  for (const LossKind kind :
       {LossKind::kSoftL1, LossKind::kHuber, LossKind::kCauchy, LossKind::kArctan}) {
    // soft_l1: every point on its short series; on the short and the long one; all three forms.
    for (const double spread : {1e-6, 1e-4, 1.0}) {
      const int n = 203;
      std::vector<double> r(n), w(n), term(n, -1.0), wr(n, -2.0);
      for (int e = 0; e < n; ++e) {
        r[e] = spread * std::copysign(std::pow(10.0, exponent(rng)), sign(rng));
        w[e] = e % 11 == 3 ? 0.0 : 0.5 + (e % 5);
      }
      std::vector<double> w_out = w, term_chi2 = term, w_chi2 = w;
      RobustPointTerms(kind, inv_scale, scale_sq, n, r.data(), w_out.data(), term.data(),
                       wr.data());
      RobustPointTerms(kind, inv_scale, scale_sq, n, r.data(), w_chi2.data(), term_chi2.data(),
                       nullptr);
      for (int e = 0; e < n; ++e) {
        if (w[e] == 0.0) {
          EXPECT_EQ(term[e], -1.0);
          EXPECT_EQ(wr[e], -2.0);
          EXPECT_EQ(w_out[e], 0.0);
          continue;
        }
        const double u = r[e] * inv_scale;
        const LossTerms lt = EvaluateLoss(kind, u * u);
        const double s2 = std::max(lt.curvature, kLossCurvatureFloor);
        EXPECT_EQ(term[e], w[e] * (scale_sq * lt.rho)) << ToString(kind) << " point " << e;
        EXPECT_EQ(w_out[e], w[e] * s2) << ToString(kind) << " point " << e;
        EXPECT_EQ(wr[e], w[e] * (lt.d1 * r[e])) << ToString(kind) << " point " << e;
        EXPECT_EQ(term_chi2[e], term[e]);
        EXPECT_EQ(w_chi2[e], w[e]);
      }
    }
  }
}

// The names are read with the config (ConfigChoices in config_option_defaults_test.cpp).
TEST(ModelRobustLossTest, BadScalesAreRefused) {
  EXPECT_THROW((RobustLoss{LossKind::kHuber, 0.0}.Validate()), Error);
  EXPECT_THROW((RobustLoss{LossKind::kHuber, NAN}.Validate()), Error);
}

// Every angle's upper triangle in row tiles of `piece` columns; angle 1 with per-point weights
// (some zero), angle 2 with uniform weight 3 (not a power of two), the rest 2. Data: the model
// at `truth` plus noise of 0.01 and a few outliers of 0.2.
struct Problem {
  AnalysisMode mode;
  Geometry geometry{0.0054, 2e6, 1e-3};
  std::vector<double> t, phi, data, weights, truth;
  std::vector<RowTile> tiles;
};

Problem MakeProblem(AnalysisMode mode, int n, int piece, std::mt19937_64& rng) {
  Problem pb;
  pb.mode = mode;
  pb.phi = {-20.0, 10.0, 75.0, 140.0};
  for (int m = 0; m < n; ++m) pb.t.push_back(1e-3 + pb.geometry.dt * m);
  const auto n_angles = static_cast<int>(pb.phi.size());
  for (int k = 0; k < n_angles; ++k) pb.truth.push_back(0.3 + 0.05 * k);
  for (int k = 0; k < n_angles; ++k) pb.truth.push_back(1.0 + 0.01 * k);
  pb.truth.insert(pb.truth.end(), {3e4, -0.6, 40.0});
  if (mode == AnalysisMode::kLaminarFlow) pb.truth.insert(pb.truth.end(), {0.02, 0.4, 1e-3, 4.0});
  const auto total = static_cast<std::size_t>(n_angles * n * (n - 1) / 2);
  pb.data.reserve(total);
  pb.weights.reserve(total);
  for (int k = 0; k < n_angles; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j0 = i + 1; j0 < n; j0 += piece) {
        RowTile tile;
        tile.angle = k;
        tile.row = i;
        tile.col_begin = j0;
        tile.count = std::min(piece, n - j0);
        tile.data = pb.data.data() + pb.data.size();
        tile.uniform_weight = k == 2 ? 3.0 : 2.0;
        if (k == 1) {
          tile.weight = pb.weights.data() + pb.weights.size();
          for (int c = 0; c < tile.count; ++c) pb.weights.push_back((i + c) % 5 == 0 ? 0.0 : 2.0);
        }
        pb.data.resize(pb.data.size() + static_cast<std::size_t>(tile.count));
        pb.tiles.push_back(tile);
      }
    }
  }
  const auto model = reference::ModelAtTiles(mode, pb.geometry, pb.t, pb.phi, pb.tiles, pb.truth);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t e = 0; e < model.size(); ++e) {
    pb.data[e] = model[e] + noise(rng) + (u(rng) < 0.03 ? 0.2 : 0.0);
  }
  return pb;
}

TEST(ModelRobustLossTest, KernelMatchesReferenceAccumulationForEveryLoss) {
  std::mt19937_64 rng(38);
  int compared = 0;
  for (const AnalysisMode mode : {AnalysisMode::kLaminarFlow, AnalysisMode::kStatic}) {
    const Problem pb = MakeProblem(mode, 70, 23, rng);
    for (const LossKind kind : kRobustKinds) {
      const RobustLoss loss{kind, 1.5};
      KernelOptions ko{.threads = 2, .chunk_points = 500};
      ko.loss = loss;
      const ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, ko);
      // The truth (most points inside the knee) and a point away from it (most outside).
      std::vector<double> away = pb.truth;
      away[0] *= 1.3;
      away[static_cast<std::size_t>(2 * pb.phi.size())] *= 1.2;
      for (const auto& params : {pb.truth, away}) {
        const NormalEquations fast = kernel.Accumulate(params);
        const NormalEquations ref = reference::AccumulateNormalEquations(
            pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, params, kDefaultSigma, loss);
        const NormalEquations plain = reference::AccumulateNormalEquations(
            pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, params, kDefaultSigma);
        EXPECT_LT(ref.chi2, 0.9 * plain.chi2) << "the loss must bite in this test";
        EXPECT_NEAR(fast.chi2, ref.chi2, 1e-12 * ref.chi2) << ToString(kind);
        std::vector<double> jtr(fast.jtr.size());
        EXPECT_EQ(kernel.Chi2(params), fast.chi2);
        EXPECT_EQ(kernel.Gradient(params, jtr), fast.chi2);
        EXPECT_TRUE(jtr == fast.jtr);
        for (int a = 0; a < ref.size; ++a) {
          const double da = std::sqrt(ref.JtJ(a, a));
          EXPECT_NEAR(fast.jtr[static_cast<std::size_t>(a)], ref.jtr[static_cast<std::size_t>(a)],
                      1e-10 * da * std::sqrt(ref.chi2))
              << ToString(kind) << " Jtr " << a;
          for (int b = 0; b < ref.size; ++b) {
            EXPECT_NEAR(fast.JtJ(a, b), ref.JtJ(a, b), 1e-10 * da * std::sqrt(ref.JtJ(b, b)))
                << ToString(kind) << " JtJ " << a << "," << b;
          }
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 16);
}

// soft_l1 at homodyne's default f_scale of 1 in c2 units (100 σ) on data with noise 0.01: the
// points on the short series, the long one and (the outliers of 0.2) the closed forms, mixed
// in the kernel's vectors; its passes against the reference's point-by-point EvaluateLoss.
TEST(ModelRobustLossTest, KernelMatchesReferenceOnEverySoftL1FormAtTheDefaultScale) {
  std::mt19937_64 rng(43);
  for (const AnalysisMode mode : {AnalysisMode::kLaminarFlow, AnalysisMode::kStatic}) {
    const Problem pb = MakeProblem(mode, 70, 23, rng);
    const RobustLoss loss{LossKind::kSoftL1, 1.0 / kDefaultSigma};
    KernelOptions ko{.threads = 2, .chunk_points = 500};
    ko.loss = loss;
    const ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, ko);
    const auto model =
        reference::ModelAtTiles(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, pb.truth);
    int forms[3] = {0, 0, 0};
    for (std::size_t e = 0; e < model.size(); ++e) {
      const double z = (pb.data[e] - model[e]) * (pb.data[e] - model[e]);
      ++forms[z <= kSoftL1SeriesBelow ? 0 : z <= kSoftL1LongSeriesBelow ? 1 : 2];
    }
    EXPECT_GT(forms[1], forms[0] / 20) << "points on the long series";
    EXPECT_GT(forms[2], 50) << "points beyond it";
    const NormalEquations fast = kernel.Accumulate(pb.truth);
    const NormalEquations ref = reference::AccumulateNormalEquations(
        pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, pb.truth, kDefaultSigma, loss);
    EXPECT_NEAR(fast.chi2, ref.chi2, 1e-13 * ref.chi2);
    EXPECT_EQ(kernel.Chi2(pb.truth), fast.chi2);
    for (int a = 0; a < ref.size; ++a) {
      const double da = std::sqrt(ref.JtJ(a, a));
      EXPECT_NEAR(fast.jtr[static_cast<std::size_t>(a)], ref.jtr[static_cast<std::size_t>(a)],
                  1e-11 * da * std::sqrt(ref.chi2))
          << "Jtr " << a;
      EXPECT_NEAR(fast.JtJ(a, a), ref.JtJ(a, a), 1e-11 * ref.JtJ(a, a)) << "JtJ " << a;
    }
  }
}

TEST(ModelRobustLossTest, RobustGradientIsHalfTheDerivativeOfTheObjective) {
  // Jᵀr = ½∇(C²Σ w·ρ): checked on the kernel alone by central differences of Chi2.
  std::mt19937_64 rng(7);
  for (const AnalysisMode mode : {AnalysisMode::kLaminarFlow, AnalysisMode::kStatic}) {
    const Problem pb = MakeProblem(mode, 50, 17, rng);
    for (const LossKind kind : kRobustKinds) {
      KernelOptions ko;
      ko.loss = {kind, 0.8};
      const ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, ko);
      std::vector<double> params = pb.truth;
      params[0] *= 1.1;
      const NormalEquations ne = kernel.Accumulate(params);
      for (std::size_t p = 0; p < params.size(); ++p) {
        const double h = 1e-6 * std::max(std::abs(params[p]), 1e-2);
        auto plus = params, minus = params;
        plus[p] += h;
        minus[p] -= h;
        const double fd = (kernel.Chi2(plus) - kernel.Chi2(minus)) / (2.0 * h);
        const double scale = std::sqrt(ne.JtJ(static_cast<int>(p), static_cast<int>(p)) * ne.chi2);
        EXPECT_NEAR(2.0 * ne.jtr[p], fd, 1e-5 * std::abs(fd) + 1e-6 * scale)
            << ToString(kind) << " parameter " << p;
      }
    }
  }
}

TEST(ModelRobustLossTest, RobustPassesAreBitwiseIndependentOfThreadsAndSetLossIsTheOption) {
  std::mt19937_64 rng(11);
  const Problem pb = MakeProblem(AnalysisMode::kLaminarFlow, 60, 29, rng);
  std::vector<NormalEquations> results;
  for (int threads : {1, 2, 3}) {
    KernelOptions ko{.threads = threads, .chunk_points = 400};
    ko.loss = {LossKind::kCauchy, 2.0};
    results.push_back(
        ModelKernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, ko).Accumulate(pb.truth));
  }
  for (std::size_t r = 1; r < results.size(); ++r) {
    EXPECT_EQ(results[r].chi2, results[0].chi2);
    EXPECT_TRUE(results[r].jtj == results[0].jtj);
    EXPECT_TRUE(results[r].jtr == results[0].jtr);
  }
  // SetLoss between passes gives the bits of a kernel built with that loss, and back.
  ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                     {.threads = 2, .chunk_points = 400});
  const NormalEquations linear = kernel.Accumulate(pb.truth);
  kernel.SetLoss({LossKind::kCauchy, 2.0});
  const NormalEquations robust = kernel.Accumulate(pb.truth);
  EXPECT_EQ(robust.chi2, results[0].chi2);
  EXPECT_TRUE(robust.jtj == results[0].jtj);
  kernel.SetLoss({});
  EXPECT_EQ(kernel.Accumulate(pb.truth).chi2, linear.chi2);
  EXPECT_NE(linear.chi2, robust.chi2);
}

}  // namespace
}  // namespace homodyne::model
