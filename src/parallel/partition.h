// Deterministic partition of the fitted two-time points over MPI ranks.
//
// The fit uses, for every kept angle k, the strictly upper triangle of the matrix on
// the index range [first, last] (loader indices; the CLI fit uses first = 1,
// last = N-1, i.e. t = 0 excluded): points (k, i, j) with first <= i < j <= last.
//
// The points are cut into *blocks* that do not depend on the number of ranks: a block
// is a run of whole rows [row_begin, row_end) taken over every angle, closed once it
// holds at least `block_target` points (default: total/4096, so ≤ ~4096 blocks). Blocks
// are the leaves of the reproducible reduction (ReproducibleTileSum), which makes the
// fit's sums bitwise independent of the rank count, and a block holds the same rows of
// every angle, so the kernel shares the angle-independent work across angles.
// Points are ordered block → angle → row → column; rank r owns the contiguous run of
// blocks whose first point lies in [T·r/P, T·(r+1)/P), so point counts differ by at most
// one block. More ranks than blocks leaves some ranks idle (they still take part).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parallel/comm.h"

namespace homodyne {

// A run of consecutive points in one row: (angle, row, col_begin .. col_begin+count-1).
struct RowTile {
  std::int32_t angle = 0;
  std::int64_t row = 0;
  std::int64_t col_begin = 0;
  std::int64_t count = 0;
  bool operator==(const RowTile&) const = default;
};

class PartitionPlan {
 public:
  PartitionPlan() = default;
  // Splits the points of `n_angles` upper triangles on [first, last] over `n_ranks`.
  // block_target ≤ 0 chooses max(1, total/4096) points per block.
  PartitionPlan(std::int32_t n_angles, std::int64_t first, std::int64_t last, int n_ranks,
                std::int64_t block_target = 0);

  std::int32_t n_angles() const { return n_angles_; }
  std::int64_t first() const { return first_; }
  std::int64_t last() const { return last_; }
  int n_ranks() const { return static_cast<int>(bounds_.size()) - 1; }
  std::int64_t total_points() const { return bounds_.empty() ? 0 : bounds_.back(); }
  std::int64_t points_per_angle() const;
  // Global point indices [begin, end) owned by `rank`.
  std::int64_t begin(int rank) const { return bounds_.at(static_cast<std::size_t>(rank)); }
  std::int64_t end(int rank) const { return bounds_.at(static_cast<std::size_t>(rank) + 1); }
  std::int64_t points(int rank) const { return end(rank) - begin(rank); }

  // Blocks: rows [block_row_begin(b), block_row_end(b)) of every angle.
  int n_blocks() const { return static_cast<int>(block_rows_.size()) - 1; }
  std::int64_t block_row_begin(int b) const { return block_rows_.at(static_cast<std::size_t>(b)); }
  std::int64_t block_row_end(int b) const {
    return block_rows_.at(static_cast<std::size_t>(b) + 1);
  }
  std::int64_t block_first_point(int b) const;
  std::int64_t block_points(int b) const { return block_first_point(b + 1) - block_first_point(b); }
  // Blocks [first_block(rank), end_block(rank)) belong to `rank`.
  int first_block(int rank) const { return rank_blocks_.at(static_cast<std::size_t>(rank)); }
  int end_block(int rank) const { return rank_blocks_.at(static_cast<std::size_t>(rank) + 1); }

  // (angle, row, col) of a global point index in [0, total_points()).
  RowTile Locate(std::int64_t point) const;  // count = 1
  // The row tiles of one block (angle-major, then row), each a whole row.
  std::vector<RowTile> BlockTiles(int block) const;
  // The row tiles of `rank` in point order.
  std::vector<RowTile> TilesFor(int rank) const;

  // Human-readable table: rank, points, first and last (angle, row, col).
  std::string Table() const;

  // Flat form for MPI broadcast; Decode validates it.
  std::vector<std::int64_t> Encode() const;
  static PartitionPlan Decode(std::span<const std::int64_t> data);

  bool operator==(const PartitionPlan&) const = default;

 private:
  std::int32_t n_angles_ = 0;
  std::int64_t first_ = 0;
  std::int64_t last_ = -1;
  std::vector<std::int64_t> block_rows_;  // n_blocks + 1 row boundaries
  std::vector<int> rank_blocks_;          // n_ranks + 1 block boundaries
  std::vector<std::int64_t> bounds_;      // n_ranks + 1 point boundaries (derived)

  // Points of one angle in rows [a, b) (columns up to last_).
  std::int64_t RowsPoints(std::int64_t a, std::int64_t b) const;
  void DeriveBounds();
};

// Broadcasts `plan` from `root` to every rank of `comm` (collective).
PartitionPlan BroadcastPartitionPlan(const Comm& comm, const PartitionPlan& plan, int root = 0);

}  // namespace homodyne
