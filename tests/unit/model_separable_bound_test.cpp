// The error bounds of the separable paths (src/model/separable.h) checked directly: over
// random rows/columns/prefactors the factorised sinc and g1_diff differ from the reference's
// direct expressions by no more than the bounds that decide where the kernel uses them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "model/constants.h"
#include "model/fast_sincos.h"
#include "model/separable.h"

namespace homodyne::model {
namespace {

constexpr double kEps = 1.1102230246251565e-16;  // 2^-53

TEST(ModelSeparableBoundTest, ShearSincWithinItsBound) {
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst_ratio = 0.0;
  for (int n = 0; n < 200000; ++n) {
    const double a =
        (u(rng) < 0.5 ? -1.0 : 1.0) * std::exp(std::log(1e-3) + u(rng) * std::log(4e5));
    const double ci = u(rng) < 0.3 ? 0.0 : std::exp(std::log(1e-6) + u(rng) * std::log(1e11));
    const double dc = std::exp(std::log(1e-8) + u(rng) * std::log(1e13));
    const double cj = ci + dc;
    // The reference's phase and sinc (direct branch; |x| ≥ 1 where the kernel uses the form).
    const double delta = ci - cj;
    const double ig = std::sqrt(delta * delta + kSmoothAbsEps2);
    const double x = a * ig;
    if (!(std::abs(x) >= detail::kSeparableMinPhase)) continue;
    const double shift = kSmoothAbsEps2 / (ig + std::abs(delta));
    if (!(std::abs(a) * shift <= detail::kSeparableMaxShift)) continue;
    const double ref = std::sin(x) / x;
    // Tables at the two times, as the kernel builds them.
    const double phase[2] = {a * ci, a * cj};
    double s[2], c[2];
    FastSinCos(phase, s, c, 2);
    const double inv_ig = 1.0 / ig;
    const detail::SeparableRow row{&s[1], &c[1], s[0], c[0], a, 1.0 / a, &shift, &inv_ig};
    double sep = 0.0, dsep = 0.0;
    detail::SeparableShearFactorsWithDerivative(row, &sep, &dsep, 0, 1);
    const double sinc = std::sqrt(sep) * (ref < 0 ? -1.0 : 1.0);
    const double bound = detail::SeparableSineBound(a, ci + cj, x, a * shift);
    const double err = std::abs(sinc - ref) * std::abs(x);  // |Δsinc|·|x| ≤ B
    // sqrt(sinc²) adds ≤ 1 ulp of sinc: allow it on top of the bound.
    ASSERT_LE(err, bound + 4.0 * kEps * std::abs(ref * x)) << a << " " << ci << " " << cj;
    worst_ratio = std::max(worst_ratio, err / bound);
  }
  std::printf("worst |Δsinc|·|x| / B = %.3g\n", worst_ratio);
}

// SeparableStartFrom (the kernel's search from the previous row's boundary) finds the same
// first separable column as SeparableStart's binary search, from any guess, on rows built as
// the kernel builds them (smooth-abs I_Γ, shift and C_Γ sums of a growing prefix sum).
TEST(ModelSeparableBoundTest, StartFromAnyGuessIsTheBinarySearchResult) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  constexpr int kN = 128;
  int interior = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const double a =
        (u(rng) < 0.5 ? -1.0 : 1.0) * std::exp(std::log(1e-2) + u(rng) * std::log(1e4));
    const double contrast = 0.05 + 2.0 * u(rng);
    const double rate = std::exp(std::log(1e-4) + u(rng) * std::log(1e4));
    const double ci = rate * 1000.0 * u(rng);
    const double wq = 1e-3 * u(rng);
    const int offset = static_cast<int>(u(rng) * 40);  // first column j0 − i − 1
    double ig[kN], g1d[kN], cgsum[kN], shift[kN];
    for (int c = 0; c < kN; ++c) {
      const double dc = rate * (offset + c + 1);
      ig[c] = std::sqrt(dc * dc + kSmoothAbsEps2);
      shift[c] = kSmoothAbsEps2 / (ig[c] + dc);
      cgsum[c] = 2.0 * ci + dc;
      g1d[c] = std::exp(-wq * (offset + c + 1));
    }
    const detail::SeparableColumns cols{g1d, cgsum, shift};
    const int want = detail::SeparableStart(ig, a, contrast, cols, kN);
    // The predicate is monotone on these rows (what both searches rely on).
    for (int c = 0; c < kN; ++c) {
      ASSERT_EQ(detail::SeparableBoundHolds(a * ig[c], a, contrast, g1d[c], cgsum[c], shift[c]),
                c >= want)
          << trial << " column " << c;
    }
    if (want > 0 && want < kN) ++interior;
    for (int guess = -2; guess <= kN + 1; ++guess) {
      ASSERT_EQ(detail::SeparableStartFrom(ig, a, contrast, cols, kN, guess), want)
          << trial << " guess " << guess;
    }
  }
  EXPECT_GT(interior, 40);  // the boundary falls inside the block often enough to matter
}

TEST(ModelSeparableBoundTest, DiffusionFactorWithinItsBound) {
  std::mt19937_64 rng(78);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst_ratio = 0.0;
  int used = 0;
  for (int n = 0; n < 200000; ++n) {
    const double wq = std::exp(std::log(1e-10) + u(rng) * std::log(1e8));  // 1e-10 … 1e-2
    const double cp = u(rng) < 0.2 ? 0.0 : std::exp(std::log(1e-4) + u(rng) * std::log(1e14));
    const double cj =
        cp + std::exp(std::log(1e-9) + u(rng) * std::log(1e13)) * (u(rng) < 0.1 ? 0 : 1);
    // Row before or after the pivot (but before the column).
    const double ci = u(rng) < 0.5 ? cp * u(rng) : cp + (cj - cp) * u(rng);
    if (!(cj > ci)) continue;
    const double delta = ci - cj;
    const double id = std::sqrt(delta * delta + kSmoothAbsEps2);
    const double log_g1 = -wq * id;
    const double ref = std::exp(std::clamp(log_g1, kLogG1Min, 0.0));
    const double r = std::exp(-wq * (cp - ci));
    const double pj = std::exp(-wq * (cj - cp));
    if (!detail::DiffusionSpanHolds(wq, ci, cp, cj, log_g1, pj * r, 1.0)) continue;
    const double shift = kSmoothAbsEps2 / (id + std::abs(delta));
    double sep = 0.0;
    detail::SeparableDiffusion(&pj, r, wq, &shift, &sep, 0, 1);
    const double s_sum = (cj - cp) + std::abs(cp - ci);
    const double bound = kEps * (5.0 * wq * s_sum + 9.0);
    const double rel = std::abs(sep - ref) / ref;
    ASSERT_LE(rel, bound) << wq << " " << ci << " " << cp << " " << cj;
    worst_ratio = std::max(worst_ratio, rel / bound);
    ++used;
  }
  std::printf("diffusion: %d samples passed the span test, worst relative error / bound = %.3g\n",
              used, worst_ratio);
  EXPECT_GT(used, 10000);
}

}  // namespace
}  // namespace homodyne::model
