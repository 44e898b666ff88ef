#include "nuts/log_density.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <string>

#include "core/errors.h"

namespace homodyne::nuts {

StandardNormalDensity::StandardNormalDensity(int dimension) : dimension_(dimension) {
  if (dimension < 1) ThrowBadInput("dimension must be >= 1, got " + std::to_string(dimension));
}

double StandardNormalDensity::LogDensityGradient(std::span<const double> q,
                                                 std::span<double> gradient) const {
  double sum = 0.0;
  for (int i = 0; i < dimension_; ++i) {
    sum += q[i] * q[i];
    gradient[i] = -q[i];
  }
  return -0.5 * sum;
}

GaussianDensity::GaussianDensity(std::vector<double> mean, const std::vector<double>& covariance)
    : mean_(std::move(mean)) {
  const auto n = static_cast<Eigen::Index>(mean_.size());
  if (n < 1 || covariance.size() != mean_.size() * mean_.size()) {
    ThrowBadInput("covariance must have dimension^2 = " + std::to_string(n * n) + " values, got " +
                  std::to_string(covariance.size()));
  }
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
      cov(covariance.data(), n, n);
  const Eigen::LLT<Eigen::MatrixXd> llt(cov);
  if (llt.info() != Eigen::Success) ThrowBadInput("covariance is not positive definite");
  const Eigen::MatrixXd precision = llt.solve(Eigen::MatrixXd::Identity(n, n));
  precision_.resize(static_cast<std::size_t>(n * n));
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) precision_[i * n + j] = precision(i, j);
  }
}

double GaussianDensity::LogDensityGradient(std::span<const double> q,
                                           std::span<double> gradient) const {
  const std::size_t n = mean_.size();
  double quad = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    double row = 0.0;
    for (std::size_t j = 0; j < n; ++j) row += precision_[i * n + j] * (q[j] - mean_[j]);
    gradient[i] = -row;
    quad += (q[i] - mean_[i]) * row;
  }
  return -0.5 * quad;
}

}  // namespace homodyne::nuts
