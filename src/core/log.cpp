#include "core/log.h"

#include <ctime>

namespace homodyne {

std::string_view ToString(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kTrace:
      return "trace";
  }
  return "unknown";
}

LogLevel LogLevelFromVerbosity(int verbosity, bool quiet) {
  if (quiet) return LogLevel::kError;
  if (verbosity <= 0) return LogLevel::kInfo;
  if (verbosity == 1) return LogLevel::kDebug;
  return LogLevel::kTrace;
}

Logger::Logger(int rank, LogLevel level, std::FILE* out, std::FILE* err)
    : rank_(rank), level_(level), out_(out), err_(err) {}

Logger Logger::Silent() {
  Logger logger(0, LogLevel::kError);
  logger.silent_ = true;
  return logger;
}

void Logger::SetFile(std::shared_ptr<std::FILE> file, LogLevel level) {
  file_ = std::move(file);
  file_level_ = level;
}

namespace {

bool AtMost(LogLevel level, LogLevel limit) {
  return static_cast<int>(level) <= static_cast<int>(limit);
}

// "2026-11-30 00:41:02 INFO    message": the file of a long run is read by time.
std::string FileLine(LogLevel level, std::string_view message) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  std::string name(ToString(level));
  for (char& ch : name) ch = static_cast<char>(ch - 'a' + 'A');
  return fmt::format("{} {:<7} {}\n", std::string_view(stamp, n), name, message);
}

}  // namespace

bool Logger::Enabled(LogLevel level) const {
  if (silent_) return false;
  if (level == LogLevel::kError) return true;  // every rank reports its own errors
  if (rank_ != 0) return false;
  return AtMost(level, level_) || (file_ != nullptr && AtMost(level, file_level_));
}

void Logger::Write(LogLevel level, std::string_view message) const {
  if (!Enabled(level)) return;
  if (rank_ == 0 && file_ != nullptr && AtMost(level, file_level_)) {
    const std::string line = FileLine(level, message);
    std::fwrite(line.data(), 1, line.size(), file_.get());
    std::fflush(file_.get());
  }
  if (level != LogLevel::kError && !AtMost(level, level_)) return;
  std::FILE* stream = level <= LogLevel::kWarning ? err_ : out_;
  std::string line;
  if (level == LogLevel::kError) {
    line = rank_ == 0 ? fmt::format("error: {}\n", message)
                      : fmt::format("[rank {}] error: {}\n", rank_, message);
  } else if (level == LogLevel::kWarning) {
    line = fmt::format("warning: {}\n", message);
  } else {
    line = fmt::format("{}\n", message);
  }
  std::fwrite(line.data(), 1, line.size(), stream);
  std::fflush(stream);
}

}  // namespace homodyne
