// The warmup schedule of metric adaptation (Stan's windowed_adaptation): a fast init
// buffer, slow windows that double in size (the last one stretched to end exactly at
// num_warmup − term_buffer − 1), and a fast terminal buffer. Draws are collected only
// inside the slow windows; the metric is re-estimated at the end of each.
//
// Deliberate difference from Stan: when init + base window + term > num_warmup the
// buffers shrink to 15% / 75% / 10% and the schedule is RECOMPUTED from the new values
// (Stan leaves the first window end unset there, so the metric never updates).
#pragma once

#include <cstdint>
#include <vector>

namespace homodyne::nuts {

struct WindowOptions {
  int init_buffer = 75;  // fast adaptation (ε only) before the first slow window
  int term_buffer = 50;  // fast adaptation after the last slow window
  int base_window = 25;  // size of the first slow window
};

struct WindowState {
  std::int64_t counter = 0;      // warmup iterations seen so far
  std::int64_t window_size = 0;  // size of the current slow window
  std::int64_t next_end = 0;     // iteration at which the current slow window ends
};

class WindowedAdaptation {
 public:
  // No metric adaptation at all when num_warmup < 20 (enabled() is false).
  WindowedAdaptation(int num_warmup, WindowOptions options = {});

  bool enabled() const { return enabled_; }
  // The effective buffers after the small-warmup rule.
  int init_buffer() const { return init_buffer_; }
  int term_buffer() const { return term_buffer_; }
  int base_window() const { return base_window_; }

  // Is the current iteration's draw collected by the estimator?
  bool InWindow() const;
  // Does a slow window end at the current iteration?
  bool AtWindowEnd() const;
  // Advance the schedule past a window end (call when AtWindowEnd()).
  void ComputeNextWindow();
  // Move to the next iteration.
  void Advance() { ++state_.counter; }
  void Restart();

  const WindowState& state() const { return state_; }
  void set_state(const WindowState& state) { state_ = state; }

  // Iterations (0-based) at which the metric is updated for this num_warmup.
  static std::vector<int> UpdateIterations(int num_warmup, WindowOptions options = {});

 private:
  int num_warmup_;
  bool enabled_;
  int init_buffer_;
  int term_buffer_;
  int base_window_;
  WindowState state_;
};

}  // namespace homodyne::nuts
