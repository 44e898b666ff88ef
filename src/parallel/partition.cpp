#include "homodyne/parallel/partition.h"

#include <algorithm>

#include <fmt/format.h>

#include "homodyne/error.h"

namespace homodyne {
namespace {

constexpr std::int64_t kPlanTag = 0x504c414e;  // "PLAN"

// Points in rows [first, first + u) of one angle's triangle with side m = last-first+1:
// sum_{v<u} (m - 1 - v) = u(m-1) - u(u-1)/2.
std::int64_t RowPrefix(std::int64_t m, std::int64_t u) { return u * (m - 1) - u * (u - 1) / 2; }

}  // namespace

PartitionPlan::PartitionPlan(std::int32_t n_angles, std::int64_t first, std::int64_t last,
                             int n_ranks)
    : n_angles_(n_angles), first_(first), last_(last) {
  HOMODYNE_CHECK(n_angles >= 0, "negative angle count");
  HOMODYNE_CHECK(n_ranks >= 1, "need at least one rank");
  HOMODYNE_CHECK(first >= 0, "negative first index");
  if (last_ < first_) last_ = first_ - 1;  // empty triangle
  const std::int64_t total = static_cast<std::int64_t>(n_angles_) * points_per_angle();
  bounds_.resize(static_cast<std::size_t>(n_ranks) + 1);
  for (int r = 0; r <= n_ranks; ++r) {
    // floor(total * r / P) without overflow: total = q*P + s.
    const std::int64_t q = total / n_ranks;
    const std::int64_t s = total % n_ranks;
    bounds_[static_cast<std::size_t>(r)] = q * r + (s * r) / n_ranks;
  }
}

std::int64_t PartitionPlan::points_per_angle() const {
  const std::int64_t m = last_ - first_ + 1;
  return m >= 2 ? m * (m - 1) / 2 : 0;
}

RowTile PartitionPlan::Locate(std::int64_t point) const {
  HOMODYNE_CHECK(point >= 0 && point < total_points(), "point index out of range");
  const std::int64_t per_angle = points_per_angle();
  const std::int64_t m = last_ - first_ + 1;
  RowTile t;
  t.angle = static_cast<std::int32_t>(point / per_angle);
  const std::int64_t p = point % per_angle;
  // Largest u with RowPrefix(u) <= p (binary search over rows).
  std::int64_t lo = 0;
  std::int64_t hi = m - 2;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (RowPrefix(m, mid) <= p) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  t.row = first_ + lo;
  t.col_begin = t.row + 1 + (p - RowPrefix(m, lo));
  t.count = 1;
  return t;
}

std::vector<RowTile> PartitionPlan::TilesFor(int rank) const {
  std::vector<RowTile> tiles;
  std::int64_t g = begin(rank);
  const std::int64_t stop = end(rank);
  while (g < stop) {
    RowTile t = Locate(g);
    const std::int64_t row_left = last_ - t.col_begin + 1;  // points left in this row
    t.count = std::min(row_left, stop - g);
    tiles.push_back(t);
    g += t.count;
  }
  return tiles;
}

std::string PartitionPlan::Table() const {
  std::string out =
      fmt::format("partition: {} angle(s), rows/cols {}..{}, {} points over {} rank(s)\n",
                  n_angles_, first_, last_, total_points(), n_ranks());
  out += fmt::format("{:>6} {:>14}  {:<24} {:<24}\n", "rank", "points", "first (angle,row,col)",
                     "last (angle,row,col)");
  for (int r = 0; r < n_ranks(); ++r) {
    if (points(r) == 0) {
      out += fmt::format("{:>6} {:>14}  {:<24} {:<24}\n", r, 0, "-", "-");
      continue;
    }
    const RowTile a = Locate(begin(r));
    const RowTile b = Locate(end(r) - 1);
    out += fmt::format("{:>6} {:>14}  {:<24} {:<24}\n", r, points(r),
                       fmt::format("({},{},{})", a.angle, a.row, a.col_begin),
                       fmt::format("({},{},{})", b.angle, b.row, b.col_begin));
  }
  return out;
}

std::vector<std::int64_t> PartitionPlan::Encode() const {
  std::vector<std::int64_t> data = {kPlanTag, n_angles_, first_, last_,
                                    static_cast<std::int64_t>(bounds_.size())};
  data.insert(data.end(), bounds_.begin(), bounds_.end());
  return data;
}

PartitionPlan PartitionPlan::Decode(std::span<const std::int64_t> data) {
  if (data.size() < 5 || data[0] != kPlanTag ||
      data.size() != 5 + static_cast<std::size_t>(data[4]) || data[4] < 2) {
    ThrowInternal("corrupt partition plan encoding");
  }
  PartitionPlan plan;
  plan.n_angles_ = static_cast<std::int32_t>(data[1]);
  plan.first_ = data[2];
  plan.last_ = data[3];
  plan.bounds_.assign(data.begin() + 5, data.end());
  if (plan.bounds_.front() != 0 ||
      plan.bounds_.back() != plan.n_angles_ * plan.points_per_angle() ||
      !std::is_sorted(plan.bounds_.begin(), plan.bounds_.end())) {
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
