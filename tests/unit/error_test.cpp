#include "core/error.h"

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
  EXPECT_EQ(e.exit_code(), ExitCode::kBadInput);
  EXPECT_FALSE(e.agreed());
  EXPECT_TRUE(e.MarkAgreed().agreed());
}

TEST(Error, EmptyContextPartsAreOmitted) {
  Error e(ErrorKind::kInternal, "boom");
  EXPECT_STREQ(e.what(), "boom");
  EXPECT_EQ(e.WithRank(1).context().rank, 1);
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
