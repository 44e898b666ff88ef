#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "homodyne/error.h"
#include "homodyne/model/thread_pool.h"

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

}  // namespace
}  // namespace homodyne::model
