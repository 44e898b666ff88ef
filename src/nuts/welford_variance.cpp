#include "nuts/welford_variance.h"

#include <algorithm>

#include "core/errors.h"

namespace homodyne::nuts {

WelfordVariance::WelfordVariance(int dimension) {
  state_.mean.assign(dimension, 0.0);
  state_.m2.assign(dimension, 0.0);
}

void WelfordVariance::Add(std::span<const double> x) {
  ++state_.count;
  const double n = static_cast<double>(state_.count);
  for (std::size_t i = 0; i < state_.mean.size(); ++i) {
    const double delta = x[i] - state_.mean[i];
    state_.mean[i] += delta / n;
    state_.m2[i] += delta * (x[i] - state_.mean[i]);
  }
}

std::vector<double> WelfordVariance::SampleVariance() const {
  HOMODYNE_CHECK(state_.count >= 2, "sample variance needs at least two draws");
  std::vector<double> variance(state_.m2.size());
  for (std::size_t i = 0; i < variance.size(); ++i) {
    variance[i] = state_.m2[i] / static_cast<double>(state_.count - 1);
  }
  return variance;
}

void WelfordVariance::Restart() {
  state_.count = 0;
  std::fill(state_.mean.begin(), state_.mean.end(), 0.0);
  std::fill(state_.m2.begin(), state_.m2.end(), 0.0);
}

void WelfordVariance::set_state(const WelfordState& state) {
  HOMODYNE_CHECK(state.mean.size() == state_.mean.size() && state.m2.size() == state_.m2.size(),
                 "Welford variance state has the wrong size");
  state_ = state;
}

WelfordCovariance::WelfordCovariance(int dimension) : delta_(dimension, 0.0) {
  state_.mean.assign(dimension, 0.0);
  state_.m2.assign(static_cast<std::size_t>(dimension) * dimension, 0.0);
}

void WelfordCovariance::Add(std::span<const double> x) {
  ++state_.count;
  const double n = static_cast<double>(state_.count);
  const std::size_t d = state_.mean.size();
  for (std::size_t i = 0; i < d; ++i) {
    delta_[i] = x[i] - state_.mean[i];
    state_.mean[i] += delta_[i] / n;
  }
  // m2 += (x − mean_new)(x − mean_old)ᵀ
  for (std::size_t i = 0; i < d; ++i) {
    const double after = x[i] - state_.mean[i];
    for (std::size_t j = 0; j < d; ++j) state_.m2[i * d + j] += after * delta_[j];
  }
}

std::vector<double> WelfordCovariance::SampleCovariance() const {
  HOMODYNE_CHECK(state_.count >= 2, "sample covariance needs at least two draws");
  std::vector<double> covariance(state_.m2.size());
  for (std::size_t i = 0; i < covariance.size(); ++i) {
    covariance[i] = state_.m2[i] / static_cast<double>(state_.count - 1);
  }
  return covariance;
}

void WelfordCovariance::Restart() {
  state_.count = 0;
  std::fill(state_.mean.begin(), state_.mean.end(), 0.0);
  std::fill(state_.m2.begin(), state_.m2.end(), 0.0);
}

void WelfordCovariance::set_state(const WelfordState& state) {
  HOMODYNE_CHECK(state.mean.size() == state_.mean.size() && state.m2.size() == state_.m2.size(),
                 "Welford covariance state has the wrong size");
  state_ = state;
}

}  // namespace homodyne::nuts
