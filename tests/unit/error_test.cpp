#include "core/errors.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/fault_injection.h"
#include "core/log.h"
#include "runtime/environment.h"

namespace homodyne {
namespace {

TEST(Error, MessageNamesFileKeyAndRank) {
  Error e(ErrorKind::kBadInput, "expected a positive number, got -1", {"cfg.yaml", "dt", 3});
  EXPECT_STREQ(e.what(), "cfg.yaml: dt: expected a positive number, got -1 (rank 3)");
  EXPECT_EQ(e.message(), "expected a positive number, got -1");
  EXPECT_EQ(ExitCodeOf(e), ExitCode::kBadInput);
  EXPECT_FALSE(IsAgreed(e));
  const Error agreed = MarkAgreed(e);
  EXPECT_TRUE(IsAgreed(agreed));
  EXPECT_STREQ(agreed.what(), e.what());
}

TEST(Error, EmptyContextPartsAreOmitted) {
  Error e(ErrorKind::kInternal, "boom");
  EXPECT_STREQ(e.what(), "boom");
}

TEST(Error, ExitCodesFollowTheDocumentedTable) {
  EXPECT_EQ(static_cast<int>(ExitCodeFor(ErrorKind::kBadInput)), 2);
  EXPECT_EQ(static_cast<int>(ExitCodeFor(ErrorKind::kIo)), 2);
  EXPECT_EQ(static_cast<int>(ExitCodeFor(ErrorKind::kInternal)), 1);
  EXPECT_EQ(static_cast<int>(ExitCodeFor(ErrorKind::kNumerical)), 1);
  EXPECT_EQ(static_cast<int>(ExitCodeFor(ErrorKind::kCheckpointed)), 75);
}

TEST(Error, CheckMacroThrowsInternalErrorWithLocation) {
  try {
    HOMODYNE_CHECK(1 + 1 == 3, "arithmetic");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("error_test.cpp"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("arithmetic"));
  }
}

TEST(FaultInjection, SpecSelectsStageAndRank) {
  EXPECT_TRUE(FailureRequested("startup@1", "startup", 1));
  EXPECT_FALSE(FailureRequested("startup@1", "startup", 0));
  EXPECT_FALSE(FailureRequested("startup@1", "load", 1));
  EXPECT_TRUE(FailureRequested("load@0,startup@2", "startup", 2));
  EXPECT_TRUE(FailureRequested("fit@*", "fit", 7));
  EXPECT_FALSE(FailureRequested("startup@1x", "startup", 1));
  EXPECT_FALSE(FailureRequested("", "startup", 0));
}

TEST(FaultInjection, SpecNamesTheFaultKind) {
  EXPECT_EQ(FaultRequested("load@1", "load", 1).kind, InjectedFault::kError);
  EXPECT_EQ(FaultRequested("load@1:error", "load", 1).kind, InjectedFault::kError);
  EXPECT_EQ(FaultRequested("load@1:kill", "load", 1).kind, InjectedFault::kKill);
  EXPECT_EQ(FaultRequested("fit@0,output@1:enospc", "output", 1).kind, InjectedFault::kNoSpace);
  const FaultRequest slow = FaultRequested("global@*:slow", "global", 3);
  EXPECT_EQ(slow.kind, InjectedFault::kSlow);
  EXPECT_EQ(slow.slow_factor, 10.0);
  EXPECT_EQ(FaultRequested("global@1:slow4", "global", 1).slow_factor, 4.0);
  EXPECT_EQ(FaultRequested("global@1:kill", "global", 0).kind, InjectedFault::kNone);
  // A misspelt fault is an error of the test, not "no fault".
  EXPECT_THROW(FaultRequested("load@1:crash", "load", 1), Error);
  EXPECT_THROW(FaultRequested("load@1:slow0.5", "load", 1), Error);
}

TEST(FaultInjection, SlowScopeTakesTheFactorTimesItsWork) {
  ASSERT_EQ(setenv(kFailureInjectionVariable, "unit@0:slow3", 1), 0);
  const auto t0 = std::chrono::steady_clock::now();
  {
    const FaultScope scope("unit", 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv(kFailureInjectionVariable);
  EXPECT_GE(took, 0.06);  // 20 ms of work, then twice that asleep
  {
    const ScopedFaultStage stage("global");
    EXPECT_EQ(CurrentFaultStage(), "global");
  }
  EXPECT_EQ(CurrentFaultStage(), "");
}

TEST(Logger, OnlyRankZeroPrintsBelowError) {
  Logger root(0, LogLevel::kInfo);
  Logger other(1, LogLevel::kTrace);
  EXPECT_TRUE(root.Enabled(LogLevel::kInfo));
  EXPECT_FALSE(root.Enabled(LogLevel::kDebug));
  EXPECT_FALSE(other.Enabled(LogLevel::kInfo));
  EXPECT_FALSE(other.Enabled(LogLevel::kWarning));
  EXPECT_TRUE(other.Enabled(LogLevel::kError));
  EXPECT_FALSE(Logger::Silent().Enabled(LogLevel::kError));
  EXPECT_EQ(LogLevelFromVerbosity(0, false), LogLevel::kInfo);
  EXPECT_EQ(LogLevelFromVerbosity(1, false), LogLevel::kDebug);
  EXPECT_EQ(LogLevelFromVerbosity(3, false), LogLevel::kTrace);
  EXPECT_EQ(LogLevelFromVerbosity(2, true), LogLevel::kError);
}

TEST(SplitPetscArguments, SeparatesPetscOptionsAndTheirValues) {
  const char* argv[] = {"homodyne", "--config", "c.yaml",    "-tao_monitor", "-tao_gatol",
                        "1e-9",     "-v",       "-tao_type", "bnls",         "-pc_factor_shift",
                        "-1e-3",    "--quiet"};
  auto split = SplitPetscArguments(12, argv);
  EXPECT_THAT(split.program_args,
              ::testing::ElementsAre("homodyne", "--config", "c.yaml", "-v", "--quiet"));
  EXPECT_THAT(split.petsc_args,
              ::testing::ElementsAre("-tao_monitor", "-tao_gatol", "1e-9", "-tao_type", "bnls",
                                     "-pc_factor_shift", "-1e-3"));
}

}  // namespace
}  // namespace homodyne
