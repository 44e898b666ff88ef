// Compute threads are pinned to distinct cores of the rank's CPU set.
#include "core/placement.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <set>
#include <stdexcept>
#include <thread>

#include "model/kernel.h"
#include "mpi_test_env.h"
#include "parallel/placement_report.h"

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

// Spins long enough for the scheduler to have placed the thread, then asks hwloc where it
// runs.
int PuAfterSpinning(const Topology& topology) {
  volatile double x = 0;
  for (int k = 0; k < 2000000; ++k) x = x + 1.0;
  return CurrentPu(topology);
}

// The model kernel's own worker threads, pinned through KernelOptions::worker_start the way
// the homodyne driver does it, run on distinct PUs of the rank's CPU set.
TEST(Placement, KernelWorkerThreadsRunOnDistinctPusOfTheRankCpuset) {
  const Topology& topology = testing::TestEnvironment().topology();
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  const PlacementPlan plan = PlanThreads(topology, 0);
  const int n = static_cast<int>(plan.slots.size());
  ASSERT_GE(n, 1);

  std::vector<double> t = {0.1, 0.2, 0.3, 0.4};
  std::vector<double> data(3, 1.0);
  std::vector<model::RowTile> tiles;
  for (int row = 0; row < 3; ++row) tiles.push_back({0, row, row + 1, 3 - row, data.data()});
  model::KernelOptions ko;
  ko.threads = n;
  std::vector<int> hooked(static_cast<std::size_t>(n), 0);
  ko.worker_start = [&](int index) {
    hooked[static_cast<std::size_t>(index)] = 1;
    if (!PinCurrentThread(topology, plan.slots.at(static_cast<std::size_t>(index)))) {
      throw std::runtime_error("pinning failed");
    }
  };
  ASSERT_TRUE(PinCurrentThread(topology, plan.slots[0]));  // the caller is thread 0
  {
    model::ModelKernel kernel(model::AnalysisMode::kStatic, {0.01, 2e6, 0.1}, t, {0.0}, tiles, ko);
    std::vector<int> observed(static_cast<std::size_t>(n), -2);
    kernel.OnEachThread(
        [&](int index) { observed[static_cast<std::size_t>(index)] = PuAfterSpinning(topology); });
    std::set<int> distinct;
    for (int i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (i > 0) {
        EXPECT_TRUE(hooked[u]) << "worker " << i << " never ran its start hook";
      }
      EXPECT_EQ(observed[u], plan.slots[u].pu_os) << "thread " << i << " ran elsewhere";
      ASSERT_GE(observed[u], 0);
      EXPECT_TRUE(CPU_ISSET(static_cast<unsigned>(observed[u]), &original))
          << "PU " << observed[u] << " is outside the rank's CPU set";
      distinct.insert(observed[u]);
    }
    EXPECT_EQ(static_cast<int>(distinct.size()), n);
    // The kernel still computes (on its pinned threads).
    EXPECT_TRUE(std::isfinite(kernel.Chi2(std::vector<double>{0.5, 1.0, 1e3, 0.0, 0.0})));
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);  // unpin the test thread
}

// Every rank sees every rank's placement; under mpiexec's default binding the ranks of
// this host do not share cores.
TEST(Placement, GatheredPlacementListsEveryRank) {
  const auto& env = testing::TestEnvironment();
  const PlacementPlan plan = PlanThreads(env.topology(), 0);
  const auto all = GatherPlacements(env.world(), plan);
  ASSERT_EQ(static_cast<int>(all.size()), env.world().size());
  const auto& mine = all[static_cast<std::size_t>(env.world().rank())];
  EXPECT_EQ(mine.rank, env.world().rank());
  EXPECT_EQ(mine.plan.cpuset, plan.cpuset);
  ASSERT_EQ(mine.plan.slots.size(), plan.slots.size());
  for (std::size_t i = 0; i < plan.slots.size(); ++i) {
    EXPECT_EQ(mine.plan.slots[i].pu_os, plan.slots[i].pu_os);
  }
  const std::string line = DescribeRankPlacement(mine);
  EXPECT_NE(line.find(fmt::format("rank {}", mine.rank)), std::string::npos) << line;
  EXPECT_NE(line.find("NUMA"), std::string::npos) << line;
  // Two copies of one rank on one host share cores by construction.
  EXPECT_TRUE(RanksShareCores({mine, mine}));
  RankPlacement elsewhere = mine;
  elsewhere.host += "-other";
  EXPECT_FALSE(RanksShareCores({mine, elsewhere}));
}

// A lone rank on one of a host's cores is told the line that gives it all of them; ranks
// that cover every core (or another host's ranks) are not.
TEST(PlacementReport, IdleCoresAreNamedWithTheLineThatUsesThem) {
  RankPlacement one{0, "nodeA", {}};
  one.plan.slots = {{0, 0, 0}};
  const std::string note = IdleCoresNote({one}, "nodeA", 4);
  EXPECT_NE(note.find("1 of its 4 cores"), std::string::npos) << note;
  EXPECT_NE(note.find("mpiexec -n 1 --map-by slot:PE=4 --bind-to core"), std::string::npos) << note;
  EXPECT_NE(note.find("--threads 4"), std::string::npos) << note;
  RankPlacement two{1, "nodeA", {}};
  two.plan.slots = {{1, 1, 0}};
  EXPECT_NE(IdleCoresNote({one, two}, "nodeA", 4).find("mpiexec -n 2 --map-by slot:PE=2"),
            std::string::npos);
  EXPECT_EQ(IdleCoresNote({one, two}, "nodeA", 2), "");
  EXPECT_EQ(IdleCoresNote({one}, "nodeB", 4), "");
}

}  // namespace
}  // namespace homodyne
