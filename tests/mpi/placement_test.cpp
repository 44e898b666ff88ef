// Compute threads are pinned to distinct cores of the rank's CPU set.
#include "homodyne/placement.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "mpi_test_env.h"

namespace homodyne {
namespace {

TEST(Placement, ThreadsArePinnedToDistinctCoresOfTheRankCpuset) {
  const Topology& topology = testing::TestEnvironment().topology();
  const PlacementPlan plan = PlanThreads(topology, 0);
  ASSERT_FALSE(plan.slots.empty());
  EXPECT_EQ(static_cast<int>(plan.slots.size()), topology.process_cores());
  std::vector<int> observed(plan.slots.size(), -2);
  std::vector<char> pinned(plan.slots.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < plan.slots.size(); ++i) {
    threads.emplace_back([&, i] {
      pinned[i] = PinCurrentThread(topology, plan.slots[i]) ? 1 : 0;
      volatile double x = 0;  // run a little so the scheduler places the thread
      for (int k = 0; k < 2000000; ++k) x = x + 1.0;
      observed[i] = CurrentPu(topology);
    });
  }
  for (auto& t : threads) t.join();
  std::set<int> distinct;
  for (std::size_t i = 0; i < plan.slots.size(); ++i) {
    EXPECT_TRUE(pinned[i]) << "thread " << i;
    EXPECT_EQ(observed[i], plan.slots[i].pu_os) << "thread " << i << " ran elsewhere";
    distinct.insert(observed[i]);
  }
  EXPECT_EQ(distinct.size(), plan.slots.size());
  EXPECT_FALSE(plan.Describe().empty());
}

TEST(Placement, RequestedThreadsAreCappedAtTheCoreCount) {
  const Topology& topology = testing::TestEnvironment().topology();
  const int cores = topology.process_cores();
  PlacementPlan plan = PlanThreads(topology, cores + 3);
  EXPECT_EQ(static_cast<int>(plan.slots.size()), cores);
  EXPECT_FALSE(plan.warnings.empty());
  EXPECT_EQ(PlanThreads(topology, 1).slots.size(), 1u);
}

}  // namespace
}  // namespace homodyne
