// The two-component (heterodyne) model over measured points: χ², the gradient and the
// normal equations of the weighted least-squares objective, for the fit and the sampler.
//
// Per pass, O(N) work builds the per-time tables (the prefix integrals P_r, P_s, P_v, the
// sample fraction and their derivatives); the angle-independent part of a point (transport
// decays, fractions, normalisation) is shared by the tiles of all angles on the same row and
// columns, and per angle a point costs the phase's cosine (and sine for derivatives). Both
// are separable (heterodyne_kernel_impl.h derives the bounds):
//  * the half decays exp(−½q²ΔP) as products of per-time, per-(anchor span pair) and
//    per-row exponentials (anchors on a fixed grid of times), c2 within 2.7e-15·|contrast|
//    of the direct value, except next to the diagonal (the row's own anchor span, and where
//    the smooth-abs shift of ΔP shows) and at the edge of the −700 clip, which take two
//    square roots and two exponentials per point; beyond the clip h is its constant;
//  * the phase θ = a_k·(P_v[j] − P_v[i]) by angle addition from per-pass tables of
//    cos/sin(a_k·P_v[m]) (O(n_t) per angle) where an error bound keeps c2 within
//    1e-14·|contrast| of the direct value (the columns of a row up to
//    |a_k·P_v[i]| + |a_k·P_v[j]| ≈ 39), else the array sine/cosine of θ.
// Every other value is computed with the reference model's expressions in the same order
// (heterodyne_reference.h): with exact transcendentals (nothing separable, libm's cosine) c2
// has the reference's bits.
//
// Determinism as for the homodyne kernel (kernel.h): points are cut into fixed chunks (or the
// caller's explicit chunks), each chunk sums its points in a fixed order, and chunk partials
// are added in chunk order: the results do not depend on the thread count.
//
// Parameters: the expanded vector [contrast_k…, offset_k…, 14 physical].
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/expanded_parameters.h"
#include "model/kernel.h"
#include "model/normal_equations.h"
#include "model/pass_kernel.h"
#include "model/row_tile.h"

namespace homodyne::model {

struct HeterodyneGrid {
  std::vector<double> t;  // the time grid the tiles index [s]
  double dt = 0.1;        // trapezoid step [s]
  double q = 0.0054;      // wavevector [1/Å]
  std::vector<double> phi_deg;
};

class HeterodyneKernel final : public PassKernel {
 public:
  // KernelOptions: threads, sigma, chunk_points, chunk_tile_starts, worker_start,
  // exact_transcendentals (false: the separable decays, and the phase's cosine and sine by
  // angle addition or from the array FastSinCos, c2 within 2e-14·max(1, |contrast|) of the
  // reference; true: every point direct with libm's, c2 with the reference's bits) and
  // separable (false: no factorised decay, no angle addition) are used.
  // Tiles are validated as by ModelKernel.
  HeterodyneKernel(HeterodyneGrid grid, std::vector<RowTile> tiles, KernelOptions options = {});
  ~HeterodyneKernel() override;
  HeterodyneKernel(const HeterodyneKernel&) = delete;
  HeterodyneKernel& operator=(const HeterodyneKernel&) = delete;

  // PassKernel (pass_kernel.h): chunks and partials in the compact layout of compact_partial.h.
  const ExpandedIndex& index() const override;
  std::int64_t num_points() const override;

  double Chi2(std::span<const double> params) const override;
  NormalEquations Accumulate(std::span<const double> params) const override;
  double Gradient(std::span<const double> params, std::span<double> jtr) const override;

  int num_chunks() const override;
  std::size_t partial_size(bool with_derivatives) const override;
  bool ChunkPartials(std::span<const double> params, bool with_derivatives, std::span<double> out,
                     const std::function<bool()>& stop = {}) const override;
  NormalEquations FromPartial(std::span<const double> partial) const override;

  void EvaluateModel(std::span<const double> params, std::span<double> out) const override;
  void SetLoss(const RobustLoss& loss) override;
  const RobustLoss& loss() const override;

  // The points whose phase takes the separable form at these parameters.
  std::int64_t CountSeparable(std::span<const double> params) const;
  // Over the points × {h_r, h_s}: the half decays that take the factorised form, and those
  // beyond the −700 clip (its constant); the others are evaluated directly.
  struct DecayCounts {
    std::int64_t factorised = 0, clipped = 0;
  };
  DecayCounts CountSeparableDecay(std::span<const double> params) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace homodyne::model
