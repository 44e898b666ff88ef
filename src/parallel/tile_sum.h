// Sums of per-tile vectors that do not depend on how tiles are spread over ranks.
//
// The data are cut into T tiles with global indices 0..T−1. Each rank owns a contiguous
// range of tiles and can compute each tile's partial vector (χ², Jᵀr, JᵀJ, ...). The
// total is defined by one fixed binary tree over the tile index,
//     sum[lo, hi) = sum[lo, mid) + sum[mid, hi),   mid = lo + (hi − lo)/2,
// so floating-point rounding is the same whatever the partition: a rank sums the tree
// nodes that lie wholly inside its range (O(log T) of them), rank 0 completes the tree
// from all ranks' nodes, and broadcasts the bits. Fits on 1 or 64 ranks therefore give
// bitwise identical normal equations.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace homodyne {

// Computes the partial vector of one tile into `out` (zeroed, of the common width).
using TilePartialFn = std::function<void(std::int64_t tile, std::span<double> out)>;

// One node of the tile tree with its sum.
struct TileTreeNode {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::vector<double> sum;
};

// The nodes of the tree over [0, total) that lie wholly inside [begin, end) and are
// maximal (their parent is not inside), each summed in tree order.
std::vector<TileTreeNode> SumTreeNodesInRange(std::int64_t total, std::int64_t begin,
                                              std::int64_t end, std::size_t width,
                                              const TilePartialFn& partial);

// The tree sum over [0, total) from a set of disjoint maximal nodes that covers it
// (e.g. every rank's nodes). Throws an internal error if the nodes do not cover it.
std::vector<double> CombineTreeNodes(std::int64_t total, std::size_t width,
                                     const std::vector<TileTreeNode>& nodes);

// Collective over `comm`: every rank passes its own tile range; every rank gets the
// identical total (width doubles). Ranges must be disjoint and cover [0, total).
std::vector<double> ReproducibleTileSum(const Comm& comm, std::int64_t total, std::int64_t begin,
                                        std::int64_t end, std::size_t width,
                                        const TilePartialFn& partial);

}  // namespace homodyne
