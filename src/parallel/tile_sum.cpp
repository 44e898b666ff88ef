#include "parallel/tile_sum.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {
namespace {

std::int64_t Mid(std::int64_t lo, std::int64_t hi) { return lo + (hi - lo) / 2; }

void AddInto(std::vector<double>& acc, const std::vector<double>& other) {
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += other[i];
}

// Sum of the whole node [lo, hi), in tree order.
std::vector<double> SumNode(std::int64_t lo, std::int64_t hi, std::size_t width,
                            const TilePartialFn& partial) {
  if (hi - lo == 1) {
    std::vector<double> leaf(width, 0.0);
    partial(lo, leaf);
    return leaf;
  }
  const std::int64_t mid = Mid(lo, hi);
  std::vector<double> left = SumNode(lo, mid, width, partial);
  AddInto(left, SumNode(mid, hi, width, partial));
  return left;
}

void CollectNodes(std::int64_t lo, std::int64_t hi, std::int64_t begin, std::int64_t end,
                  std::size_t width, const TilePartialFn& partial, std::vector<TileTreeNode>& out) {
  if (hi <= begin || end <= lo) return;
  if (begin <= lo && hi <= end) {
    out.push_back({lo, hi, SumNode(lo, hi, width, partial)});
    return;
  }
  const std::int64_t mid = Mid(lo, hi);
  CollectNodes(lo, mid, begin, end, width, partial, out);
  CollectNodes(mid, hi, begin, end, width, partial, out);
}

std::vector<double> Complete(
    std::int64_t lo, std::int64_t hi, std::size_t width,
    const std::map<std::pair<std::int64_t, std::int64_t>, const std::vector<double>*>& nodes) {
  if (auto it = nodes.find({lo, hi}); it != nodes.end()) return *it->second;
  if (hi - lo <= 1) {
    ThrowInternal(fmt::format("tile sum: tile {} is not covered by any rank's range", lo));
  }
  const std::int64_t mid = Mid(lo, hi);
  std::vector<double> left = Complete(lo, mid, width, nodes);
  AddInto(left, Complete(mid, hi, width, nodes));
  return left;
}

}  // namespace

std::vector<TileTreeNode> SumTreeNodesInRange(std::int64_t total, std::int64_t begin,
                                              std::int64_t end, std::size_t width,
                                              const TilePartialFn& partial) {
  HOMODYNE_CHECK(0 <= begin && begin <= end && end <= total, "tile range outside [0, total)");
  std::vector<TileTreeNode> nodes;
  if (begin < end) CollectNodes(0, total, begin, end, width, partial, nodes);
  return nodes;
}

std::vector<double> CombineTreeNodes(std::int64_t total, std::size_t width,
                                     const std::vector<TileTreeNode>& nodes) {
  if (total == 0) return std::vector<double>(width, 0.0);
  std::map<std::pair<std::int64_t, std::int64_t>, const std::vector<double>*> index;
  for (const auto& n : nodes) {
    HOMODYNE_CHECK(n.sum.size() == width, "tile sum: node width mismatch");
    HOMODYNE_CHECK(index.emplace(std::make_pair(n.lo, n.hi), &n.sum).second,
                   "tile sum: node given twice (overlapping ranges)");
  }
  return Complete(0, total, width, index);
}

std::vector<double> ReproducibleTileSum(const Comm& comm, std::int64_t total, std::int64_t begin,
                                        std::int64_t end, std::size_t width,
                                        const TilePartialFn& partial) {
  const std::vector<TileTreeNode> mine = SumTreeNodesInRange(total, begin, end, width, partial);

  // Gather (lo, hi) pairs and the sums of every rank's nodes on rank 0.
  std::vector<std::int64_t> bounds;
  std::vector<double> sums;
  for (const auto& n : mine) {
    bounds.push_back(n.lo);
    bounds.push_back(n.hi);
    sums.insert(sums.end(), n.sum.begin(), n.sum.end());
  }
  const int my_count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(comm.size()), 0);
  MPI_Gather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.get());

  std::vector<int> bound_counts, bound_displs, sum_counts, sum_displs;
  int total_nodes = 0;
  if (comm.is_root()) {
    for (int c : counts) {
      bound_displs.push_back(2 * total_nodes);
      bound_counts.push_back(2 * c);
      sum_displs.push_back(total_nodes * static_cast<int>(width));
      sum_counts.push_back(c * static_cast<int>(width));
      total_nodes += c;
    }
  }
  std::vector<std::int64_t> all_bounds(2 * static_cast<std::size_t>(total_nodes));
  std::vector<double> all_sums(static_cast<std::size_t>(total_nodes) * width);
  MPI_Gatherv(bounds.data(), 2 * my_count, MPI_INT64_T, all_bounds.data(), bound_counts.data(),
              bound_displs.data(), MPI_INT64_T, 0, comm.get());
  MPI_Gatherv(sums.data(), my_count * static_cast<int>(width), MPI_DOUBLE, all_sums.data(),
              sum_counts.data(), sum_displs.data(), MPI_DOUBLE, 0, comm.get());

  std::vector<double> result(width, 0.0);
  std::exception_ptr error;
  if (comm.is_root()) {
    try {
      std::vector<TileTreeNode> nodes(static_cast<std::size_t>(total_nodes));
      for (std::size_t k = 0; k < nodes.size(); ++k) {
        nodes[k].lo = all_bounds[2 * k];
        nodes[k].hi = all_bounds[2 * k + 1];
        nodes[k].sum.assign(all_sums.begin() + static_cast<std::ptrdiff_t>(k * width),
                            all_sums.begin() + static_cast<std::ptrdiff_t>((k + 1) * width));
      }
      result = CombineTreeNodes(total, width, nodes);
    } catch (...) {
      error = std::current_exception();
    }
  }
  MPI_Bcast(result.data(), static_cast<int>(width), MPI_DOUBLE, 0, comm.get());
  int failed = error ? 1 : 0;
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm.get());
  if (failed) {
    if (error) std::rethrow_exception(error);
    ThrowInternal("tile sum: the ranks' tile ranges do not cover all tiles (see rank 0)");
  }
  return result;
}

}  // namespace homodyne
