#include "nuts/metric_adaptation.h"

#include <cmath>

#include "core/errors.h"

namespace homodyne::nuts {

MetricAdaptation::MetricAdaptation(MetricKind kind, int dimension, int num_warmup,
                                   WindowOptions options)
    : kind_(kind),
      dimension_(dimension),
      windows_(num_warmup, options),
      variance_(kind == MetricKind::kDiag ? dimension : 0),
      covariance_(kind == MetricKind::kDense ? dimension : 0) {}

bool MetricAdaptation::Learn(std::span<const double> q, std::vector<double>& inverse_metric) {
  if (windows_.InWindow()) {
    if (kind_ == MetricKind::kDiag) {
      variance_.Add(q);
    } else {
      covariance_.Add(q);
    }
  }
  if (!windows_.AtWindowEnd()) {
    windows_.Advance();
    return false;
  }
  windows_.ComputeNextWindow();
  const bool diag = kind_ == MetricKind::kDiag;
  const double n = static_cast<double>(diag ? variance_.count() : covariance_.count());
  inverse_metric = diag ? variance_.SampleVariance() : covariance_.SampleCovariance();
  // Shrink toward 1e-3·I (not toward I), weight 5/(n + 5).
  const double scale = n / (n + 5.0);
  const double shrink = 1e-3 * (5.0 / (n + 5.0));
  for (double& v : inverse_metric) v *= scale;
  for (int i = 0; i < dimension_; ++i) {
    inverse_metric[diag ? i : i * dimension_ + i] += shrink;
  }
  for (double v : inverse_metric) {
    if (!std::isfinite(v)) {
      throw Error(ErrorKind::kNumerical,
                  "metric adaptation produced a non-finite inverse metric; the posterior may be "
                  "improper or the parameters badly scaled");
    }
  }
  if (diag) {
    variance_.Restart();
  } else {
    covariance_.Restart();
  }
  windows_.Advance();
  return true;
}

const WelfordState& MetricAdaptation::estimator_state() const {
  return kind_ == MetricKind::kDiag ? variance_.state() : covariance_.state();
}

void MetricAdaptation::set_estimator_state(const WelfordState& state) {
  if (kind_ == MetricKind::kDiag) {
    variance_.set_state(state);
  } else {
    covariance_.set_state(state);
  }
}

}  // namespace homodyne::nuts
