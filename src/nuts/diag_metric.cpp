#include "nuts/diag_metric.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/random.h"

namespace homodyne::nuts {

DiagMetric::DiagMetric(int dimension) : inverse_metric_(dimension, 1.0) {}

double DiagMetric::KineticEnergy(std::span<const double> p) const {
  double sum = 0.0;
  for (std::size_t i = 0; i < inverse_metric_.size(); ++i) sum += inverse_metric_[i] * p[i] * p[i];
  return 0.5 * sum;
}

void DiagMetric::Sharp(std::span<const double> p, std::span<double> p_sharp) const {
  for (std::size_t i = 0; i < inverse_metric_.size(); ++i) p_sharp[i] = inverse_metric_[i] * p[i];
}

void DiagMetric::SampleMomentum(CounterRng& rng, std::span<double> p) const {
  for (std::size_t i = 0; i < inverse_metric_.size(); ++i) {
    p[i] = rng.Normal() / std::sqrt(inverse_metric_[i]);
  }
}

void DiagMetric::SetInverseMetric(std::span<const double> inverse_metric) {
  HOMODYNE_CHECK(inverse_metric.size() == inverse_metric_.size(), "diag metric size mismatch");
  for (double v : inverse_metric) {
    if (!(std::isfinite(v) && v > 0.0)) {
      throw Error(ErrorKind::kNumerical,
                  "diagonal inverse metric must be positive and finite, got " + std::to_string(v));
    }
  }
  inverse_metric_.assign(inverse_metric.begin(), inverse_metric.end());
}

}  // namespace homodyne::nuts
