#include "nuts/windowed_adaptation.h"

namespace homodyne::nuts {

WindowedAdaptation::WindowedAdaptation(int num_warmup, WindowOptions options)
    : num_warmup_(num_warmup),
      enabled_(num_warmup >= 20),
      init_buffer_(options.init_buffer),
      term_buffer_(options.term_buffer),
      base_window_(options.base_window) {
  if (enabled_ && init_buffer_ + base_window_ + term_buffer_ > num_warmup_) {
    // 15% / 75% / 10% of the warmup (truncated as Stan does).
    init_buffer_ = static_cast<int>(0.15 * num_warmup_);
    term_buffer_ = static_cast<int>(0.1 * num_warmup_);
    base_window_ = num_warmup_ - (init_buffer_ + term_buffer_);
  }
  // Unlike Stan, the schedule is always computed from the effective buffers.
  Restart();
}

void WindowedAdaptation::Restart() {
  state_.counter = 0;
  state_.window_size = base_window_;
  state_.next_end = init_buffer_ + base_window_ - 1;
}

bool WindowedAdaptation::InWindow() const {
  return enabled_ && state_.counter >= init_buffer_ &&
         state_.counter < num_warmup_ - term_buffer_ && state_.counter != num_warmup_;
}

bool WindowedAdaptation::AtWindowEnd() const {
  return enabled_ && state_.counter == state_.next_end && state_.counter != num_warmup_;
}

void WindowedAdaptation::ComputeNextWindow() {
  const std::int64_t last_end = num_warmup_ - term_buffer_ - 1;
  if (state_.next_end == last_end) return;
  state_.window_size *= 2;
  state_.next_end = state_.counter + state_.window_size;
  if (state_.next_end != last_end) {
    // Stretch this window if the one after it would not fit before the term buffer.
    const std::int64_t following_end = state_.next_end + 2 * state_.window_size;
    if (following_end >= num_warmup_ - term_buffer_) state_.next_end = last_end;
  }
}

std::vector<int> WindowedAdaptation::UpdateIterations(int num_warmup, WindowOptions options) {
  WindowedAdaptation windows(num_warmup, options);
  std::vector<int> updates;
  for (int iteration = 0; iteration < num_warmup; ++iteration) {
    if (windows.AtWindowEnd()) {
      updates.push_back(iteration);
      windows.ComputeNextWindow();
    }
    windows.Advance();
  }
  return updates;
}

}  // namespace homodyne::nuts
