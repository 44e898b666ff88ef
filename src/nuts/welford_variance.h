// Welford's online estimators of the sample mean and variance / covariance of a stream
// of vectors. The state is plain numbers, so an estimator can be checkpointed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace homodyne::nuts {

struct WelfordState {
  std::int64_t count = 0;
  std::vector<double> mean;  // running mean, dimension values
  std::vector<double> m2;    // Σ (x − mean_old)(x − mean_new): dimension (variance) or
                             // dimension² row-major (covariance) values
};

// Per-coordinate variance.
class WelfordVariance {
 public:
  explicit WelfordVariance(int dimension);
  void Add(std::span<const double> x);
  // Unbiased sample variance (n − 1); needs count() ≥ 2.
  std::vector<double> SampleVariance() const;
  void Restart();
  std::int64_t count() const { return state_.count; }
  const WelfordState& state() const { return state_; }
  void set_state(const WelfordState& state);

 private:
  WelfordState state_;
};

// Full covariance (row-major result).
class WelfordCovariance {
 public:
  explicit WelfordCovariance(int dimension);
  void Add(std::span<const double> x);
  // Unbiased sample covariance (n − 1), row-major; needs count() ≥ 2.
  std::vector<double> SampleCovariance() const;
  void Restart();
  std::int64_t count() const { return state_.count; }
  const WelfordState& state() const { return state_; }
  void set_state(const WelfordState& state);

 private:
  WelfordState state_;
  std::vector<double> delta_;  // scratch
};

}  // namespace homodyne::nuts
