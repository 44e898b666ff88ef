#include "model/robust_loss.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"
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

LossTerms EvaluateLoss(LossKind kind, double z) {
  LossTerms t;
  switch (kind) {
    case LossKind::kLinear:
      t.rho = z;
      break;
    case LossKind::kSoftL1: {
      const double a = 1.0 + z;
      if (!(z > kSoftL1SeriesBelow)) {
        // 2(√(1+z) − 1) to z⁵, (1+z)^(−3/2) and (1+z)^(−1/2) to z⁴: the next terms are below
        // an ulp.
        t.rho =
            z * std::fma(z,
                         std::fma(z, std::fma(z, std::fma(z, 7.0 / 128.0, -5.0 / 64.0), 1.0 / 8.0),
                                  -1.0 / 4.0),
                         1.0);
        t.curvature =
            std::fma(z,
                     std::fma(z, std::fma(z, std::fma(z, 315.0 / 128.0, -35.0 / 16.0), 15.0 / 8.0),
                              -3.0 / 2.0),
                     1.0);
        t.d1 = std::fma(
            z, std::fma(z, std::fma(z, std::fma(z, 35.0 / 128.0, -5.0 / 16.0), 3.0 / 8.0), -0.5),
            1.0);
        t.weight = t.curvature;
        t.factor = a;  // ρ′/s² = 1 + z
        break;
      }
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
      const bool floored = !(t.curvature > kLossCurvatureFloor);
      t.weight = floored ? kLossCurvatureFloor : t.curvature;
      t.factor = floored ? inv * 0x1p52 : a;  // ρ′/floor (floor = 2⁻⁵²), else 1 + z
      break;
    }
    case LossKind::kHuber: {
      if (z > 1.0) {
        const double sq = std::sqrt(z);
        t.d1 = 1.0 / sq;
        t.curvature = 0.0;  // z^(−1/2) − 2z·½z^(−3/2)
        t.rho = (sq + sq) - 1.0;
      } else {
        t.rho = z;
      }
      break;
    }
    case LossKind::kCauchy: {
      const double a = 1.0 + z;
      t.d1 = 1.0 / a;
      t.curvature = (1.0 - z) * (t.d1 * t.d1);     // 1/(1+z) − 2z/(1+z)²
      t.rho = Log1pNonNegative<ScalarLossOps>(z);  // as std::log1p, within 3 ulp
      break;
    }
    case LossKind::kArctan: {
      const double z2 = z * z;
      t.d1 = 1.0 / (1.0 + z2);
      t.curvature = (1.0 - 3.0 * z2) * (t.d1 * t.d1);  // 1/(1+z²) − 4z²/(1+z²)²
      t.rho = AtanNonNegative<ScalarLossOps>(z);       // as std::atan, within 2 ulp
      break;
    }
  }
  if (kind != LossKind::kSoftL1) {
    t.weight = t.curvature > kLossCurvatureFloor ? t.curvature : kLossCurvatureFloor;
    t.factor = t.d1 / t.weight;
  }
  return t;
}

}  // namespace homodyne::model
