#include "parallel/partition.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {
namespace {

constexpr std::int64_t kPlanTag = 0x504c4232;  // "PLB2"
constexpr std::int64_t kMaxBlocks = 4096;

}  // namespace

std::int64_t PartitionPlan::RowsPoints(std::int64_t a, std::int64_t b) const {
  // Row i holds last − i points: Σ_{i=a}^{b−1} (last − i).
  const std::int64_t u = b - a;
  return u <= 0 ? 0 : u * (last_ - a) - u * (u - 1) / 2;
}

PartitionPlan::PartitionPlan(std::int32_t n_angles, std::int64_t first, std::int64_t last,
                             int n_ranks, std::int64_t block_target)
    : n_angles_(n_angles), first_(first), last_(last) {
  HOMODYNE_CHECK(n_angles >= 0, "negative angle count");
  HOMODYNE_CHECK(n_ranks >= 1, "need at least one rank");
  HOMODYNE_CHECK(first >= 0, "negative first index");
  if (last_ < first_) last_ = first_ - 1;  // empty triangle
  const std::int64_t total = static_cast<std::int64_t>(n_angles_) * points_per_angle();
  if (block_target <= 0) block_target = std::max<std::int64_t>(1, total / kMaxBlocks);

  // Blocks of whole rows (rows with points only: i < last).
  block_rows_.push_back(first_);
  std::int64_t in_block = 0;
  for (std::int64_t i = first_; i < last_; ++i) {
    in_block += static_cast<std::int64_t>(n_angles_) * (last_ - i);
    if (in_block >= block_target) {
      block_rows_.push_back(i + 1);
      in_block = 0;
    }
  }
  if (block_rows_.size() == 1 || block_rows_.back() != std::max(first_, last_)) {
    if (last_ > first_) block_rows_.push_back(last_);
  }
  if (block_rows_.size() == 1) block_rows_.push_back(first_);  // no points: one empty block

  // Rank r starts at the block boundary nearest to floor(T·r/P) (never before rank r−1's).
  rank_blocks_.assign(static_cast<std::size_t>(n_ranks) + 1, n_blocks());
  rank_blocks_[0] = 0;
  int b = 0;
  for (int r = 1; r < n_ranks; ++r) {
    const std::int64_t q = total / n_ranks;
    const std::int64_t s = total % n_ranks;
    const std::int64_t target = q * r + (s * r) / n_ranks;
    while (b < n_blocks() && block_first_point(b) < target) ++b;
    int pick = b;
    if (b > rank_blocks_[static_cast<std::size_t>(r) - 1] &&
        target - block_first_point(b - 1) < block_first_point(b) - target) {
      pick = b - 1;
    }
    rank_blocks_[static_cast<std::size_t>(r)] = pick;
    b = pick;
  }
  DeriveBounds();
}

void PartitionPlan::DeriveBounds() {
  bounds_.clear();
  for (int blk : rank_blocks_) bounds_.push_back(block_first_point(blk));
}

std::int64_t PartitionPlan::block_first_point(int b) const {
  return static_cast<std::int64_t>(n_angles_) *
         RowsPoints(first_, block_rows_.at(static_cast<std::size_t>(b)));
}

std::int64_t PartitionPlan::points_per_angle() const {
  const std::int64_t m = last_ - first_ + 1;
  return m >= 2 ? m * (m - 1) / 2 : 0;
}

RowTile PartitionPlan::Locate(std::int64_t point) const {
  HOMODYNE_CHECK(point >= 0 && point < total_points(), "point index out of range");
  // The block: last b with block_first_point(b) <= point.
  int lo = 0;
  int hi = n_blocks() - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (block_first_point(mid) <= point) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const std::int64_t r0 = block_row_begin(lo);
  const std::int64_t r1 = block_row_end(lo);
  const std::int64_t per_angle = RowsPoints(r0, r1);
  const std::int64_t p = point - block_first_point(lo);
  RowTile t;
  t.angle = static_cast<std::int32_t>(p / per_angle);
  const std::int64_t q = p % per_angle;
  // Row: largest u with RowsPoints(r0, r0 + u) <= q.
  std::int64_t a = 0;
  std::int64_t c = r1 - r0 - 1;
  while (a < c) {
    const std::int64_t mid = (a + c + 1) / 2;
    if (RowsPoints(r0, r0 + mid) <= q) {
      a = mid;
    } else {
      c = mid - 1;
    }
  }
  t.row = r0 + a;
  t.col_begin = t.row + 1 + (q - RowsPoints(r0, t.row));
  t.count = 1;
  return t;
}

