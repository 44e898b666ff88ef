// TryParseCommandLine: what every homodyne tool does with --help and a bad command line.
#include "app/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"

namespace homodyne {
namespace {

struct Parsed {
  std::optional<int> code;
  int threads = 0;
  std::string out, err;
};

Parsed ParseArgs(std::vector<std::string> args, bool print = true) {
  CLI::App app{"test tool", "tool"};
  Parsed p;
  app.add_option("--threads", p.threads, "threads")->check(PositiveCount());
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  p.code = TryParseCommandLine(
      app, [&] { app.parse(reversed); }, print);
  p.out = testing::internal::GetCapturedStdout();
  p.err = testing::internal::GetCapturedStderr();
  return p;
}

TEST(CommandLine, ValidArgumentsGoOn) {
  const Parsed p = ParseArgs({"--threads", "3"});
  EXPECT_FALSE(p.code.has_value());
  EXPECT_EQ(p.threads, 3);
  EXPECT_TRUE(p.out.empty() && p.err.empty());
}

TEST(CommandLine, HelpPrintsOnStdoutAndExitsZero) {
  const Parsed p = ParseArgs({"--help"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, 0);
  EXPECT_NE(p.out.find("--threads"), std::string::npos);
  EXPECT_TRUE(p.err.empty());
}

TEST(CommandLine, BadInputNamesTheProblemAndExitsTwo) {
  Parsed p = ParseArgs({"--bogus"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, static_cast<int>(ExitCode::kBadInput));
  EXPECT_NE(p.err.find("error: "), std::string::npos);
  EXPECT_NE(p.err.find("--bogus"), std::string::npos);
  EXPECT_NE(p.err.find("--help"), std::string::npos);
  p = ParseArgs({"--threads", "0"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, static_cast<int>(ExitCode::kBadInput));
  EXPECT_NE(p.err.find("--threads: expected an integer >= 1, found 0"), std::string::npos) << p.err;
  p = ParseArgs({"--threads", "abc"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_NE(p.err.find("--threads: expected an integer, found 'abc'"), std::string::npos) << p.err;
  p = ParseArgs({"--threads", "3x"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_NE(p.err.find("expected an integer, found '3x'"), std::string::npos) << p.err;
  p = ParseArgs({"--threads", "3"});
  EXPECT_FALSE(p.code.has_value()) << p.err;
}

TEST(CommandLine, OtherRanksPrintNothing) {
  const Parsed help = ParseArgs({"--help"}, false);
  EXPECT_EQ(help.code, 0);
  const Parsed bad = ParseArgs({"--bogus"}, false);
  EXPECT_EQ(bad.code, static_cast<int>(ExitCode::kBadInput));
  EXPECT_TRUE(help.out.empty() && help.err.empty() && bad.out.empty() && bad.err.empty());
}

}  // namespace
}  // namespace homodyne
