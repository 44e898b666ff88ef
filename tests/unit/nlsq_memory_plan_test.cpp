// The memory budget, the in-core/streaming decision and the parsing of --memory-limit /
// --strategy (nlsq/memory_plan.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>

#include "core/errors.h"
#include "nlsq/memory_plan.h"
#include "nlsq/row_subsets.h"

namespace homodyne::nlsq {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kGiB = 1024 * kMiB;

TEST(MemoryPlan, ParsesSizes) {
  EXPECT_EQ(ParseMemorySize("2G", "--memory-limit"), 2 * kGiB);
  EXPECT_EQ(ParseMemorySize("512M", "--memory-limit"), 512 * kMiB);
  EXPECT_EQ(ParseMemorySize("512m", "--memory-limit"), 512 * kMiB);
  EXPECT_EQ(ParseMemorySize("1.5GiB", "--memory-limit"), 3 * kGiB / 2);
  EXPECT_EQ(ParseMemorySize("64k", "--memory-limit"), 64u * 1024);
  EXPECT_EQ(ParseMemorySize("64KB", "--memory-limit"), 64u * 1024);
  EXPECT_EQ(ParseMemorySize("1T", "--memory-limit"), 1024 * kGiB);
  EXPECT_EQ(ParseMemorySize("1000000", "--memory-limit"), 1000000u);
  EXPECT_EQ(ParseMemorySize("100b", "--memory-limit"), 100u);
}

TEST(MemoryPlan, RejectsBadSizesNamingTheOption) {
  for (const std::string bad :
       {"", "G", "abc", "2X", "-1G", "0", "0.0M", "1.2.3G", "2 Gigs", "2GB extra", "1e3M"}) {
    try {
      ParseMemorySize(bad, "--memory-limit");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("--memory-limit"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(MemoryPlan, ParsesStrategies) {
  EXPECT_EQ(ParseFitStrategy("auto", "--strategy"), FitStrategy::kAuto);
  EXPECT_EQ(ParseFitStrategy("in-core", "--strategy"), FitStrategy::kInCore);
  EXPECT_EQ(ParseFitStrategy("in_core", "--strategy"), FitStrategy::kInCore);
  EXPECT_EQ(ParseFitStrategy("Streaming", "--strategy"), FitStrategy::kStreaming);
  EXPECT_THROW(ParseFitStrategy("chunked", "--strategy"), Error);
  for (auto s : {FitStrategy::kAuto, FitStrategy::kInCore, FitStrategy::kStreaming}) {
    EXPECT_EQ(ParseFitStrategy(ToString(s), "x"), s);
  }
}

TEST(MemoryPlan, BudgetSources) {
  NodeMemory node{64 * kGiB, 4};
  MemoryBudgetOptions o;
  ::unsetenv("NLSQ_MEMORY_FRACTION");
  // Fraction of the node's RAM shared by its ranks, clamped to [0.1, 0.9].
  o.memory_fraction = 0.5;
  EXPECT_EQ(ResolveBudget(o, node).bytes, 8 * kGiB);
  o.memory_fraction = 2.0;
  EXPECT_EQ(ResolveBudget(o, node).bytes, static_cast<std::uint64_t>(0.9 * 64 * kGiB / 4));
  o.memory_fraction = 0.0;
  EXPECT_EQ(ResolveBudget(o, node).bytes, static_cast<std::uint64_t>(0.1 * 64 * kGiB / 4));
  // A per-node threshold overrides the fraction; --memory-limit (per rank) overrides both.
  o.memory_threshold_gb = 16.0;
  EXPECT_EQ(ResolveBudget(o, node).bytes, 4 * kGiB);
  o.limit_bytes = 3 * kGiB;
  EXPECT_EQ(ResolveBudget(o, node).bytes, 3 * kGiB);
  EXPECT_NE(ResolveBudget(o, node).source.find("--memory-limit"), std::string::npos);
  // Unknown RAM: 16 GiB per node.
  MemoryBudgetOptions d;
  EXPECT_EQ(ResolveBudget(d, NodeMemory{0, 2}).bytes, 8 * kGiB);
}

FitShape Shape(std::int64_t points) {
  FitShape s;
  s.n_angles = 4;
  s.n_frames = 4000;
  s.local_points = points;
  s.local_tiles = 4 * 2000;
  s.local_blocks = 1000;
  s.max_block_points = points / 1000 + 1;
  s.threads = 4;
  s.baseline_bytes = 100 * kMiB;
  return s;
}

TEST(MemoryPlan, InCoreEstimateCountsDataAndWorkspace) {
  const FitShape s = Shape(100'000'000);
  const MemoryEstimate e = EstimateInCore(s);
  EXPECT_EQ(e.data, 800'000'000u);
  EXPECT_EQ(e.baseline, 100 * kMiB);
  EXPECT_GT(e.read_buffers, 0u);
  EXPECT_GT(e.workspace, 0u);
  EXPECT_EQ(e.total(), e.data + e.read_buffers + e.workspace + e.baseline);
  // More data, more memory.
  EXPECT_GT(EstimateInCore(Shape(200'000'000)).total(), e.total());
}

TEST(MemoryPlan, AutoPicksInCoreWhenItFitsElseStreamsWithinTheBudget) {
  const FitShape s = Shape(100'000'000);
  const std::uint64_t need = EstimateInCore(s).total();
  const MemoryPlan fits = PlanMemory(FitStrategy::kAuto, {need, "test"}, s);
  EXPECT_EQ(fits.strategy, FitStrategy::kInCore);
  EXPECT_EQ(fits.window_points, s.local_points);

  const MemoryBudget small{need / 4, "test"};
  const MemoryPlan streams = PlanMemory(FitStrategy::kAuto, small, s);
  EXPECT_EQ(streams.strategy, FitStrategy::kStreaming);
  EXPECT_LE(streams.streaming.total(), small.bytes);
  EXPECT_GE(streams.window_points, s.max_block_points);
  EXPECT_LT(streams.window_points, s.local_points);
  // The largest such window: one more point would not fit.
  EXPECT_GT(EstimateStreaming(s, streams.window_points + 1).total(), small.bytes);
  EXPECT_NE(streams.reason.find("streaming"), std::string::npos);

  // The streaming estimate does not grow with the dataset at a fixed budget.
  const MemoryPlan bigger = PlanMemory(FitStrategy::kAuto, small, Shape(1'000'000'000));
  EXPECT_EQ(bigger.strategy, FitStrategy::kStreaming);
  EXPECT_LE(bigger.streaming.total(), small.bytes);
}

// The row subsets the global stages screen on: the stride, their points counted pair by pair,
// and the streaming estimate holding them (a streamed fit keeps them in memory once read).
TEST(MemoryPlan, StreamingCountsTheRowSubsetsItKeeps) {
  EXPECT_EQ(RowSubsetStride(100'000, 1000, 200'000), 1);    // small enough: every row
  EXPECT_EQ(RowSubsetStride(100'000, 1000, 0), 1);          // 0: every point
  EXPECT_EQ(RowSubsetStride(1'000'000, 1000, 200'000), 5);  // ⌈10⁶ / 2·10⁵⌉
  // At least kMinRowSubsetRows rows per angle however large the data.
  EXPECT_EQ(RowSubsetStride(287'000'000, 5000, 200'000), 5000 / kMinRowSubsetRows);
  // 2 angles × 10 frames, rows 0, 3, 6 (row 9 has no pair): 9 + 6 + 3 pairs per angle.
  std::int64_t pairs = 0;
  for (int row = 0; row < 9; row += 3) pairs += 9 - row;
  EXPECT_EQ(RowSubsetPoints(2, 10, 3), 2 * pairs);
  EXPECT_EQ(RowSubsetPoints(2, 10, 1), 2 * 45);  // every pair i < j

  FitShape s = Shape(100'000'000);
  const std::uint64_t without = EstimateStreaming(s, 1'000'000).workspace;
  s.row_subset_points = 500'000;
  EXPECT_GE(EstimateStreaming(s, 1'000'000).workspace, without + 8 * 500'000u);
}

TEST(MemoryPlan, ForcedStrategies) {
  const FitShape s = Shape(1'000'000);
  const MemoryBudget huge{1024 * kGiB, "test"};
  EXPECT_EQ(PlanMemory(FitStrategy::kStreaming, huge, s).strategy, FitStrategy::kStreaming);
  // Streaming with room for everything: one window of all points.
  EXPECT_EQ(PlanMemory(FitStrategy::kStreaming, huge, s).window_points, s.local_points);
  const MemoryBudget tiny{1 * kMiB, "test"};
  const MemoryPlan forced = PlanMemory(FitStrategy::kInCore, tiny, s);
  EXPECT_EQ(forced.strategy, FitStrategy::kInCore);
  EXPECT_NE(forced.reason.find("EXCEEDS"), std::string::npos);
  // Below the smallest window: one block per window, flagged as over budget.
  const MemoryPlan over = PlanMemory(FitStrategy::kAuto, tiny, s);
  EXPECT_EQ(over.strategy, FitStrategy::kStreaming);
  EXPECT_EQ(over.window_points, s.max_block_points);
  EXPECT_NE(over.reason.find("over budget"), std::string::npos);
}

TEST(MemoryPlan, WindowsAreRunsOfWholeBlocks) {
  const std::vector<std::int64_t> blocks = {5, 5, 5, 12, 3, 3, 3, 1};
  const std::vector<int> w = WindowStarts(blocks, 10);
  EXPECT_EQ(w, (std::vector<int>{0, 2, 3, 4}));
  // Every window within the limit unless a single block is larger; all blocks covered.
  for (std::size_t i = 0; i < w.size(); ++i) {
    const int end = i + 1 < w.size() ? w[i + 1] : static_cast<int>(blocks.size());
    const std::int64_t pts = std::accumulate(blocks.begin() + w[i], blocks.begin() + end, 0LL);
    EXPECT_TRUE(pts <= 10 || end - w[i] == 1) << i;
  }
  EXPECT_EQ(WindowStarts(blocks, 1000), (std::vector<int>{0}));
  EXPECT_TRUE(WindowStarts({}, 10).empty());
}

TEST(MemoryPlan, FormatsBytes) {
  EXPECT_EQ(FormatBytes(3 * kGiB / 2), "1.50 GiB");
  EXPECT_EQ(FormatBytes(512 * kMiB), "512.0 MiB");
}

}  // namespace
}  // namespace homodyne::nlsq
