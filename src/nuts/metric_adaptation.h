// Windowed estimation of the inverse metric during warmup: the schedule from
// windowed_adaptation.h feeds a Welford estimator (variance for a diagonal metric,
// covariance for a dense one), and at each window end the estimate is regularised
//   M⁻¹ = (n/(n+5)) Σ̂ + 10⁻³ (5/(n+5)) I
// (shrinkage toward 10⁻³·I, as in Stan) and the estimator restarts.
#pragma once

#include <span>
#include <vector>

#include "nuts/welford_variance.h"
#include "nuts/windowed_adaptation.h"

namespace homodyne::nuts {

enum class MetricKind { kDiag, kDense };

class MetricAdaptation {
 public:
  MetricAdaptation(MetricKind kind, int dimension, int num_warmup, WindowOptions options = {});

  // Feed the draw of the current warmup iteration. Returns true when a window ended
  // here; then `inverse_metric` (diag: dimension values; dense: dimension² row-major)
  // holds the new regularised estimate. Throws kNumerical if it is not finite.
  bool Learn(std::span<const double> q, std::vector<double>& inverse_metric);

  const WindowedAdaptation& windows() const { return windows_; }
  WindowedAdaptation& windows() { return windows_; }
  const WelfordState& estimator_state() const;
  void set_estimator_state(const WelfordState& state);

 private:
  MetricKind kind_;
  int dimension_;
  WindowedAdaptation windows_;
  WelfordVariance variance_;
  WelfordCovariance covariance_;
};

}  // namespace homodyne::nuts
