// Diagonal Euclidean metric: kinetic energy T(p) = ½ Σ m⁻¹_i p_i², with the inverse
// metric m⁻¹ (≈ the posterior variances) as the adapted quantity.
#pragma once

#include <span>
#include <vector>

namespace homodyne {
class CounterRng;
}

namespace homodyne::nuts {

class DiagMetric {
 public:
  // Unit metric in `dimension` dimensions.
  explicit DiagMetric(int dimension);

  int dimension() const { return static_cast<int>(inverse_metric_.size()); }

  // T(p) = ½ pᵀ M⁻¹ p.
  double KineticEnergy(std::span<const double> p) const;
  // p♯ = ∂T/∂p = M⁻¹ p.
  void Sharp(std::span<const double> p, std::span<double> p_sharp) const;
  // p ~ N(0, M): p_i = z_i / √(m⁻¹_i) with z_i standard normal from `rng`.
  void SampleMomentum(CounterRng& rng, std::span<double> p) const;

  // The inverse metric as a flat vector of `dimension` variances (serialisable form).
  const std::vector<double>& inverse_metric() const { return inverse_metric_; }
  // Sets M⁻¹ from `dimension` positive, finite variances (throws kNumerical otherwise).
  void SetInverseMetric(std::span<const double> inverse_metric);

 private:
  std::vector<double> inverse_metric_;
};

}  // namespace homodyne::nuts