std::vector<RowTile> PartitionPlan::BlockTiles(int block) const {
  std::vector<RowTile> tiles;
  for (std::int32_t k = 0; k < n_angles_; ++k) {
    for (std::int64_t i = block_row_begin(block); i < block_row_end(block); ++i) {
      if (last_ - i > 0) tiles.push_back({k, i, i + 1, last_ - i});
    }
  }
  return tiles;
}

std::vector<RowTile> PartitionPlan::TilesFor(int rank) const {
  std::vector<RowTile> tiles;
  for (int b = first_block(rank); b < end_block(rank); ++b) {
    const auto bt = BlockTiles(b);
    tiles.insert(tiles.end(), bt.begin(), bt.end());
  }
  return tiles;
}

std::string PartitionPlan::Table() const {
  std::string out = fmt::format(
      "partition: {} angle(s), rows/cols {}..{}, {} points in {} block(s) over {} rank(s)\n",
      n_angles_, first_, last_, total_points(), n_blocks(), n_ranks());
  out += fmt::format("{:>6} {:>14} {:>14}  {:<24} {:<24}\n", "rank", "points", "blocks",
                     "first (angle,row,col)", "last (angle,row,col)");
  for (int r = 0; r < n_ranks(); ++r) {
    const std::string blocks = fmt::format("{}..{}", first_block(r), end_block(r) - 1);
    if (points(r) == 0) {
      out += fmt::format("{:>6} {:>14} {:>14}  {:<24} {:<24}\n", r, 0, "-", "-", "-");
      continue;
    }
    const RowTile a = Locate(begin(r));
    const RowTile b = Locate(end(r) - 1);
    out += fmt::format("{:>6} {:>14} {:>14}  {:<24} {:<24}\n", r, points(r), blocks,
                       fmt::format("({},{},{})", a.angle, a.row, a.col_begin),
                       fmt::format("({},{},{})", b.angle, b.row, b.col_begin));
  }
  return out;
}

std::vector<std::int64_t> PartitionPlan::Encode() const {
  std::vector<std::int64_t> data = {kPlanTag,
                                    n_angles_,
                                    first_,
                                    last_,
                                    static_cast<std::int64_t>(block_rows_.size()),
                                    static_cast<std::int64_t>(rank_blocks_.size())};
  data.insert(data.end(), block_rows_.begin(), block_rows_.end());
  data.insert(data.end(), rank_blocks_.begin(), rank_blocks_.end());
  return data;
}

PartitionPlan PartitionPlan::Decode(std::span<const std::int64_t> data) {
  if (data.size() < 6 || data[0] != kPlanTag || data[4] < 2 || data[5] < 2 ||
      data.size() != 6 + static_cast<std::size_t>(data[4] + data[5])) {
    ThrowInternal("corrupt partition plan encoding");
  }
  PartitionPlan plan;
  plan.n_angles_ = static_cast<std::int32_t>(data[1]);
  plan.first_ = data[2];
  plan.last_ = data[3];
  const auto nb = static_cast<std::size_t>(data[4]);
  plan.block_rows_.assign(data.begin() + 6, data.begin() + 6 + static_cast<long>(nb));
  for (auto it = data.begin() + 6 + static_cast<long>(nb); it != data.end(); ++it) {
    plan.rank_blocks_.push_back(static_cast<int>(*it));
  }
  const bool rows_ok = std::is_sorted(plan.block_rows_.begin(), plan.block_rows_.end()) &&
                       plan.block_rows_.front() == plan.first_;
  const bool ranks_ok = std::is_sorted(plan.rank_blocks_.begin(), plan.rank_blocks_.end()) &&
                        plan.rank_blocks_.front() == 0 &&
                        plan.rank_blocks_.back() == plan.n_blocks();
  if (!rows_ok || !ranks_ok) ThrowInternal("inconsistent partition plan encoding");
  plan.DeriveBounds();
  if (plan.bounds_.back() != static_cast<std::int64_t>(plan.n_angles_) * plan.points_per_angle()) {
    ThrowInternal("inconsistent partition plan encoding");
  }
  return plan;
}

PartitionPlan BroadcastPartitionPlan(const Comm& comm, const PartitionPlan& plan, int root) {
  std::vector<std::int64_t> data;
  std::int64_t size = 0;
  if (comm.rank() == root) {
    data = plan.Encode();
    size = static_cast<std::int64_t>(data.size());
  }
  MPI_Bcast(&size, 1, MPI_INT64_T, root, comm.get());
  data.resize(static_cast<std::size_t>(size));
  MPI_Bcast(data.data(), static_cast<int>(size), MPI_INT64_T, root, comm.get());
  return comm.rank() == root ? plan : PartitionPlan::Decode(data);
}

}  // namespace homodyne
