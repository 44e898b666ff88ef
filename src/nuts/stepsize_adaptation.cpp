#include "nuts/stepsize_adaptation.h"

#include <cmath>

namespace homodyne::nuts {

void StepSizeAdaptation::SetMuFromStepSize(double step_size) {
  state_.mu = std::log(10.0 * step_size);
}

void StepSizeAdaptation::Restart() {
  state_.counter = 0.0;
  state_.s_bar = 0.0;
  state_.x_bar = 0.0;
}

double StepSizeAdaptation::Learn(double accept_stat) {
  const double a = accept_stat > 1.0 ? 1.0 : accept_stat;
  state_.counter += 1.0;
  const double eta = 1.0 / (state_.counter + options_.t0);
  state_.s_bar = (1.0 - eta) * state_.s_bar + eta * (options_.delta - a);
  const double x = state_.mu - state_.s_bar * std::sqrt(state_.counter) / options_.gamma;
  const double w = std::pow(state_.counter, -options_.kappa);
  state_.x_bar = (1.0 - w) * state_.x_bar + w * x;
  return std::exp(x);
}

double StepSizeAdaptation::FinalStepSize() const { return std::exp(state_.x_bar); }

}  // namespace homodyne::nuts
