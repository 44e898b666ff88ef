#include "cmc/prior.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "config/choices.h"
#include "core/errors.h"

namespace homodyne::cmc {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Beta(a, b) on [lower, upper] with the given mean and standard deviation.
void BetaShape(const Prior& p, double& a, double& b) {
  const double w = p.upper - p.lower;
  const double m = (p.mu - p.lower) / w;
  const double v = (p.sigma / w) * (p.sigma / w);
  const double kappa = m * (1.0 - m) / v - 1.0;
  a = m * kappa;
  b = (1.0 - m) * kappa;
}

}  // namespace

std::string_view ToString(PriorType type) { return config::ChoiceName(type); }

void Prior::Validate(std::string_view name) const {
  const std::string key = fmt::format("parameter_space prior of {}", name);
  if (!(temper >= 1.0))
    ThrowBadInput(fmt::format("tempering K must be ≥ 1, got {}", temper), {}, key);
  const bool bounded = type == PriorType::kTruncatedNormal || type == PriorType::kUniform ||
                       type == PriorType::kBetaScaled;
  if (bounded && !(lower < upper)) {
    ThrowBadInput(fmt::format("{} needs lower < upper, got [{}, {}]", ToString(type), lower, upper),
                  {}, key);
  }
  if (type != PriorType::kUniform && !(sigma > 0.0 && std::isfinite(sigma))) {
    ThrowBadInput(fmt::format("{} needs sigma > 0, got {}", ToString(type), sigma), {}, key);
  }
  if (type == PriorType::kBetaScaled) {
    double a = 0, b = 0;
    BetaShape(*this, a, b);
    if (!(mu > lower && mu < upper) || !(a > 0 && b > 0)) {
      ThrowBadInput(fmt::format("BetaScaled mean {} and sd {} admit no Beta on [{}, {}]", mu, sigma,
                                lower, upper),
                    {}, key);
    }
  }
}

bool Prior::InSupport(double x) const {
  switch (type) {
    case PriorType::kNormal:
      return std::isfinite(x);
    case PriorType::kLogNormal:
      return x > 0.0;
    case PriorType::kHalfNormal:
      return x >= 0.0;
    case PriorType::kBetaScaled:
      return x > lower && x < upper;
    default:
      return x >= lower && x <= upper;
  }
}

double Prior::LogDensity(double x) const {
  if (!InSupport(x)) return kNegInf;
  double lp = 0.0;
  switch (type) {
    case PriorType::kTruncatedNormal:
    case PriorType::kNormal: {
      const double z = (x - mu) / sigma;
      lp = -0.5 * z * z;
      break;
    }
    case PriorType::kUniform:
      lp = 0.0;
      break;
    case PriorType::kLogNormal: {
      const double z = (std::log(x) - mu) / sigma;
      lp = -std::log(x) - 0.5 * z * z;
      break;
    }
    case PriorType::kHalfNormal: {
      const double z = x / sigma;
      lp = -0.5 * z * z;
      break;
    }
    case PriorType::kBetaScaled: {
      double a = 0, b = 0;
      BetaShape(*this, a, b);
      const double u = (x - lower) / (upper - lower);
      lp = (a - 1.0) * std::log(u) + (b - 1.0) * std::log1p(-u);
      break;
    }
  }
  return lp / temper;
}

double Prior::DLogDensity(double x) const {
  if (!InSupport(x)) return 0.0;
  double d = 0.0;
  switch (type) {
    case PriorType::kTruncatedNormal:
    case PriorType::kNormal:
      d = -(x - mu) / (sigma * sigma);
      break;
    case PriorType::kUniform:
      d = 0.0;
      break;
    case PriorType::kLogNormal:
      d = -1.0 / x - (std::log(x) - mu) / (sigma * sigma * x);
      break;
    case PriorType::kHalfNormal:
      d = -x / (sigma * sigma);
      break;
    case PriorType::kBetaScaled: {
      double a = 0, b = 0;
      BetaShape(*this, a, b);
      const double w = upper - lower;
      const double u = (x - lower) / w;
      d = ((a - 1.0) / u - (b - 1.0) / (1.0 - u)) / w;
      break;
    }
  }
  return d / temper;
}

}  // namespace homodyne::cmc
