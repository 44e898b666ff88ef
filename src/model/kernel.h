// The fast, multi-threaded evaluator of the homodyne model over a set of row tiles: the
// hot path of the NLSQ fit.
//
// Per parameter evaluation the O(n_t) per-time tables are built once (floored rates, their
// cumulative trapezoids and the trapezoids of their parameter derivatives). Tiles that share
// (row, col_begin, count) across angles form a group whose angle-independent part (I_D,
// g1_diff and their derivatives, I_Γ) is computed once per column; only the shear factor is
// evaluated per angle and point. With exact_transcendentals every point is evaluated directly
// with the expression order of the literal reference model and c2 is bit-identical to
// reference::Evaluate. By default (KernelOptions::separable) the transcendentals are
// factorised where a derived error bound allows it: sin/cos of the phase by angle addition
// from per-(angle, time) tables, g1_diff as a product of per-time and per-(row, pivot)
// exponentials; near the diagonal, for small phases and where the log clip is active they are
// evaluated directly (FastSinCos, std::exp). c2 stays within a few 1e-15 of the reference
// (src/model/separable.h has the bounds, docs/model.md the argument and the measurements).
// The physics block of JᵀWJ is accumulated per column over the angles (the derivative of
// every point factorises into an angle-dependent scalar times an angle-independent vector),
// the per-angle contrast/offset blocks per tile.
//
// Determinism: groups are cut into fixed chunks (KernelOptions::chunk_points); each chunk
// accumulates its own partial sums in a fixed order and the partials are added in chunk
// order. χ², JᵀWJ and JᵀWr are therefore bitwise independent of the thread count.
//
// A kernel is not safe for concurrent calls from several threads (it owns one pool).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/analysis_mode.h"
#include "model/constants.h"
#include "model/expanded_parameters.h"
#include "model/geometry.h"
#include "model/normal_equations.h"
#include "model/pass_kernel.h"
#include "model/robust_loss.h"
#include "model/row_tile.h"

namespace homodyne::model {

struct KernelOptions {
  int threads = 1;                    // total threads working on one call (≥ 1)
  double sigma = kDefaultSigma;       // r = (c2_exp − c2_model)/σ
  std::int64_t chunk_points = 16384;  // points per reduction chunk (fixes the summation order)
  // false (default): the shear phase's sin/cos come from the vectorised FastSinCos (≤ 1 ulp,
  // c2 within ~1e-15 of the reference); true: std::sin/std::cos, c2 bit-identical to the
  // literal reference model.
  bool exact_transcendentals = false;
  // true (default, only with exact_transcendentals = false): factorised evaluation where a
  // derived error bound keeps c2 within ~1e-15 of the direct value (src/model/separable.h):
  // the shear phase's sin/cos by angle addition from per-(angle, time) tables, and g1_diff
  // as a product of per-time and per-(row, pivot) exponentials; direct evaluation elsewhere
  // (near the diagonal, small phases, log clip). false: always direct.
  bool separable = true;
  // Explicit chunks instead of chunk_points: chunk c holds tiles
  // [chunk_tile_starts[c], chunk_tile_starts[c+1]) (the last runs to the end); the first
  // entry must be 0. Used by the distributed fit so that a chunk is one partition block,
  // whose partial sums are then combined along the global block tree.
  std::vector<int> chunk_tile_starts;
  // Optional: runs once in each spawned worker thread (index 1..threads−1) before it takes
  // any work, e.g. to pin it to its own core (the NLSQ driver passes a hwloc pin here). The
  // calling thread (index 0) is the caller's to place. A throwing hook fails construction.
  std::function<void(int thread_index)> worker_start;
  // The loss of the χ², gradient and normal passes (robust_loss.h): linear (default) sums
  // w·r² and its plain normal equations; a robust loss makes the χ² of every pass the robust
  // objective C²·Σ w·ρ(z) and the normal equations its Gauss–Newton form. The model pass
  // does not depend on it. PassKernel::SetLoss changes it between passes.
  RobustLoss loss;

  void Validate() const;  // bad-input Error for threads < 1, σ ≤ 0, chunk_points < 1, f_scale
};

// Points of the kernel that took the separable paths (ModelKernel::CountSeparable).
struct SeparableCounts {
  std::int64_t points = 0;     // all points
  std::int64_t shear = 0;      // shear sin/cos by angle addition (laminar only)
  std::int64_t diffusion = 0;  // g1_diff from the factorised exponential
};

class ModelKernel final : public PassKernel {
 public:
  // `t` is the (global) time grid the tiles' row/column indices refer to, `phi_deg` the
  // (global) angle list. Tiles are validated (angle/row/column ranges, data pointer).
  ModelKernel(AnalysisMode mode, const Geometry& geometry, std::vector<double> t,
              std::vector<double> phi_deg, std::vector<RowTile> tiles, KernelOptions options = {});
  ~ModelKernel() override;
  ModelKernel(const ModelKernel&) = delete;
  ModelKernel& operator=(const ModelKernel&) = delete;
  ModelKernel(ModelKernel&&) noexcept;
  ModelKernel& operator=(ModelKernel&&) noexcept;

  AnalysisMode mode() const;
  const ExpandedIndex& index() const override;  // expanded, per-angle individual
  std::int64_t num_points() const override;
  const std::vector<RowTile>& tiles() const;

  // χ² = Σ w·r² at the expanded parameter vector `params`.
  double Chi2(std::span<const double> params) const override;

  // χ², JᵀWJ and JᵀWr in the expanded parameter space.
  NormalEquations Accumulate(std::span<const double> params) const override;

  // χ² (returned) and JᵀWr (into `jtr`, size index().size()) without JᵀWJ: O(P) work per
  // point instead of the normal pass's O(P²) sums, for samplers that need only the gradient
  // (∂χ²/∂θ = 2·JᵀWr). The same partial sums in the same order as Accumulate: χ² and JᵀWr
  // are bit-identical to Accumulate's and, like them, independent of the thread count.
  double Gradient(std::span<const double> params, std::span<double> jtr) const override;

  // Per-chunk partial sums in the kernel's compact layout (partial_size(derivs) doubles
  // per chunk, chunks in order). Compact partials add element-wise; FromPartial turns a
  // sum of them into the normal equations (derivs) or χ² (element 0).
  // `stop`, when given, is asked before each chunk (from any of the pool's threads, so it
  // must be thread-safe); once it says true the remaining chunks are skipped and the call
  // returns false: `out` is then incomplete and must be discarded. A stop request thus
  // ends a pass within one chunk's time instead of the whole pass's.
  int num_chunks() const override;
  std::size_t partial_size(bool with_derivatives) const override;
  bool ChunkPartials(std::span<const double> params, bool with_derivatives, std::span<double> out,
                     const std::function<bool()>& stop = {}) const override;
  NormalEquations FromPartial(std::span<const double> partial) const override;

  // Runs fn(thread_index) once on every thread of the kernel's pool (the caller as 0);
  // diagnostics such as "which PU does each compute thread run on".
  void OnEachThread(const std::function<void(int thread_index)>& fn) const;

  // Test hook: how many points take the separable paths at `params` (KernelOptions::separable).
  SeparableCounts CountSeparable(std::span<const double> params) const;

  void SetLoss(const RobustLoss& loss) override;
  const RobustLoss& loss() const override;

  // Model c2 at every tile point, tiles in order (out.size() == num_points()).
  void EvaluateModel(std::span<const double> params, std::span<double> out) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace homodyne::model
