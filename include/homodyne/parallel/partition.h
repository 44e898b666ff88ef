// Deterministic partition of the fitted two-time points over MPI ranks.
//
// The fit uses, for every kept angle k, the strictly upper triangle of the matrix on
// the index range [first, last] (loader indices; the CLI fit uses first = 1,
// last = N-1, i.e. t = 0 excluded): points (k, i, j) with first <= i < j <= last.
// Points are ordered angle-major, then row, then column; rank r owns the contiguous
// range of global point indices [floor(T·r/P), floor(T·(r+1)/P)) of the T points. A
// row may therefore be split between two ranks at a column boundary; every rank owns
// floor(T/P) or ceil(T/P) points (max - min <= 1). A rank's share is a list of row
// tiles (angle, row, first column, column count).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "homodyne/parallel/comm.h"

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
  PartitionPlan(std::int32_t n_angles, std::int64_t first, std::int64_t last, int n_ranks);

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

  // (angle, row, col) of a global point index in [0, total_points()).
  RowTile Locate(std::int64_t point) const;  // count = 1
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
  std::vector<std::int64_t> bounds_;  // n_ranks + 1 boundaries
};

// Broadcasts `plan` from `root` to every rank of `comm` (collective).
PartitionPlan BroadcastPartitionPlan(const Comm& comm, const PartitionPlan& plan, int root = 0);

}  // namespace homodyne
