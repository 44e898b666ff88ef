// The target of the sampler: an unnormalised log density log π(q) and its gradient.
//
// q is the unconstrained parameter vector. The sampler works with the potential
// V(q) = −log π(q); a non-finite return value (or a thrown homodyne::Error of kind
// kNumerical) is treated as V = +∞, so the proposal is rejected or flagged divergent.
#pragma once

#include <span>
#include <vector>

namespace homodyne::nuts {

class LogDensity {
 public:
  virtual ~LogDensity() = default;

  // Number of parameters.
  virtual int dimension() const = 0;

  // Returns log π(q) and writes ∂log π/∂q into `gradient` (size dimension()).
  // [in] q, [out] gradient. Must be deterministic: the same q gives the same bits,
  // which is what makes checkpoint/resume bit-exact.
  virtual double LogDensityGradient(std::span<const double> q,
                                    std::span<double> gradient) const = 0;
};

// Standard normal in `dimension` dimensions: log π = −½|q|².
class StandardNormalDensity final : public LogDensity {
 public:
  explicit StandardNormalDensity(int dimension);
  int dimension() const override { return dimension_; }
  double LogDensityGradient(std::span<const double> q, std::span<double> gradient) const override;

 private:
  int dimension_;
};

// Multivariate normal N(mean, covariance); covariance is row-major, symmetric positive
// definite (checked: throws kBadInput otherwise).
class GaussianDensity final : public LogDensity {
 public:
  GaussianDensity(std::vector<double> mean, const std::vector<double>& covariance);
  int dimension() const override { return static_cast<int>(mean_.size()); }
  double LogDensityGradient(std::span<const double> q, std::span<double> gradient) const override;

 private:
  std::vector<double> mean_;
  std::vector<double> precision_;  // row-major inverse covariance
};

}  // namespace homodyne::nuts
