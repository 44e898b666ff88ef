// Private implementation of ModelKernel (src/model only): the per-evaluation tables and the
// Impl class shared by kernel.cpp (setup, reduction, public API) and kernel_chunk.cpp (the
// per-chunk evaluation loops).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/kernel.h"
#include "model/thread_pool.h"
#include "point_terms.h"

namespace homodyne::model {
namespace kernel_internal {

// Columns sharing the angle-independent part: blocks of the gradient and normal-equation
// passes (their per-column sums stay in L1), and of the χ² and model passes (half the
// per-block work per point; their χ² lanes are carried across a row's blocks, so all passes
// still give the same χ² bits).
constexpr int kBlock = detail::kMaxBlock / 2;
constexpr int kWideBlock = detail::kMaxBlock;

// kGradient: χ² and JᵀWr only (O(P) per point), the same sums in the same order as kNormal.
enum class Pass { kModel, kChi2, kNormal, kGradient };

// Per-evaluation tables (O(n_t + n_phi)).
struct Tables {
  std::vector<double> cd, dcd[3], cg, dcg[3];
  std::vector<double> shear_a;  // sp·cos(π/180(φ0 − φ_k))
  std::vector<double> shear_b;  // sp·(−sin(π/180(φ0 − φ_k))·π/180)
  // Separable shear path (laminar, default transcendentals): sin/cos(shear_a[k]·cg[m]) at
  // [k·n_t + m]; empty when the path is off.
  std::vector<double> shear_sin, shear_cos;
  // Separable diffusion path (default transcendentals): exp(−wq·(C_D[m] − C_D[p(m)])) with
  // the pivot p(m) = m − m mod detail::kDiffusionPivotSpan; empty when the path is off.
  std::vector<double> diff_pivot;
  double contrast_scale = 1.0;  // max(1, max_k |contrast_k|)
  const double* contrast = nullptr;
  const double* offset = nullptr;
  double wq = 0.0;
};

}  // namespace kernel_internal

struct ModelKernel::Impl {
  AnalysisMode mode;
  Geometry geometry;
  std::vector<double> t, phi, ts;
  std::vector<RowTile> tiles;
  KernelOptions options;
  ExpandedIndex index;
  std::vector<std::int64_t> tile_offset;  // first output index of each tile
  // Every sum of the χ², gradient and normal passes is linear in the weights. When all tiles
  // without a weight array share one uniform weight that is a power of two, the point loops
  // sum with weight 1 (the unit-weight loops: no weight products) and each chunk's partial is
  // multiplied by it; per-point weights are divided by it. Powers of two scale exactly, so
  // the bits are those of summing w·(…) directly. Otherwise 1.
  double weight_scale = 1.0;
  std::int64_t n_points = 0;

  struct Group {
    int row, col_begin, count;
    std::vector<int> tiles;
    size_t first = 0;  // of its tiles in group_tiles
  };
  std::vector<Group> groups;
  // The groups' tiles, copied in group order: the passes read them in this order, and the
  // tiles of a group lie far apart in `tiles` (a cache miss per tile and block).
  std::vector<RowTile> group_tiles;
  std::vector<int> chunk_begin;  // group ranges of the chunks (size n_chunks + 1)
  std::unique_ptr<ThreadPool> pool;

  int n_phys() const { return index.n_phys; }
  // Partial-sum layout of one chunk.
  int angle_stride() const { return 5 + 2 * n_phys(); }
  int partial_size() const {
    return 1 + n_phys() * n_phys() + n_phys() + index.n_angles * angle_stride();
  }
  // kGradient partial: [χ², phys Jᵀr (n_phys), per angle (Σ w·uc·r, Σ w·r/σ)].
  int gradient_partial_size() const { return 1 + n_phys() + 2 * index.n_angles; }
  int partial_size(kernel_internal::Pass pass) const {
    return pass == kernel_internal::Pass::kNormal     ? partial_size()
           : pass == kernel_internal::Pass::kGradient ? gradient_partial_size()
                                                      : 1;
  }

  kernel_internal::Tables MakeTables(std::span<const double> params, bool derivs) const;
  template <kernel_internal::Pass kPass, bool kLaminar>
  // counts (may be null): the chunk's points that took the separable paths are added.
  void RunChunk(const kernel_internal::Tables& tab, int chunk, double* partial, double* model_out,
                SeparableCounts* counts = nullptr) const;
  // One pass over one chunk, phase by phase (kernel_chunk.cpp).
  template <kernel_internal::Pass kPass, bool kLaminar>
  class ChunkRun;
  std::vector<double> Reduce(std::span<const double> params, kernel_internal::Pass pass) const;
  // Per-chunk partials (n_chunks × partial size) into `out`.
  // False when `stop` ended the pass early (see ModelKernel::ChunkPartials).
  bool Partials(std::span<const double> params, kernel_internal::Pass pass, double* out,
                const std::function<bool()>& stop = {}) const;
};

}  // namespace homodyne::model
