#include "nuts/phase_point.h"

#include <cmath>
#include <limits>

#include "core/errors.h"
#include "nuts/log_density.h"

namespace homodyne::nuts {

void UpdatePotentialGradient(const LogDensity& density, PhasePoint& point) {
  double log_density = 0.0;
  try {
    log_density = density.LogDensityGradient(point.q, point.gradient);
  } catch (const Error& error) {
    // A numerical failure of the model at this q rejects the state (as Stan does with
    // std::domain_error); anything else is a real error and propagates.
    if (error.kind() != ErrorKind::kNumerical) throw;
    log_density = -std::numeric_limits<double>::infinity();
  }
  bool finite = std::isfinite(log_density);
  for (double g : point.gradient) finite = finite && std::isfinite(g);
  if (!finite) {  // a non-finite gradient would poison the next momentum update
    point.potential = std::numeric_limits<double>::infinity();
    return;
  }
  point.potential = -log_density;
  for (double& g : point.gradient) g = -g;  // ∂V/∂q = −∂log π/∂q
}

}  // namespace homodyne::nuts
