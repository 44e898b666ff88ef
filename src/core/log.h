// Rank-aware logging.
//
// Rank 0 prints messages up to the configured level; every other rank prints only
// errors (prefixed with its rank), so a 1000-rank job produces one log, not 1000.
// Informational output goes to stdout, warnings and errors to stderr.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace homodyne {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

std::string_view ToString(LogLevel level);

// Level from the usual -v count: 0 → info, 1 → debug, ≥2 → trace; quiet → errors only.
LogLevel LogLevelFromVerbosity(int verbosity, bool quiet);

class Logger {
 public:
  // A logger that prints as rank `rank` at `level`. Streams default to stdout/stderr.
  explicit Logger(int rank = 0, LogLevel level = LogLevel::kInfo, std::FILE* out = stdout,
                  std::FILE* err = stderr);

  // A logger that prints nothing (for library code called from tests).
  static Logger Silent();

  int rank() const { return rank_; }
  LogLevel level() const { return level_; }
  void set_level(LogLevel level) { level_ = level; }

  // Also writes rank 0's messages up to `level` to `file` (a log file of the run, lines
  // stamped with the time and level), beside the console. The logger's copies share it.
  void SetFile(std::shared_ptr<std::FILE> file, LogLevel level);
  bool HasFile() const { return file_ != nullptr; }

  // True when a message at this level would be printed by this rank (console or file).
  bool Enabled(LogLevel level) const;

  void Write(LogLevel level, std::string_view message) const;

  template <typename... Args>
  void Error(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kError, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kWarning, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Info(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Debug(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kDebug, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Trace(fmt::format_string<Args...> f, Args&&... args) const {
    Emit(LogLevel::kTrace, f, std::forward<Args>(args)...);
  }

 private:
  template <typename... Args>
  void Emit(LogLevel level, fmt::format_string<Args...> f, Args&&... args) const {
    if (!Enabled(level)) return;
    Write(level, fmt::format(f, std::forward<Args>(args)...));
  }

  int rank_;
  LogLevel level_;
  std::FILE* out_;
  std::FILE* err_;
  bool silent_ = false;
  std::shared_ptr<std::FILE> file_;
  LogLevel file_level_ = LogLevel::kError;
};

}  // namespace homodyne
