#include "core/log.h"

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

bool Logger::Enabled(LogLevel level) const {
  if (silent_) return false;
  if (level == LogLevel::kError) return true;  // every rank reports its own errors
  return rank_ == 0 && static_cast<int>(level) <= static_cast<int>(level_);
}

void Logger::Write(LogLevel level, std::string_view message) const {
  if (!Enabled(level)) return;
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
