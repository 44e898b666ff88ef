// The run's log: the config's logging section read into levels, the precedence of the
// command line, the log file's place and name, and what the file receives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/run_log.h"
#include "config/config_reader.h"
#include "core/errors.h"

namespace homodyne {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

config::Config Read(const std::string& logging) {
  const std::string yaml =
      "analysis_mode: static\n"
      "experimental_data: {file_path: data.h5}\n"
      "analyzer_parameters: {dt: 0.1, start_frame: 1, end_frame: 100, wavevector_q: 0.01}\n" +
      logging;
  return config::ReadConfigString(yaml, "log.yaml", {});
}

std::time_t NoonOfTheFirst() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 30;
  tm.tm_hour = 12;
  tm.tm_min = 4;
  tm.tm_sec = 5;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

TEST(RunLog, LevelsAreReadIgnoringCaseWithPythonsAliases) {
  const config::Config c = Read(
      "logging: {level: debug, console: {level: Warn}, file: {enabled: true, level: CRITICAL}}\n");
  EXPECT_EQ(c.logging.level, LogLevel::kDebug);
  ASSERT_TRUE(c.logging.console_level.has_value());
  EXPECT_EQ(*c.logging.console_level, LogLevel::kWarning);
  EXPECT_EQ(c.logging.file_level, LogLevel::kError);
  EXPECT_TRUE(c.logging.file_enabled);
  EXPECT_TRUE(c.logging.file_path.empty());  // null: the output directory's logs/
}

TEST(RunLog, AnUnknownLevelNamesTheKey) {
  try {
    Read("logging: {console: {level: LOUD}}\n");
    FAIL() << "an unknown level was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("logging.console.level"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("LOUD"));
  }
}

TEST(RunLog, TheConsoleTakesLevelWhenItsOwnIsNotSet) {
  const config::Config c = Read("logging: {level: WARNING}\n");
  EXPECT_FALSE(c.logging.console_level.has_value());
  EXPECT_EQ(PlanRunLog(c.logging, 0, false, "out", 0).console, LogLevel::kWarning);
  // The defaults print what a run without a logging section prints.
  EXPECT_EQ(PlanRunLog(Read("").logging, 0, false, "out", 0).console, LogLevel::kInfo);
}

TEST(RunLog, TheCommandLineTakesPrecedence) {
  const config::Config c = Read("logging: {level: ERROR, console: {level: ERROR}}\n");
  EXPECT_EQ(PlanRunLog(c.logging, 1, false, "out", 0).console, LogLevel::kDebug);
  EXPECT_EQ(PlanRunLog(c.logging, 2, false, "out", 0).console, LogLevel::kTrace);
  const config::Config loud = Read("logging: {console: {level: DEBUG}}\n");
  EXPECT_EQ(PlanRunLog(loud.logging, 0, true, "out", 0).console, LogLevel::kError);
}

TEST(RunLog, DisabledLoggingKeepsWarningsAndWritesNoFile) {
  const config::Config off = Read("logging: {enabled: false, file: {enabled: true}}\n");
  const RunLogPlan plan = PlanRunLog(off.logging, 0, false, "out", 0);
  EXPECT_EQ(plan.console, LogLevel::kWarning);
  EXPECT_FALSE(plan.file.has_value());
  const config::Config quiet_console = Read("logging: {console: {enabled: false}}\n");
  EXPECT_EQ(PlanRunLog(quiet_console.logging, 0, false, "out", 0).console, LogLevel::kError);
}

TEST(RunLog, TheFileIsNamedByTheRunsStart) {
  const std::time_t t = NoonOfTheFirst();
  const config::Config c = Read("logging: {file: {enabled: true}}\n");
  const RunLogPlan plan = PlanRunLog(c.logging, 0, false, "results", t);
  ASSERT_TRUE(plan.file.has_value());
  EXPECT_EQ(*plan.file,
            std::filesystem::path("results/logs/homodyne_analysis_20261130_120405.log"));
  EXPECT_EQ(plan.file_level, LogLevel::kDebug);
  const config::Config named =
      Read("logging: {file: {enabled: true, path: ./mylogs, filename: 'run_{run_id}.txt'}}\n");
  EXPECT_EQ(*PlanRunLog(named.logging, 0, false, "results", t).file,
            std::filesystem::path("./mylogs/run_20261130_120405.txt"));
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RunLog, TheFileGetsItsLevelWhileTheConsoleKeepsItsOwn) {
  const auto dir = std::filesystem::temp_directory_path() / "homodyne_run_log_test";
  std::filesystem::remove_all(dir);
  RunLogPlan plan;
  plan.console = LogLevel::kWarning;
  plan.file = dir / "sub" / "run.log";
  plan.file_level = LogLevel::kDebug;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ASSERT_NE(err, nullptr);
  {
    Logger log(0, LogLevel::kInfo, out, err);
    OpenRunLog(log, plan, "log.yaml");
    EXPECT_EQ(log.level(), LogLevel::kWarning);
    log.Debug("a debug line");
    log.Info("an info line");
    log.Warn("a warning");
    log.Trace("a trace line");
  }
  std::fflush(out);
  EXPECT_EQ(std::ftell(out), 0) << "the console printed below its level";
  const std::string file = Slurp(*plan.file);
  EXPECT_THAT(file, HasSubstr("DEBUG   a debug line"));
  EXPECT_THAT(file, HasSubstr("INFO    an info line"));
  EXPECT_THAT(file, HasSubstr("WARNING a warning"));
  EXPECT_THAT(file, Not(HasSubstr("trace")));
  std::fclose(out);
  std::fclose(err);

  // Another rank writes no file (rank 0 keeps the run's one log).
  Logger other(1, LogLevel::kInfo, stdout, stderr);
  RunLogPlan elsewhere = plan;
  elsewhere.file = dir / "rank1.log";
  OpenRunLog(other, elsewhere, "log.yaml");
  EXPECT_FALSE(other.HasFile());
  EXPECT_FALSE(std::filesystem::exists(*elsewhere.file));
  std::filesystem::remove_all(dir);
}

TEST(RunLog, AFolderThatCannotBeMadeIsBadInputNamingTheKey) {
  const auto blocker = std::filesystem::temp_directory_path() / "homodyne_run_log_blocker";
  std::filesystem::remove_all(blocker);
  std::ofstream(blocker) << "a file, not a folder";
  RunLogPlan plan;
  plan.file = blocker / "logs" / "run.log";
  Logger log = Logger::Silent();
  try {
    OpenRunLog(log, plan, "log.yaml");
    FAIL() << "a log under a file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_THAT(std::string(e.what()), HasSubstr("logging.file.path"));
  }
  std::filesystem::remove_all(blocker);
}

}  // namespace
}  // namespace homodyne
