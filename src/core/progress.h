// A single-line progress display for long phases (loading, NLSQ iterations, CMC shards).
//
// Shown only where the logger prints informational messages (rank 0, not --quiet). On a
// terminal the line is redrawn in place ("\r", at most every min_interval_s); otherwise
// (a batch job's log file) a plain log line is written for the first update and then at
// most every log_interval_s, so logs stay short. Done() always shows the final state.
// HOMODYNE_PROGRESS=inplace|lines forces either display; HOMODYNE_PROGRESS_INTERVAL=<s>
// (0 < s <= 3600) replaces log_interval_s.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "core/log.h"

namespace homodyne {

struct ProgressOptions {
  double min_interval_s = 0.2;   // terminal: redraw at most this often
  double log_interval_s = 10.0;  // not a terminal: one log line at most this often
  std::optional<bool> in_place;  // default: whether stdout is a terminal
  std::FILE* stream = stdout;    // where the in-place line goes
};

class Progress {
 public:
  Progress(const Logger& logger, std::string phase, ProgressOptions options = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool active() const { return active_; }
  bool in_place() const { return in_place_; }
  double elapsed() const;  // seconds since construction
  // The shortest time between two shown lines (min_interval_s or log_interval_s).
  double interval() const { return in_place_ ? options_.min_interval_s : options_.log_interval_s; }

  // "<phase>: <text>", throttled as described above.
  void Update(std::string_view text);
  // The final state, always shown; later updates are ignored.
  void Done(std::string_view text);

 private:
  void Show(std::string_view text, bool final_line);

  Logger logger_;  // a copy: callers may pass a temporary (Logger::Silent())
  std::string phase_;
  ProgressOptions options_;
  bool active_ = false;
  bool in_place_ = false;
  bool line_open_ = false;  // an in-place line without its newline yet
  bool done_ = false;
  std::size_t last_width_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::optional<std::chrono::steady_clock::time_point> last_shown_;
};

// Calls `tick` on a thread of its own about every `period_s` seconds until destroyed (the
// destructor stops and joins it; a tick in progress finishes first). For a phase whose work
// runs on other threads, e.g. CMC's chains: the work only bumps counters, the ticker reads
// them and updates a Progress, so the work never waits for output. `tick` must be safe to
// run concurrently with the caller's thread.
class ProgressTicker {
 public:
  ProgressTicker(double period_s, std::function<void()> tick);
  ~ProgressTicker();
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace homodyne
