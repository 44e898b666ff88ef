#include "cmc/bounded_transform.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::cmc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Logistic(double u) {
  return u >= 0 ? 1.0 / (1.0 + std::exp(-u)) : std::exp(u) / (1.0 + std::exp(u));
}

// log s(u) and log(1 − s(u)) without overflow.
double LogLogistic(double u) {
  return u >= 0 ? -std::log1p(std::exp(-u)) : u - std::log1p(std::exp(u));
}

}  // namespace

BoundedTransform::BoundedTransform(double lower, double upper) : lower_(lower), upper_(upper) {
  if (std::isfinite(lower) && std::isfinite(upper)) {
    if (!(lower < upper)) ThrowBadInput(fmt::format("empty bounds [{}, {}]", lower, upper));
    kind_ = Kind::kInterval;
  } else if (std::isfinite(lower) && upper == kInf) {
    kind_ = Kind::kLowerOnly;
  } else if (lower == -kInf && upper == kInf) {
    kind_ = Kind::kUnbounded;
  } else {
    ThrowBadInput(fmt::format("unsupported bounds [{}, {}]", lower, upper));
  }
}

double BoundedTransform::ToConstrained(double u) const {
  switch (kind_) {
    case Kind::kInterval:
      return lower_ + (upper_ - lower_) * Logistic(u);
    case Kind::kLowerOnly:
      return lower_ + std::exp(u);
    case Kind::kUnbounded:
      return u;
  }
  return u;
}

double BoundedTransform::ToUnconstrained(double x) const {
  switch (kind_) {
    case Kind::kInterval: {
      const double s = (x - lower_) / (upper_ - lower_);
      return std::log(s) - std::log1p(-s);
    }
    case Kind::kLowerOnly:
      return std::log(x - lower_);
    case Kind::kUnbounded:
      return x;
  }
  return x;
}

double BoundedTransform::DxDu(double u) const {
  switch (kind_) {
    case Kind::kInterval: {
      const double s = Logistic(u);
      return (upper_ - lower_) * s * (1.0 - s);
    }
    case Kind::kLowerOnly:
      return std::exp(u);
    case Kind::kUnbounded:
      return 1.0;
  }
  return 1.0;
}

double BoundedTransform::LogJacobian(double u) const {
  switch (kind_) {
    case Kind::kInterval:
      return std::log(upper_ - lower_) + LogLogistic(u) + LogLogistic(-u);
    case Kind::kLowerOnly:
      return u;
    case Kind::kUnbounded:
      return 0.0;
  }
  return 0.0;
}

double BoundedTransform::DLogJacobian(double u) const {
  switch (kind_) {
    case Kind::kInterval:
      return 1.0 - 2.0 * Logistic(u);
    case Kind::kLowerOnly:
      return 1.0;
    case Kind::kUnbounded:
      return 0.0;
  }
  return 0.0;
}

}  // namespace homodyne::cmc
