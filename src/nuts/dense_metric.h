// Dense Euclidean metric: T(p) = ½ pᵀ M⁻¹ p with a full inverse metric M⁻¹ (≈ the
// posterior covariance). Momenta are drawn through the upper Cholesky factor U of
// M⁻¹ = UᵀU: p = U⁻¹ z with z standard normal, so that Cov(p) = U⁻¹U⁻ᵀ = M.
#pragma once

#include <span>
#include <vector>

namespace homodyne {
class CounterRng;
}

namespace homodyne::nuts {

class DenseMetric {
 public:
  // Unit metric in `dimension` dimensions.
  explicit DenseMetric(int dimension);

  int dimension() const { return dimension_; }

  double KineticEnergy(std::span<const double> p) const;
  void Sharp(std::span<const double> p, std::span<double> p_sharp) const;
  void SampleMomentum(CounterRng& rng, std::span<double> p) const;

  // M⁻¹ row-major, dimension² values (serialisable form).
  const std::vector<double>& inverse_metric() const { return inverse_metric_; }
  // Sets M⁻¹ (symmetric positive definite, finite; throws kNumerical otherwise) and
  // recomputes its Cholesky factor. Deterministic: the same input gives the same bits.
  void SetInverseMetric(std::span<const double> inverse_metric);

 private:
  int dimension_;
  std::vector<double> inverse_metric_;  // M⁻¹, row-major
  std::vector<double> upper_cholesky_;  // U with M⁻¹ = UᵀU, row-major (lower part zero)
};

}  // namespace homodyne::nuts
