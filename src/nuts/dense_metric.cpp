#include "nuts/dense_metric.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>

#include "core/errors.h"
#include "core/random.h"

namespace homodyne::nuts {

DenseMetric::DenseMetric(int dimension)
    : dimension_(dimension),
      inverse_metric_(static_cast<std::size_t>(dimension) * dimension, 0.0),
      upper_cholesky_(static_cast<std::size_t>(dimension) * dimension, 0.0) {
  for (int i = 0; i < dimension; ++i) {
    inverse_metric_[i * dimension + i] = 1.0;
    upper_cholesky_[i * dimension + i] = 1.0;
  }
}

double DenseMetric::KineticEnergy(std::span<const double> p) const {
  double sum = 0.0;
  for (int i = 0; i < dimension_; ++i) {
    double row = 0.0;
    for (int j = 0; j < dimension_; ++j) row += inverse_metric_[i * dimension_ + j] * p[j];
    sum += p[i] * row;
  }
  return 0.5 * sum;
}

void DenseMetric::Sharp(std::span<const double> p, std::span<double> p_sharp) const {
  for (int i = 0; i < dimension_; ++i) {
    double row = 0.0;
    for (int j = 0; j < dimension_; ++j) row += inverse_metric_[i * dimension_ + j] * p[j];
    p_sharp[i] = row;
  }
}

void DenseMetric::SampleMomentum(CounterRng& rng, std::span<double> p) const {
  for (int i = 0; i < dimension_; ++i) p[i] = rng.Normal();
  // Back substitution U p = z.
  for (int i = dimension_ - 1; i >= 0; --i) {
    double sum = p[i];
    for (int j = i + 1; j < dimension_; ++j) sum -= upper_cholesky_[i * dimension_ + j] * p[j];
    p[i] = sum / upper_cholesky_[i * dimension_ + i];
  }
}

void DenseMetric::SetInverseMetric(std::span<const double> inverse_metric) {
  const auto n = static_cast<Eigen::Index>(dimension_);
  HOMODYNE_CHECK(inverse_metric.size() == static_cast<std::size_t>(n * n),
                 "dense metric size mismatch");
  for (double v : inverse_metric) {
    if (!std::isfinite(v)) throw Error(ErrorKind::kNumerical, "dense inverse metric is not finite");
  }
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
      matrix(inverse_metric.data(), n, n);
  const Eigen::LLT<Eigen::MatrixXd> llt(matrix);
  if (llt.info() != Eigen::Success) {
    throw Error(ErrorKind::kNumerical, "dense inverse metric is not positive definite");
  }
  const Eigen::MatrixXd upper = llt.matrixU();
  inverse_metric_.assign(inverse_metric.begin(), inverse_metric.end());
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) upper_cholesky_[i * n + j] = j >= i ? upper(i, j) : 0.0;
  }
}

}  // namespace homodyne::nuts
