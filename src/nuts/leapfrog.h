// Explicit leapfrog (velocity Verlet) for a separable Hamiltonian H = V(q) + T(p):
//   p ← p − (ε/2)∇V(q);  q ← q + ε M⁻¹p;  recompute ∇V;  p ← p − (ε/2)∇V(q).
// A negative ε integrates backward in time.
#pragma once

namespace homodyne::nuts {

class LogDensity;
struct PhasePoint;

// [inout] z (q, p, potential and gradient are updated). One gradient evaluation.
template <typename Metric>
void LeapfrogStep(const LogDensity& density, const Metric& metric, PhasePoint& z, double epsilon);

// H(z) = V(q) + T(p), with NaN mapped to +∞.
template <typename Metric>
double Hamiltonian(const Metric& metric, const PhasePoint& z);

}  // namespace homodyne::nuts
