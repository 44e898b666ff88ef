// ReadCrashGuard (src/io/read_crash_guard.h): a crash while a guard is alive ends the process
// with exit status 2 and the innermost guard's message; once every guard is gone the
// previous handling (here the default: death by the signal) is back. Death tests: each case
// runs in a child process.
#include <gtest/gtest.h>

#include <csignal>

#include "io/read_crash_guard.h"

namespace homodyne::io {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGuarded = false;  // the guard steps aside for the sanitizers
#else
constexpr bool kGuarded = true;
#endif

class ReadCrashGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kGuarded) GTEST_SKIP() << "sanitizer build: the guard does nothing";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(ReadCrashGuardTest, CrashInsideExitsTwoNamingTheFile) {
  EXPECT_EXIT(
      {
        const ReadCrashGuard guard("/data/run_42.h5", "its metadata");
        std::raise(SIGSEGV);
      },
      ::testing::ExitedWithCode(2),
      "error: /data/run_42.h5: the HDF5 library crashed while reading its metadata: the file "
      "is corrupt");
  EXPECT_EXIT(
      {
        const ReadCrashGuard guard("/data/b.h5", "tiles");
        std::raise(SIGBUS);
      },
      ::testing::ExitedWithCode(2), "/data/b.h5: the HDF5 library crashed while reading tiles");
}

TEST_F(ReadCrashGuardTest, InnermostGuardNamesTheFileAndTheOuterOneComesBack) {
  EXPECT_EXIT(
      {
        const ReadCrashGuard outer("outer.h5", "the checkpoint");
        const ReadCrashGuard inner("inner.h5", "its metadata");
        std::raise(SIGSEGV);
      },
      ::testing::ExitedWithCode(2), "inner.h5: the HDF5 library crashed while reading its");
  EXPECT_EXIT(
      {
        const ReadCrashGuard outer("outer.h5", "the checkpoint");
        { const ReadCrashGuard inner("inner.h5", "its metadata"); }
        std::raise(SIGSEGV);
      },
      ::testing::ExitedWithCode(2), "outer.h5: the HDF5 library crashed while reading the");
}

TEST_F(ReadCrashGuardTest, AfterTheLastGuardACrashIsACrashAgain) {
  EXPECT_EXIT(
      {
        { const ReadCrashGuard guard("a.h5", "x"); }
        std::raise(SIGSEGV);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

}  // namespace
}  // namespace homodyne::io
