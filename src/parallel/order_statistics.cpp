#include "parallel/order_statistics.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "ordered_key.h"

namespace homodyne {
namespace {

// Monotone map of finite doubles to unsigned integers (and back).
std::uint64_t Key(double x) { return detail::OrderedKey(x); }
double FromKey(std::uint64_t k) { return detail::FromOrderedKey(k); }

std::int64_t CountAtMost(const Comm& comm, std::span<const WeightedRun> runs, double v) {
  std::int64_t mine = 0;
  for (const auto& r : runs) {
    mine += r.weight * (std::upper_bound(r.sorted.begin(), r.sorted.end(), v) - r.sorted.begin());
  }
  std::int64_t all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, comm.get());
  return all;
}

}  // namespace

double DistributedKthSmallest(const Comm& comm, std::span<const double> sorted_local,
                              std::int64_t k) {
  const WeightedRun run{sorted_local, 1};
  return DistributedKthSmallest(comm, std::span<const WeightedRun>(&run, 1), k);
}

double DistributedPercentile(const Comm& comm, std::span<const double> sorted_local, double p) {
  const WeightedRun run{sorted_local, 1};
  return DistributedPercentile(comm, std::span<const WeightedRun>(&run, 1), p);
}

double DistributedKthSmallest(const Comm& comm, std::span<const WeightedRun> runs, std::int64_t k) {
  // Smallest key K with count(≤ FromKey(K)) ≥ k + 1, by bisection on [lo, hi].
  std::uint64_t lo = 0;
  std::uint64_t hi = ~std::uint64_t{0};
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const double v = FromKey(mid);
    // NaN images (outside the finite range) are never values: treat them by position.
    const bool enough = std::isnan(v) ? (mid >= Key(0.0)) : CountAtMost(comm, runs, v) >= k + 1;
    if (enough) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return FromKey(lo);
}

double DistributedPercentile(const Comm& comm, std::span<const WeightedRun> runs, double p) {
  std::int64_t n_local = 0;
  for (const auto& r : runs) n_local += r.weight * static_cast<std::int64_t>(r.sorted.size());
  std::int64_t n = 0;
  MPI_Allreduce(&n_local, &n, 1, MPI_INT64_T, MPI_SUM, comm.get());
  if (n == 0) ThrowBadInput("percentile of an empty sample");
  const double h = static_cast<double>(n - 1) * (p / 100.0);
  const double floor_h = std::floor(h);
  const auto lo = static_cast<std::int64_t>(floor_h);
  if (lo >= n - 1) return DistributedKthSmallest(comm, runs, n - 1);
  const double a = DistributedKthSmallest(comm, runs, lo);
  const double b = DistributedKthSmallest(comm, runs, lo + 1);
  const double g = h - floor_h;
  const double diff = b - a;
  return g >= 0.5 ? b - diff * (1.0 - g) : a + diff * g;  // numpy's lerp
}

}  // namespace homodyne
