#include "app/run_log.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "config/key_paths.h"
#include "core/errors.h"

namespace homodyne {
namespace {

std::string FileName(const std::string& configured, std::time_t started) {
  std::tm tm{};
  localtime_r(&started, &tm);
  char stamp[32];
  const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
  const std::string run_id(stamp, n);
  const std::string name = configured.empty() ? "homodyne_analysis.log" : configured;
  if (const auto at = name.find("{run_id}"); at != std::string::npos) {
    return name.substr(0, at) + run_id + name.substr(at + 8);
  }
  const std::filesystem::path p(name);
  const std::string stem = p.stem().empty() ? "homodyne_analysis" : p.stem().string();
  const std::string ext = p.extension().empty() ? ".log" : p.extension().string();
  return stem + "_" + run_id + ext;
}

}  // namespace

RunLogPlan PlanRunLog(const config::LoggingOptions& logging, int verbosity, bool quiet,
                      const std::filesystem::path& output_dir, std::time_t started) {
  RunLogPlan plan;
  if (quiet || verbosity > 0) {
    plan.console = LogLevelFromVerbosity(verbosity, quiet);
  } else if (!logging.enabled) {
    plan.console = LogLevel::kWarning;
  } else if (!logging.console_enabled) {
    plan.console = LogLevel::kError;
  } else {
    plan.console = logging.console_level.value_or(logging.level);
  }
  if (logging.enabled && logging.file_enabled) {
    const std::filesystem::path folder =
        logging.file_path.empty() ? output_dir / "logs" : std::filesystem::path(logging.file_path);
    plan.file = folder / FileName(logging.file_name, started);
    plan.file_level = logging.file_level;
  }
  return plan;
}

void OpenRunLog(Logger& log, const RunLogPlan& plan, const std::string& config_file) {
  log.set_level(plan.console);
  if (!plan.file || log.rank() != 0) return;
  const auto fail = [&](const std::string& why) {
    ThrowBadInput(fmt::format("cannot write the log file {}: {}", plan.file->string(), why),
                  config_file, config::keys::Key(config::keys::kLogging, "file.path"));
  };
  std::error_code ec;
  std::filesystem::create_directories(plan.file->parent_path(), ec);
  if (ec) fail(ec.message());
  std::FILE* f = std::fopen(plan.file->c_str(), "a");
  if (f == nullptr) fail(std::strerror(errno));
  log.SetFile(std::shared_ptr<std::FILE>(f, [](std::FILE* p) { std::fclose(p); }), plan.file_level);
}

}  // namespace homodyne
