// The environment and the collective error conventions under MPI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <petscsys.h>

#include <numeric>
#include <string>

#include "core/errors.h"
#include "mpi_test_env.h"
#include "parallel/collective.h"

namespace homodyne {
namespace {

using testing::TestEnvironment;

TEST(Environment, MpiIsInitialisedWithThreadSupport) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  EXPECT_TRUE(initialized);
  EXPECT_GE(TestEnvironment().thread_level(), MPI_THREAD_FUNNELED);
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  EXPECT_EQ(TestEnvironment().size(), world_size);
}

TEST(Environment, AllreduceSumsRankNumbers) {
  const Comm& world = TestEnvironment().world();
  long mine = world.rank() + 1;
  long total = 0;
  ASSERT_EQ(MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, world.get()), MPI_SUCCESS);
  const long n = world.size();
  EXPECT_EQ(total, n * (n + 1) / 2);
}

TEST(Environment, PetscSharesTheWorld) {
  ASSERT_TRUE(TestEnvironment().petsc_initialized());
  PetscBool initialized = PETSC_FALSE;
  PetscInitialized(&initialized);
  EXPECT_TRUE(initialized);
  int result = MPI_UNEQUAL;
  MPI_Comm_compare(PETSC_COMM_WORLD, TestEnvironment().world().get(), &result);
  EXPECT_TRUE(result == MPI_IDENT || result == MPI_CONGRUENT);
}

TEST(Environment, TopologyIsLoaded) {
  const auto counts = TestEnvironment().topology().counts();
  EXPECT_GE(counts.cores, 1);
  EXPECT_GE(counts.pus, counts.cores);
  EXPECT_GE(TestEnvironment().topology().process_cores(), 1);
  EXPECT_FALSE(TestEnvironment().topology().process_cpuset().empty());
}

TEST(Comm, SplitAndDuplicateGiveWorkingCommunicators) {
  const Comm& world = TestEnvironment().world();
  Comm dup = Comm::Duplicate(world.get());
  EXPECT_EQ(dup.size(), world.size());
  EXPECT_EQ(dup.rank(), world.rank());
  Comm halves = world.Split(world.rank() % 2, world.rank());
  int one = 1;
  int count = 0;
  MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, halves.get());
  EXPECT_EQ(count, halves.size());
  EXPECT_EQ(halves.size(), (world.size() + 1 - world.rank() % 2) / 2);
}

TEST(CollectiveErrors, NoFailureReturnsNormallyOnEveryRank) {
  const Comm& world = TestEnvironment().world();
  int value = RunCollectively(world, [&] { return world.rank() * 2; });
  EXPECT_EQ(value, world.rank() * 2);
}

// An error raised on the last rank only must reach every rank as the same agreed
// error (no rank may be left waiting in the next collective).
TEST(CollectiveErrors, ErrorOnOneRankIsRaisedOnAllRanks) {
  const Comm& world = TestEnvironment().world();
  const int failing = world.size() - 1;
  try {
    RunCollectively(world, [&] {
      if (world.rank() == failing) ThrowBadInput("bad value", "input.h5", "/xpcs/dqlist");
    });
    FAIL() << "no error was raised on rank " << world.rank();
  } catch (const Error& e) {
    EXPECT_TRUE(IsAgreed(e));
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(ExitCodeOf(e), ExitCode::kBadInput);
    EXPECT_EQ(e.context().rank, failing);
    EXPECT_EQ(e.context().file, "input.h5");
    EXPECT_EQ(e.context().key, "/xpcs/dqlist");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bad value"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("rank " + std::to_string(failing)));
  }
  // The communicator is still usable afterwards: a collective completes.
  int one = 1;
  int sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, world.get());
  EXPECT_EQ(sum, world.size());
}

TEST(CollectiveErrors, LowestFailingRankWinsAndCountIsReported) {
  const Comm& world = TestEnvironment().world();
  try {
    RunCollectively(world, [&] {
      throw std::runtime_error("failure from rank " + std::to_string(world.rank()));
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_EQ(e.context().rank, 0);
    EXPECT_THAT(e.message(), ::testing::HasSubstr("failure from rank 0"));
    if (world.size() > 1) {
      EXPECT_THAT(e.message(),
                  ::testing::HasSubstr(std::to_string(world.size()) + " ranks failed"));
    }
  }
}

// A phase agreed inside another collective phase (nested RunCollectively): the outer
// agreement passes the inner agreed error through unchanged, with the failing rank and
// without a second "ranks failed" tag.
TEST(CollectiveErrors, NestedAgreementKeepsTheInnerError) {
  const Comm& world = TestEnvironment().world();
  const int last = world.size() - 1;
  try {
    RunCollectively(world, [&] {
      RunCollectively(world, [&] {
        if (world.rank() == last) throw Error(ErrorKind::kBadInput, "inner failure", {"f", "k"});
      });
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.context().rank, last);
    EXPECT_EQ(e.message(), "inner failure");
    EXPECT_TRUE(IsAgreed(e));
  }
}

}  // namespace
}  // namespace homodyne
