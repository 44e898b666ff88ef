// The run's log as the config's logging section and the command line set it: the console's
// level, and a log file of rank 0's lines (homodyne's `logging.file`).
#pragma once

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/log.h"

namespace homodyne {

struct RunLogPlan {
  LogLevel console = LogLevel::kInfo;
  std::optional<std::filesystem::path> file;  // none: no log file
  LogLevel file_level = LogLevel::kDebug;
};

// -v/-vv and --quiet take precedence over the config's console level; logging.enabled:
// false keeps warnings and errors on the console and writes no file; console.enabled: false
// keeps errors. The file goes to file.path (relative to the working directory) or to
// <output_dir>/logs, named file.filename with `started` (local time) before its extension or
// in place of {run_id}.
RunLogPlan PlanRunLog(const config::LoggingOptions& logging, int verbosity, bool quiet,
                      const std::filesystem::path& output_dir, std::time_t started);

// Sets `log` to the plan; rank 0 creates the file's folder and opens the file (appending).
// A folder or file that cannot be made is bad input naming logging.file.path.
void OpenRunLog(Logger& log, const RunLogPlan& plan, const std::string& config_file);

}  // namespace homodyne
