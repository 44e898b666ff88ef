#include "model/robust_loss.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace homodyne::model {

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

LossKind ParseLossKind(std::string_view text, std::string_view key, const std::string& file) {
  for (const LossKind k : {LossKind::kLinear, LossKind::kSoftL1, LossKind::kHuber,
                           LossKind::kCauchy, LossKind::kArctan}) {
    if (text == ToString(k)) return k;
  }
  ThrowBadInput(fmt::format("{}: unknown loss '{}' (valid: linear, soft_l1, huber, cauchy, arctan)",
                            key, text),
                file, std::string(key));
}

std::string Describe(const RobustLoss& loss) {
  if (!loss.robust()) return "linear";
  return fmt::format("{} (C {:g} on the sigma-scaled residual)", ToString(loss.kind), loss.f_scale);
}

LossTerms EvaluateLoss(LossKind kind, double z) {
  LossTerms t;
  switch (kind) {
    case LossKind::kLinear:
      t.rho = z;
      break;
    case LossKind::kSoftL1: {
      const double a = 1.0 + z;
      const double sq = std::sqrt(a);
      t.d1 = 1.0 / sq;
      t.curvature = t.d1 / a;  // ρ′ + 2zρ″ = (1+z)^(−1/2)·(1 − z/(1+z))
      const double m = sq - 1.0;
      t.rho = m + m;
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
      t.curvature = (1.0 - z) * (t.d1 * t.d1);  // 1/(1+z) − 2z/(1+z)²
      t.rho = std::log1p(z);
      break;
    }
    case LossKind::kArctan: {
      const double z2 = z * z;
      t.d1 = 1.0 / (1.0 + z2);
      t.curvature = (1.0 - 3.0 * z2) * (t.d1 * t.d1);  // 1/(1+z²) − 4z²/(1+z²)²
      t.rho = std::atan(z);
      break;
    }
  }
  return t;
}

}  // namespace homodyne::model
