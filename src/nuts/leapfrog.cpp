#include "nuts/leapfrog.h"

#include <cmath>
#include <limits>

#include "nuts/dense_metric.h"
#include "nuts/diag_metric.h"
#include "nuts/phase_point.h"

namespace homodyne::nuts {

template <typename Metric>
void LeapfrogStep(const LogDensity& density, const Metric& metric, PhasePoint& z, double epsilon) {
  const std::size_t n = z.q.size();
  const double half = 0.5 * epsilon;
  for (std::size_t i = 0; i < n; ++i) z.p[i] -= half * z.gradient[i];
  // q ← q + ε M⁻¹p; the gradient buffer is free until the density refills it.
  metric.Sharp(z.p, z.gradient);
  for (std::size_t i = 0; i < n; ++i) z.q[i] += epsilon * z.gradient[i];
  UpdatePotentialGradient(density, z);
  for (std::size_t i = 0; i < n; ++i) z.p[i] -= half * z.gradient[i];
}

template <typename Metric>
double Hamiltonian(const Metric& metric, const PhasePoint& z) {
  const double h = z.potential + metric.KineticEnergy(z.p);
  return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
}

template void LeapfrogStep<DiagMetric>(const LogDensity&, const DiagMetric&, PhasePoint&, double);
template void LeapfrogStep<DenseMetric>(const LogDensity&, const DenseMetric&, PhasePoint&, double);
template double Hamiltonian<DiagMetric>(const DiagMetric&, const PhasePoint&);
template double Hamiltonian<DenseMetric>(const DenseMetric&, const PhasePoint&);

}  // namespace homodyne::nuts
