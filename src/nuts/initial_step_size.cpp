#include "nuts/initial_step_size.h"

#include <cmath>

#include "core/errors.h"
#include "core/random.h"
#include "nuts/dense_metric.h"
#include "nuts/diag_metric.h"
#include "nuts/leapfrog.h"
#include "nuts/phase_point.h"

namespace homodyne::nuts {
namespace {

// H₀ − H after one leapfrog step from `start` with a fresh momentum.
template <typename Metric>
double OneStepEnergyChange(const LogDensity& density, const Metric& metric, const PhasePoint& start,
                           PhasePoint& work, double step_size, CounterRng& rng) {
  work = start;
  metric.SampleMomentum(rng, work.p);
  const double h0 = Hamiltonian(metric, work);
  LeapfrogStep(density, metric, work, step_size);
  return h0 - Hamiltonian(metric, work);
}

}  // namespace

template <typename Metric>
double FindInitialStepSize(const LogDensity& density, const Metric& metric, const PhasePoint& z,
                           double step_size, CounterRng& rng) {
  if (step_size == 0.0 || step_size > 1e7 || std::isnan(step_size)) return step_size;
  const double log_target = std::log(0.8);
  PhasePoint work;
  double delta_h = OneStepEnergyChange(density, metric, z, work, step_size, rng);
  const int direction = delta_h > log_target ? 1 : -1;
  while (true) {
    delta_h = OneStepEnergyChange(density, metric, z, work, step_size, rng);
    if (direction == 1 && !(delta_h > log_target)) break;
    if (direction == -1 && !(delta_h < log_target)) break;
    step_size = direction == 1 ? 2.0 * step_size : 0.5 * step_size;
    if (step_size > 1e7) {
      throw Error(ErrorKind::kNumerical,
                  "initial step-size search: step size exceeded 1e7; the posterior may be "
                  "improper (check the model and its bounds)");
    }
    if (step_size == 0.0) {
      throw Error(ErrorKind::kNumerical,
                  "initial step-size search: step size underflowed to 0; the log density or its "
                  "gradient is probably not finite near the current point");
    }
  }
  return step_size;
}

template double FindInitialStepSize<DiagMetric>(const LogDensity&, const DiagMetric&,
                                                const PhasePoint&, double, CounterRng&);
template double FindInitialStepSize<DenseMetric>(const LogDensity&, const DenseMetric&,
                                                 const PhasePoint&, double, CounterRng&);

}  // namespace homodyne::nuts
