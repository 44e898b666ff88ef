#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "model/thread_pool.h"

namespace homodyne::model {
namespace {

TEST(ThreadPoolTest, RunsEveryIndexExactlyOnceAcrossRepeatedCalls) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int round = 0; round < 50; ++round) {
      const int n = 1 + (round * 7) % 37;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.ParallelFor(n, [&](int index) { hits[static_cast<size_t>(index)]++; });
      for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
    pool.ParallelFor(0, [](int) { FAIL(); });
  }
}

TEST(ThreadPoolTest, PropagatesTheFirstExceptionAndStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.ParallelFor(100,
                                [](int index) {
                                  if (index == 13) throw std::runtime_error("task 13 failed");
                                }),
               std::runtime_error);
  std::atomic<int> count{0};
  pool.ParallelFor(10, [&](int) { count++; });
  EXPECT_EQ(count.load(), 10);
  EXPECT_THROW(ThreadPool(0), Error);
}

TEST(ThreadPoolTest, StartHookRunsOnceInEachWorkerBeforeConstructionReturns) {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> started(static_cast<size_t>(threads));
    std::vector<std::thread::id> ids(static_cast<size_t>(threads));
    ThreadPool pool(threads, [&](int index) {
      ASSERT_GE(index, 1);
      ASSERT_LT(index, threads);
      ids[static_cast<size_t>(index)] = std::this_thread::get_id();
      started[static_cast<size_t>(index)]++;
    });
    // All hooks have run when the constructor returns; the caller (index 0) is not hooked.
    EXPECT_EQ(started[0].load(), 0);
    for (int i = 1; i < threads; ++i) EXPECT_EQ(started[static_cast<size_t>(i)].load(), 1);
    // OnEachThread visits every thread once, the workers being the hooked threads.
    for (int round = 0; round < 20; ++round) {
      pool.ParallelFor(5, [](int) {});
      std::vector<std::atomic<int>> seen(static_cast<size_t>(threads));
      std::vector<std::thread::id> where(static_cast<size_t>(threads));
      pool.OnEachThread([&](int index) {
        seen[static_cast<size_t>(index)]++;
        where[static_cast<size_t>(index)] = std::this_thread::get_id();
      });
      EXPECT_EQ(where[0], std::this_thread::get_id());
      for (int i = 0; i < threads; ++i) {
        EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "thread " << i;
        if (i > 0) {
          EXPECT_EQ(where[static_cast<size_t>(i)], ids[static_cast<size_t>(i)]);
        }
      }
    }
  }
}

TEST(ThreadPoolTest, FailingStartHookFailsConstructionAndOnEachThreadRethrows) {
  EXPECT_THROW(ThreadPool(3,
                          [](int index) {
                            if (index == 2) throw std::runtime_error("cannot pin");
                          }),
               std::runtime_error);
  ThreadPool pool(2);
  EXPECT_THROW(pool.OnEachThread([](int index) {
    if (index == 1) throw std::runtime_error("worker failed");
  }),
               std::runtime_error);
  std::atomic<int> count{0};
  pool.ParallelFor(10, [&](int) { count++; });
  EXPECT_EQ(count.load(), 10);
}

}  // namespace
}  // namespace homodyne::model
