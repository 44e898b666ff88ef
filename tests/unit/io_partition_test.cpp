// PartitionPlan: exact coverage of the fitted upper-triangle points, balance, determinism
// and the encode/decode round trip (single process; the MPI broadcast is in tests/mpi).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/errors.h"
#include "parallel/partition.h"

namespace homodyne {
namespace {

using Point = std::tuple<int, std::int64_t, std::int64_t>;

// All points (k, i, j), first <= i < j <= last, in plan order (block → angle → row →
// column), enumerated naively from the plan's block rows.
std::vector<Point> AllPoints(const PartitionPlan& plan) {
  std::vector<Point> out;
  for (int b = 0; b < plan.n_blocks(); ++b) {
    for (int k = 0; k < plan.n_angles(); ++k) {
      for (std::int64_t i = plan.block_row_begin(b); i < plan.block_row_end(b); ++i) {
        for (std::int64_t j = i + 1; j <= plan.last(); ++j) out.emplace_back(k, i, j);
      }
    }
  }
  return out;
}

// Every point of every triangle, in any order.
std::set<Point> PointSet(int n_angles, std::int64_t first, std::int64_t last) {
  std::set<Point> out;
  for (int k = 0; k < n_angles; ++k) {
    for (std::int64_t i = first; i <= last; ++i) {
      for (std::int64_t j = i + 1; j <= last; ++j) out.emplace(k, i, j);
    }
  }
  return out;
}

TEST(PartitionPlan, TilesCoverEveryPointOnceInOrder) {
  for (int n_angles : {1, 3}) {
    for (std::int64_t n : {2, 3, 17, 60}) {
      for (int ranks : {1, 2, 3, 5, 8, 64}) {
        const PartitionPlan plan(n_angles, 1, n - 1, ranks, 5);
        const std::vector<Point> expected = AllPoints(plan);
        ASSERT_EQ(std::set<Point>(expected.begin(), expected.end()), PointSet(n_angles, 1, n - 1));
        ASSERT_EQ(plan.total_points(), static_cast<std::int64_t>(expected.size()));
        std::vector<Point> got;
        for (int r = 0; r < ranks; ++r) {
          std::int64_t count = 0;
          for (const RowTile& t : plan.TilesFor(r)) {
            ASSERT_GE(t.count, 1);
            ASSERT_GT(t.col_begin, t.row);
            ASSERT_LE(t.col_begin + t.count - 1, n - 1);
            for (std::int64_t c = 0; c < t.count; ++c)
              got.emplace_back(t.angle, t.row, t.col_begin + c);
            count += t.count;
          }
          ASSERT_EQ(count, plan.points(r));
        }
        ASSERT_EQ(got, expected) << n_angles << " angles, N=" << n << ", P=" << ranks;
      }
    }
  }
}

TEST(PartitionPlan, PointCountsDifferByAtMostOneBlock) {
  const PartitionPlan plan(7, 1, 999, 13);
  std::int64_t lo = plan.points(0);
  std::int64_t hi = lo;
  std::int64_t largest_block = 0;
  for (int b = 0; b < plan.n_blocks(); ++b)
    largest_block = std::max(largest_block, plan.block_points(b));
  for (int r = 1; r < plan.n_ranks(); ++r) {
    lo = std::min(lo, plan.points(r));
    hi = std::max(hi, plan.points(r));
  }
  EXPECT_LE(hi - lo, largest_block);
  EXPECT_LT(static_cast<double>(hi - lo), 0.05 * static_cast<double>(hi));
  EXPECT_EQ(plan.total_points(), 7LL * 999 * 998 / 2);
}

// The blocks (the leaves of the reproducible reduction) do not depend on the rank count.
TEST(PartitionPlan, BlocksAreIndependentOfTheRankCount) {
  const PartitionPlan one(5, 1, 499, 1);
  for (int ranks : {2, 3, 7, 64}) {
    const PartitionPlan many(5, 1, 499, ranks);
    ASSERT_EQ(many.n_blocks(), one.n_blocks());
    for (int b = 0; b < one.n_blocks(); ++b) {
      EXPECT_EQ(many.BlockTiles(b), one.BlockTiles(b));
    }
    EXPECT_EQ(many.first_block(0), 0);
    EXPECT_EQ(many.end_block(ranks - 1), one.n_blocks());
  }
  EXPECT_LE(one.n_blocks(), 4096);
}

TEST(PartitionPlan, LocateMatchesNaiveEnumeration) {
  const PartitionPlan plan(2, 1, 40, 1, 30);
  ASSERT_GT(plan.n_blocks(), 3);
  const std::vector<Point> all = AllPoints(plan);
  for (std::size_t g = 0; g < all.size(); ++g) {
    const RowTile t = plan.Locate(static_cast<std::int64_t>(g));
    ASSERT_EQ(Point(t.angle, t.row, t.col_begin), all[g]) << g;
  }
}

TEST(PartitionPlan, DeterministicAndEncodesLosslessly) {
  const PartitionPlan a(4, 1, 349, 6);
  const PartitionPlan b(4, 1, 349, 6);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Table(), b.Table());
  const PartitionPlan c = PartitionPlan::Decode(a.Encode());
  EXPECT_EQ(c, a);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(c.TilesFor(r), a.TilesFor(r));
  std::vector<std::int64_t> bad = a.Encode();
  bad.back() += 1;
  EXPECT_THROW(PartitionPlan::Decode(bad), Error);
}

TEST(PartitionPlan, TableNamesEveryRank) {
  const PartitionPlan plan(1, 1, 4, 3, 1);  // 6 points in rows of 3, 2, 1
  const std::string table = plan.Table();
  EXPECT_THAT(table, ::testing::HasSubstr("6 points in 3 block(s) over 3 rank(s)"));
  EXPECT_THAT(table, ::testing::HasSubstr("(0,1,2)"));  // rank 0 starts at row 1, col 2
  EXPECT_THAT(table, ::testing::HasSubstr("(0,3,4)"));  // the last point
  const PartitionPlan empty(2, 1, 1, 2);                // N = 2: no point with i < j
  EXPECT_EQ(empty.total_points(), 0);
  EXPECT_TRUE(empty.TilesFor(1).empty());
}

}  // namespace
}  // namespace homodyne
