// A point of phase space: position q, momentum p, and the cached potential
// V(q) = −log π(q) with its gradient ∂V/∂q.
#pragma once

#include <vector>

namespace homodyne::nuts {

class LogDensity;

struct PhasePoint {
  std::vector<double> q;         // position (unconstrained parameters)
  std::vector<double> p;         // momentum
  double potential = 0.0;        // V(q) = −log π(q); +∞ when the density failed
  std::vector<double> gradient;  // ∂V/∂q at q

  PhasePoint() = default;
  explicit PhasePoint(int dimension)
      : q(dimension, 0.0), p(dimension, 0.0), gradient(dimension, 0.0) {}
  int dimension() const { return static_cast<int>(q.size()); }
};

// Recomputes point.potential and point.gradient from point.q. A non-finite log density,
// or a homodyne::Error of kind kNumerical thrown by the density, gives V = +∞.
void UpdatePotentialGradient(const LogDensity& density, PhasePoint& point);

}  // namespace homodyne::nuts
