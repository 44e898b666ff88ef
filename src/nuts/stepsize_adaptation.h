// Nesterov dual averaging of log ε toward a target mean acceptance statistic δ
// (Hoffman & Gelman 2014, as in Stan's stepsize_adaptation):
//   t ← t + 1;  η = 1/(t + t₀);  s̄ ← (1 − η)s̄ + η(δ − min(1, a))
//   x = μ − s̄√t/γ;  ε = eˣ;  w = t^(−κ);  x̄ ← (1 − w)x̄ + w x
// At the end of warmup ε = exp(x̄).
#pragma once

namespace homodyne::nuts {

struct DualAveragingState {
  double counter = 0.0;  // adaptation iteration t
  double s_bar = 0.0;    // moving average of δ − a
  double x_bar = 0.0;    // moving average of log ε
  double mu = 0.0;       // shrinkage target of log ε
};

struct DualAveragingOptions {
  double delta = 0.8;  // target acceptance statistic, in (0, 1)
  double gamma = 0.05;
  double kappa = 0.75;
  double t0 = 10.0;
};

class StepSizeAdaptation {
 public:
  explicit StepSizeAdaptation(DualAveragingOptions options = {}) : options_(options) {}

  // μ = log(10 ε): called with the user's ε₀ before the first heuristic and with the
  // heuristic's ε after every metric update.
  void SetMuFromStepSize(double step_size);
  // t = s̄ = x̄ = 0 (μ unchanged).
  void Restart();
  // One update with the transition's accept_stat; returns the new ε.
  double Learn(double accept_stat);
  // ε to freeze at the end of warmup: exp(x̄).
  double FinalStepSize() const;

  const DualAveragingState& state() const { return state_; }
  void set_state(const DualAveragingState& state) { state_ = state; }
  const DualAveragingOptions& options() const { return options_; }

 private:
  DualAveragingOptions options_;
  DualAveragingState state_;
};

}  // namespace homodyne::nuts
