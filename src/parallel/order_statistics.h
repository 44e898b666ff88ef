// Exact order statistics and numpy-style percentiles of a multiset spread over ranks,
// without gathering it: a bisection over the order-preserving 64-bit image of doubles,
// counting (by binary search in each rank's sorted values) how many values lie at or
// below the pivot. 64 allreduces of one integer give the exact k-th smallest value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace homodyne {

// A rank's share of a multiset as sorted runs, each value of a run counted `weight` times
// (e.g. the off-diagonal pairs of a symmetric matrix twice, its diagonal once).
struct WeightedRun {
  std::span<const double> sorted;
  std::int64_t weight = 1;
};

// Collective: the k-th smallest (0-based) of the union of every rank's weighted runs.
double DistributedKthSmallest(const Comm& comm, std::span<const WeightedRun> runs, std::int64_t k);

// Collective: numpy.percentile of the union of every rank's weighted runs.
double DistributedPercentile(const Comm& comm, std::span<const WeightedRun> runs, double p);

// Collective. `sorted_local` is this rank's share, sorted ascending (finite values).
// Returns the k-th smallest (0-based) value of the union; k < total count.
double DistributedKthSmallest(const Comm& comm, std::span<const double> sorted_local,
                              std::int64_t k);

// Collective. numpy.percentile(union, p) with the default linear method (the same
// expression as model::Percentile). Throws if the union is empty.
double DistributedPercentile(const Comm& comm, std::span<const double> sorted_local, double p);

}  // namespace homodyne
