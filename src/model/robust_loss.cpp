#include "model/robust_loss.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/simd_clones.h"
#include "model/loss_math.h"

namespace homodyne::model {

namespace {
// loss_math.h's operations on one double.
struct ScalarLossOps {
  using T = double;
  static double Splat(double x) { return x; }
  static double Fma(double a, double b, double c) { return std::fma(a, b, c); }
  static double Where(bool m, double a, double b) { return m ? a : b; }
  static void Reduce(double u, double& k, double& m, double& scale) {
    std::uint64_t bits;
    std::memcpy(&bits, &u, sizeof(bits));
    const std::uint64_t e = (bits - 0x3fe6a09e667f3bcdULL) >> 52;  // √2/2's bits
    const std::uint64_t mb = bits - (e << 52);
    std::memcpy(&m, &mb, sizeof(m));
    k = static_cast<double>(e);
    const std::uint64_t sb = (0x3ffULL - e) << 52;
    double s;
    std::memcpy(&s, &sb, sizeof(s));
    scale = e < 1000 ? s : 0.0;
  }
};
}  // namespace

void RobustLoss::Validate() const {
  if (!(std::isfinite(f_scale) && f_scale > 0.0)) {
    ThrowBadInput(fmt::format("f_scale must be a positive finite number (got {})", f_scale));
  }
}

std::string_view ToString(LossKind kind) {
  switch (kind) {
    case LossKind::kLinear:
      return "linear";
    case LossKind::kSoftL1:
      return "soft_l1";
    case LossKind::kHuber:
      return "huber";
    case LossKind::kCauchy:
      return "cauchy";
    case LossKind::kArctan:
      return "arctan";
  }
  return "linear";
}

std::string Describe(const RobustLoss& loss) {
  if (!loss.robust()) return "linear";
  return fmt::format("{} (C {:g} on the sigma-scaled residual)", ToString(loss.kind), loss.f_scale);
}

std::string ObjectiveName(const RobustLoss& loss) {
  if (!loss.robust()) return "chi2";
  return fmt::format("objective ({})", ToString(loss.kind));
}

namespace {

// soft_l1's series terms of Evaluate, the same expressions.
// ρ/z, whose series the long one continues.
__attribute__((always_inline)) inline double SoftL1SeriesRhoOverZ(double z) {
  return std::fma(
      z, std::fma(z, std::fma(z, std::fma(z, 7.0 / 128.0, -5.0 / 64.0), 1.0 / 8.0), -1.0 / 4.0),
      1.0);
}
__attribute__((always_inline)) inline double SoftL1SeriesRho(double z) {
  return z * SoftL1SeriesRhoOverZ(z);
}
__attribute__((always_inline)) inline double SoftL1SeriesCurvature(double z) {
  return std::fma(
      z, std::fma(z, std::fma(z, std::fma(z, 315.0 / 128.0, -35.0 / 16.0), 15.0 / 8.0), -3.0 / 2.0),
      1.0);
}
__attribute__((always_inline)) inline double SoftL1SeriesD1(double z) {
  return std::fma(
      z, std::fma(z, std::fma(z, std::fma(z, 35.0 / 128.0, -5.0 / 16.0), 3.0 / 8.0), -0.5), 1.0);
}
// The long series (kSoftL1LongSeriesBelow): the short series' polynomial plus z⁵ times the
// next terms, as one fused multiply-add (the short series' bits below its end). ρ/z to z⁸,
// the weight to z⁹, ρ′ to z⁸: the terms after them are below 2⁻⁵⁵ at z = 2⁻⁶.
__attribute__((always_inline)) inline double SoftL1Z5(double z) {
  const double z2 = z * z;
  return (z2 * z2) * z;
}
__attribute__((always_inline)) inline double SoftL1LongSeriesRho(double z, double z5) {
  const double tail = std::fma(
      z, std::fma(z, std::fma(z, 715.0 / 32768.0, -429.0 / 16384.0), 33.0 / 1024.0), -21.0 / 512.0);
  return z * std::fma(z5, tail, SoftL1SeriesRhoOverZ(z));
}
__attribute__((always_inline)) inline double SoftL1LongSeriesCurvature(double z, double z5) {
  const double tail = std::fma(
      z,
      std::fma(z,
               std::fma(z, std::fma(z, -230945.0 / 65536.0, 109395.0 / 32768.0), -6435.0 / 2048.0),
               3003.0 / 1024.0),
      -693.0 / 256.0);
  return std::fma(z5, tail, SoftL1SeriesCurvature(z));
}
__attribute__((always_inline)) inline double SoftL1LongSeriesD1(double z, double z5) {
  const double tail =
      std::fma(z, std::fma(z, std::fma(z, 6435.0 / 32768.0, -429.0 / 2048.0), 231.0 / 1024.0),
               -63.0 / 256.0);
  return std::fma(z5, tail, SoftL1SeriesD1(z));
}

// soft_l1's closed forms beyond its series (every field but factor), without branches.
__attribute__((always_inline)) inline LossTerms SoftL1ClosedForms(double z) {
  LossTerms t;
  const double a = 1.0 + z;
  const double sq = std::sqrt(a);
  const double inv = 1.0 / sq;
  t.d1 = inv;
  // 1 + z = a + ea exactly (two-sum) and sq² = a + e exactly: √(1+z) ≈ sq − (e − ea)/(2sq).
  const double bb = a - z;
  const double ea = (z - (a - bb)) + (1.0 - bb);
  const double e = std::fma(sq, sq, 0.0 - a);
  const double m = sq - 1.0;
  // At z = ∞ the correction is ∞ − ∞: ρ is then 2(sq − 1) = ∞, as SciPy's.
  t.rho = a < std::numeric_limits<double>::infinity() ? std::fma(ea - e, inv, m + m) : m + m;
  t.curvature = inv * (inv * inv);  // ρ′ + 2zρ″ = (1+z)^(−3/2)
  t.weight = t.curvature > kLossCurvatureFloor ? t.curvature : kLossCurvatureFloor;
  return t;
}

// EvaluateLoss for one kind; kFactor: also the factor ρ′/s², which the point loops below do
// not need (for huber, cauchy and arctan it costs a division).
template <LossKind K, bool kFactor>
__attribute__((always_inline)) inline LossTerms Evaluate(double z) {
  LossTerms t;
  if constexpr (K == LossKind::kLinear) {
    t.rho = z;
  } else if constexpr (K == LossKind::kSoftL1) {
    const double a = 1.0 + z;
    if (!(z > kSoftL1SeriesBelow)) {
      // 2(√(1+z) − 1) to z⁵, (1+z)^(−3/2) and (1+z)^(−1/2) to z⁴: the next terms are below
      // an ulp.
      t.rho = SoftL1SeriesRho(z);
      t.curvature = SoftL1SeriesCurvature(z);
      t.d1 = SoftL1SeriesD1(z);
      t.weight = t.curvature;
      if constexpr (kFactor) t.factor = a;  // ρ′/s² = 1 + z
      return t;
    }
    if (!(z > kSoftL1LongSeriesBelow)) {
      const double z5 = SoftL1Z5(z);
      t.rho = SoftL1LongSeriesRho(z, z5);
      t.curvature = SoftL1LongSeriesCurvature(z, z5);
      t.d1 = SoftL1LongSeriesD1(z, z5);
      t.weight = t.curvature;
      if constexpr (kFactor) t.factor = a;
      return t;
    }
    t = SoftL1ClosedForms(z);
    // ρ′/floor (floor = 2⁻⁵²) where the weight is floored, else 1 + z.
    if constexpr (kFactor) t.factor = t.curvature > kLossCurvatureFloor ? a : t.d1 * 0x1p52;
    return t;
  } else {
    if constexpr (K == LossKind::kHuber) {
      if (z > 1.0) {
        const double sq = std::sqrt(z);
        t.d1 = 1.0 / sq;
        t.curvature = 0.0;  // z^(−1/2) − 2z·½z^(−3/2)
        t.rho = (sq + sq) - 1.0;
      } else {
        t.rho = z;
      }
    } else if constexpr (K == LossKind::kCauchy) {
      const double a = 1.0 + z;
      t.d1 = 1.0 / a;
      t.curvature = (1.0 - z) * (t.d1 * t.d1);     // 1/(1+z) − 2z/(1+z)²
      t.rho = Log1pNonNegative<ScalarLossOps>(z);  // as std::log1p, within 3 ulp
    } else {
      const double z2 = z * z;
      t.d1 = 1.0 / (1.0 + z2);
      t.curvature = (1.0 - 3.0 * z2) * (t.d1 * t.d1);  // 1/(1+z²) − 4z²/(1+z²)²
      t.rho = AtanNonNegative<ScalarLossOps>(z);       // as std::atan, within 2 ulp
    }
  }
  t.weight = t.curvature > kLossCurvatureFloor ? t.curvature : kLossCurvatureFloor;
  if constexpr (kFactor) t.factor = t.d1 / t.weight;
  return t;
}

// Point e's terms from its loss terms and weight w[e] ≠ 0: w·C²·ρ, then (kDerivs) w·ρ′·r and
// w·s² in place of w.
template <bool kDerivs>
__attribute__((always_inline)) inline void StorePointTerms(const LossTerms& lt, double scale_sq,
                                                           int e, const double* r, double* w,
                                                           double* term, double* wr) {
  const double we = w[e];
  term[e] = we * (scale_sq * lt.rho);
  if constexpr (kDerivs) {
    w[e] = we * lt.weight;
    wr[e] = we * (lt.d1 * r[e]);
  }
}

// RobustPointTerms for one robust kind (kDerivs: also the weight and the weighted residual).
template <LossKind K, bool kDerivs>
__attribute__((always_inline)) inline void PointTermsOf(double inv_scale, double scale_sq, int n,
                                                        const double* r, double* w, double* term,
                                                        double* wr) {
  if constexpr (K == LossKind::kSoftL1) {
    // Every point by the short series first, then the points beyond it by the long one, both
    // without branches (the compiler vectorises these loops), then the few beyond the long one
    // (z > kSoftL1LongSeriesBelow) by the closed forms. A point beyond a series keeps its
    // weight w for the next loop. Not a branch per point: where points on both sides of the
    // short series' end mix at random (noise 0.01 at f_scale 1), it mispredicts.
    int far = 0;
    for (int e = 0; e < n; ++e) {
      const double we = w[e];
      const double re = r[e];
      const double u = re * inv_scale;
      const double z = u * u;
      const bool on = we != 0.0;
      const bool series = !(z > kSoftL1SeriesBelow);
      far |= static_cast<int>(on && !series);
      term[e] = on ? we * (scale_sq * SoftL1SeriesRho(z)) : term[e];
      if constexpr (kDerivs) {
        wr[e] = on ? we * (SoftL1SeriesD1(z) * re) : wr[e];
        w[e] = on && series ? we * SoftL1SeriesCurvature(z) : we;
      }
    }
    if (far == 0) return;
    far = 0;
    for (int e = 0; e < n; ++e) {
      const double we = w[e];
      const double re = r[e];
      const double u = re * inv_scale;
      const double z = u * u;
      const bool on = we != 0.0;
      const bool past_short = z > kSoftL1SeriesBelow;
      const bool beyond = on & past_short;  // not &&: a branch, and the loop would not vectorise
      const bool series = !(z > kSoftL1LongSeriesBelow);
      far |= static_cast<int>(beyond & !series);
      const double z5 = SoftL1Z5(z);
      term[e] = beyond ? we * (scale_sq * SoftL1LongSeriesRho(z, z5)) : term[e];
      if constexpr (kDerivs) {
        wr[e] = beyond ? we * (SoftL1LongSeriesD1(z, z5) * re) : wr[e];
        w[e] = beyond & series ? we * SoftL1LongSeriesCurvature(z, z5) : we;
      }
    }
    if (far == 0) return;
    // Point by point: the same loop without branches, the closed forms at every point of the
    // tile, took as long at f_scale 0.01 (most points beyond the series; the square root and
    // the division bound both) and would pay them at every point of a tile with one outlier.
    for (int e = 0; e < n; ++e) {
      const double we = w[e];
      const double u = r[e] * inv_scale;
      if (we == 0.0 || !(u * u > kSoftL1LongSeriesBelow)) continue;
      StorePointTerms<kDerivs>(SoftL1ClosedForms(u * u), scale_sq, e, r, w, term, wr);
    }
    return;
  }
  for (int e = 0; e < n; ++e) {
    const double we = w[e];
    if (we == 0.0) continue;
    const double u = r[e] * inv_scale;
    StorePointTerms<kDerivs>(Evaluate<K, false>(u * u), scale_sq, e, r, w, term, wr);
  }
}

// f.template operator()<K>() for the kind's K: one switch for EvaluateLoss and the tile loop.
template <typename F>
__attribute__((always_inline)) inline decltype(auto) WithKind(LossKind kind, F&& f) {
  switch (kind) {
    case LossKind::kSoftL1:
      return f.template operator()<LossKind::kSoftL1>();
    case LossKind::kHuber:
      return f.template operator()<LossKind::kHuber>();
    case LossKind::kCauchy:
      return f.template operator()<LossKind::kCauchy>();
    case LossKind::kArctan:
      return f.template operator()<LossKind::kArctan>();
    case LossKind::kLinear:
      break;
  }
  return f.template operator()<LossKind::kLinear>();
}

}  // namespace

LossTerms EvaluateLoss(LossKind kind, double z) {
  return WithKind(kind, [z]<LossKind K>() { return Evaluate<K, true>(z); });
}

// Compiled for each instruction set: on x86-64-v3 and v4 std::fma is one instruction (the
// baseline calls libm's fma for each, which cost the two-component passes 3.8x (normal) and
// 10x (χ²) the linear pass under soft_l1); fma rounds once either way, so the bits agree.
HOMODYNE_SIMD_CLONES void RobustPointTerms(LossKind kind, double inv_scale, double scale_sq, int n,
                                           const double* r, double* w, double* term, double* wr) {
  // The lambda inlined, so that its loops are compiled for this clone's instruction set.
  WithKind(
      kind, [&]<LossKind K>() __attribute__((always_inline)) {
        if (wr != nullptr) {
          PointTermsOf<K, true>(inv_scale, scale_sq, n, r, w, term, wr);
        } else {
          PointTermsOf<K, false>(inv_scale, scale_sq, n, r, w, term, wr);
        }
      });
}

}  // namespace homodyne::model
