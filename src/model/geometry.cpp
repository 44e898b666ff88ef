#include "model/geometry.h"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::model {

void Geometry::Validate() const {
  auto check = [](double value, const char* name, const char* unit) {
    if (!std::isfinite(value) || value <= 0.0) {
      ThrowBadInput(
          fmt::format("{} must be a finite positive number [{}], found {}", name, unit, value), {},
          name);
    }
  };
  check(q, "wavevector_q", "1/Angstrom");
  check(L, "stator_rotor_gap", "Angstrom");
  check(dt, "dt", "s");
}

double Geometry::SincPrefactor() const { return 0.5 / std::numbers::pi * q * L * dt; }

}  // namespace homodyne::model
