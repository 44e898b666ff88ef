// The shared task counter hands every index to exactly one caller, whichever rank asks,
// including when the owner is busy elsewhere and the other ranks draw on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mpi_test_env.h"
#include "parallel/task_counter.h"

namespace homodyne {
namespace {

TEST(SharedTaskCounter, EveryIndexIsDrawnExactlyOnce) {
  const Comm& world = testing::TestEnvironment().world();
  constexpr int kTasks = 40;
  std::vector<int> mine;
  {
    SharedTaskCounter counter(world);
    for (std::int64_t i = counter.Next(); i < kTasks; i = counter.Next()) {
      mine.push_back(static_cast<int>(i));
    }
  }
  // Each rank's draws increase (a counter never goes back).
  EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
  std::vector<int> counts(kTasks, 0);
  for (int i : mine) counts[static_cast<std::size_t>(i)] += 1;
  MPI_Allreduce(MPI_IN_PLACE, counts.data(), kTasks, MPI_INT, MPI_SUM, world.get());
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(counts[static_cast<std::size_t>(i)], 1) << i;
}

TEST(SharedTaskCounter, DrawsOfOtherRanksAdvanceTheOwnersCounter) {
  const Comm& world = testing::TestEnvironment().world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  SharedTaskCounter counter(world);
  int drawn = 0;
  if (world.rank() != 0) {
    for (int k = 0; k < 5; ++k) drawn += counter.Next() >= 0 ? 1 : 0;
  }
  // The owner draws only after everybody else has finished drawing.
  MPI_Barrier(world.get());
  if (world.rank() == 0) {
    EXPECT_EQ(counter.Next(), 5 * (world.size() - 1));
  } else {
    EXPECT_EQ(drawn, 5);
  }
  MPI_Barrier(world.get());
}

}  // namespace
}  // namespace homodyne
