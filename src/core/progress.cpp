#include "core/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace homodyne {

Progress::Progress(const Logger& logger, std::string phase, ProgressOptions options)
    : logger_(logger),
      phase_(std::move(phase)),
      options_(options),
      active_(logger.Enabled(LogLevel::kInfo)),
      start_(std::chrono::steady_clock::now()) {
  if (!options_.in_place) {
    // HOMODYNE_PROGRESS=inplace|lines overrides the guess. Under mpiexec stdout may be a
    // pseudo-terminal even when the job's output goes to a file, so both streams must be
    // terminals for the in-place display.
    const char* env = std::getenv("HOMODYNE_PROGRESS");
    const std::string mode = env != nullptr ? env : "";
    if (mode == "inplace") {
      options_.in_place = true;
    } else if (mode == "lines") {
      options_.in_place = false;
    } else {
      options_.in_place = options_.stream != nullptr && ::isatty(::fileno(options_.stream)) == 1 &&
                          ::isatty(STDERR_FILENO) == 1;
    }
  }
  in_place_ = *options_.in_place;
  if (const char* env = std::getenv("HOMODYNE_PROGRESS_INTERVAL"); env != nullptr) {
    // A shorter interval for tests and short jobs' logs, a longer one for quiet logs.
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end == env || *end != '\0' || !std::isfinite(s) || s <= 0.0 || s > 3600.0) {
      ThrowBadInput(fmt::format("must be a number of seconds in (0, 3600], found '{}'", env), {},
                    "HOMODYNE_PROGRESS_INTERVAL");
    }
    options_.log_interval_s = s;
  }
}

Progress::~Progress() {
  if (line_open_) {
    std::fputc('\n', options_.stream);
    std::fflush(options_.stream);
  }
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Update(std::string_view text) {
  if (!active_ || done_) return;
  const auto now = std::chrono::steady_clock::now();
  if (last_shown_) {
    const double since = std::chrono::duration<double>(now - *last_shown_).count();
    if (since < (in_place_ ? options_.min_interval_s : options_.log_interval_s)) return;
  }
  last_shown_ = now;
  Show(text, false);
}

void Progress::Done(std::string_view text) {
  if (!active_ || done_) return;
  done_ = true;
  Show(text, true);
}

void Progress::Show(std::string_view text, bool final_line) {
  const std::string line = fmt::format("{}: {}", phase_, text);
  if (!in_place_) {
    logger_.Info("{}", line);
    return;
  }
  // Pad with blanks over a longer previous line (no terminal escape codes needed).
  const std::size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
  std::fprintf(options_.stream, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
  last_width_ = line.size() + pad;  // what the terminal shows now
  line_open_ = !final_line;
  if (final_line) std::fputc('\n', options_.stream);
  std::fflush(options_.stream);
}

ProgressTicker::ProgressTicker(double period_s, std::function<void()> tick) {
  const auto period = std::chrono::duration<double>(period_s);
  thread_ = std::thread([this, period, tick = std::move(tick)] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  });
}

ProgressTicker::~ProgressTicker() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace homodyne
