// The two-component kernel's internals (heterodyne_kernel.h), shared by its files as the
// homodyne kernel's are (kernel_impl.h): heterodyne_tables.cpp builds the per-pass tables
// (prefix sums, separable phase and decay factors), heterodyne_kernel_chunk.cpp runs a chunk
// of points (χ², model, gradient and normal passes), heterodyne_kernel.cpp drives the chunks
// and reduces. Internal to src/model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "model/compact_partial.h"
#include "model/heterodyne_kernel.h"
#include "model/heterodyne_reference.h"
#include "model/thread_pool.h"

namespace homodyne::model {
namespace het_kernel {

namespace het = heterodyne::het;
constexpr int kNp = heterodyne::kNumPhysical;
using heterodyne::kExpClip;
using heterodyne::kNormFloor;
using heterodyne::kSmoothAbs;
constexpr double kDegToRad = std::numbers::pi / 180.0;

enum class Pass { kChi2, kGradient, kNormal };

// Per-pass tables: the per-time ones (heterodyne::TimeTables) and the per-angle ones.
struct Tables : heterodyne::TimeTables {
  std::vector<double> a;   // per angle: q·cos((φ_k + phi0_het)·π/180)
  std::vector<double> da;  // per angle: d a / d phi0_het = −q·sin(·)·π/180
  std::vector<double> contrast, offset;
  double q2 = 0.0;
  // The separable phase (empty without it): cos and sin of x = a_k·P_v[m] per angle and time
  // (angle-major, n_t per angle), and the running maximum of |P_v| over times 0…m.
  std::vector<double> cos_x, sin_x, v_max;
  std::size_t n_t = 0;
  // The separable half decays of the reference (0) and sample (1) transport (DecayFactors,
  // off without it), their anchor spans, and the clip's value e^−700.
  struct DecayFactors {
    bool on = false;
    std::vector<double> f, g;  // per time: F, G
    std::vector<double> t;     // T, n_spans × n_spans (entries s1 ≤ s2 filled)
    // Per row i: the first column with j ≥ b(i) and σ ≤ ε, the first with c·Δ beyond
    // kDecayFactorLimit, the first with c·Δ at or beyond kDecayClipFrom.
    std::vector<int> lo, hi, clip;
  } decay[2];
  int decay_span = 1;
  std::size_t n_spans = 0;
  double h_clip = 0.0;
};

constexpr double kEps = 1.1102230246251565e-16;  // 2^-53

// Separable phase. θ = a·(P_v[j] − P_v[i]) and, with x_m = a·P_v[m] from the tables,
//   cos θ = cos x_j·cos x_i + sin x_j·sin x_i,  sin θ = sin x_j·cos x_i − cos x_j·sin x_i.
// Error against the reference's cos/sin of its θ_ref = a·(P_v[j] − P_v[i]) (ε = 2⁻⁵³):
//  * x_m = fl(a·P_v[m]) is within ε|x_m| of a·P_v[m], so the exact angle addition of the
//    rounded x's is the cosine of an angle within ε(|x_i| + |x_j|) of a·(P_v[j] − P_v[i]);
//  * θ_ref (a subtraction and a product) is within 2ε|θ_ref| ≤ 2ε(|x_i| + |x_j|) of it;
//  * table entries (FastSinCos, ≤ 2 ulp ≤ 4ε absolute), the two products and the sum add
//    ≤ 4·(2·4ε) + 3ε = 19ε, and the reference's libm cosine ≤ ε;
// so |Δcos θ|, |Δsin θ| ≤ ε·(3(|x_i| + |x_j|) + 20) up to O(ε²), and the test below
// uses ε·(4X + 24) with X = |a|·(|P_v[i]| + max_{m≤j} |P_v[m]|) ≥ |x_i| + |x_j| (the 4 and 24
// absorb the O(ε²) terms and the rounding of X). c2 takes the phase as
// contrast·(m2·h_r·h_s/norm)·cos θ with m2/norm ≤ ½ and h ≤ 1, so |Δc2| ≤ ½|contrast|·bound:
// within kHetPhaseTolerance the separable c2 is within 1e-14·|contrast| of the reference's
// (the direct phase's is within ~5ε·|contrast|), for |x_i| + |x_j| up to about 39. The reference's
// own rounding of θ_ref, 2ε|θ_ref|, sets that limit: no other evaluation order can follow
// it at large phases, which keep the direct form (a fit over 100 s of fast flow has
// |x| in the thousands: there the separable columns are those near the start). X grows
// along a row (a running maximum), so the separable columns of a row are a prefix of it;
// beyond, and where X is not finite, the phase is evaluated directly. The choice depends
// on the point only (row, column, angle), never on a block or chunk, so every pass makes it
// alike and c2 has the same bits in all of them.
constexpr double kHetPhaseTolerance = 2e-14;

inline bool SeparablePhaseHolds(double abs_a, double abs_v_row, double v_max_col) {
  // Written so that NaN gives false.
  return kEps * (4.0 * (abs_a * (abs_v_row + v_max_col)) + 24.0) <= kHetPhaseTolerance;
}

// The number of leading columns of a group's row that take the separable phase for angle k.
inline int SeparablePhaseEnd(const Tables& tab, std::size_t k, int row, int col_begin, int count) {
  if (tab.cos_x.empty() || count == 0) return 0;
  const double abs_a = std::abs(tab.a[k]);
  const double abs_v_row = std::abs(tab.p[2][static_cast<std::size_t>(row)]);
  const double* first = tab.v_max.data() + col_begin;
  // v_max does not decrease, so the predicate holds on a prefix.
  return static_cast<int>(
      std::partition_point(first, first + count,
                           [&](double vm) { return SeparablePhaseHolds(abs_a, abs_v_row, vm); }) -
      first);
}

// Separable half decays. The reference's h = exp(clip(−c·I, −700, 0)), c = ½q²,
// I = sqrt(Δ² + 1e-12), Δ = P[j] − P[i] (P = P_r or P_s) is exp(−c·Δ) up to the smooth-abs
// shift, and that factorises: Δ ≥ 0 for j > i (the rates are floored at 0, so P and its
// rounded running sums do not decrease). Anchors: the time grid is cut into spans of
// L = max(16, ⌈n_t/128⌉) times (fixed by the grid alone), A(s) = s·L; b(i) = A(s(i) + 1) is
// the first anchor after row i. For a column j of span s ≥ s(i) + 1
//   h = F[j]·(T[s(i) + 1, s]·G[i]),   F[j] = exp(−c(P[j] − P[A(s)])),
//   T[s1, s2] = exp(−c(P[A(s2)] − P[A(s1)])),   G[i] = exp(−c(P[b(i)] − P[i])):
// per pass 2·n_t + n_spans²/2 exponentials per component (n_spans ≤ 128), per (row, span) a
// product and per point one. The three exponents are ≥ 0 and add up to c·Δ, so no factor
// exceeds 1 or falls below h itself (no overflow; no underflow where h ≥ e^−700).
// Error against the reference's h (ε = 2⁻⁵³, e = c·Δ, libm's exp within 1 ulp ≤ 2ε relative):
//  * the reference rounds Δ, Δ², the sum, the square root and the product with c: its
//    exponent is −c·sqrt(Δ² + 1e-12)·(1 + η), |η| ≤ 4ε, and c·(sqrt(Δ² + 1e-12) − Δ) ≤
//    σ = c·1e-12/(2Δ); its exp adds 2ε: log h_ref is within 4εe + σ(1 + 4ε) + 2ε of −e;
//  * each factor's exponent (a difference and a product) is within 2ε of its own value, and
//    the three add up to e: 2εe; the three exps and the two products add 3·2ε + 2ε;
// so where σ ≤ ε, |h_sep/h_ref − 1| ≤ δ = ε(6e + 11) + O(ε²), and h·δ ≤ 12ε for every e
// (ε(6e + 12)·e^−e is largest at e = 0: the relative error grows with the exponent no faster
// than h falls). c2 takes the decays as (f_r,i f_r,j)²h_r², (f_s,i f_s,j)²h_s² and
// m2·h_r·h_s·cos θ over norm; the three weights (f_r,i f_r,j)², (f_s,i f_s,j)², m2 over norm
// add up to at most 1 (Cauchy–Schwarz: (f_r,i f_r,j + f_s,i f_s,j)² ≤ norm), so
// |Δc2| ≤ 2|contrast|·max(h_r δ_r, h_s δ_s) ≤ 24ε|contrast| ≈ 2.7e-15·|contrast|, plus the
// rounding of the operations after (each evaluation rounds its own values, a few ε): with
// the separable phase's 1e-14·|contrast|, c2 stays within 2e-14·max(1, |contrast|).
// Rules, per component and point (i, j), from quantities of (i, j) alone:
//  * factorised where j ≥ b(i) (an anchor lies between the row and the column; within the
//    row's own span the anchor lies left of the row, a factor exp(+c(P[i] − P[A])) would
//    enter, and the error would grow with P's growth over the span), σ ≤ ε
//    (1e-12·c ≤ 2ε·Δ; rates at the 0 floor give Δ = 0 over whole stretches, where
//    h_ref = exp(−c·1e-6) ≠ 1, and slow rates give tiny Δ near the diagonal) and
//    c·Δ ≤ 700(1 − 1e-12) (the reference's exponent, within 6ε·c·Δ of −c·Δ there, is then
//    not clipped either, so ∂h ≠ 0 on both sides);
//  * h = e^−700 and ∂h = 0 where c·Δ ≥ 700(1 + 1e-12): the reference's exponent is then
//    below −700 whatever its rounding (I ≥ Δ), and its clip gives exactly that value;
//  * elsewhere (the row's span, tiny Δ, the clip's edge, columns j ≤ i) directly, with the
//    reference's expressions and bits.
// Δ and c·Δ do not decrease along a row, so each condition holds on a prefix or a suffix
// of the row's columns: three boundaries per row from binary searches over the whole row
// (never over a block, chunk or tile), so every pass, rank and thread count makes the same
// choice and c2 has the same bits. The derivative ∂h/∂Δ = h·(−c)·Δ/I takes Δ/I = 1 with the
// factorised h where 1e-12/(2Δ²) ≤ ε (Δ ≥ 68: 1 − Δ/I is below the rounding of the direct
// quotient), else the quotient. q = 0 (h ≡ 1) or non-finite prefixes: every point direct.
constexpr int kDecayMinSpan = 16;
constexpr std::size_t kDecayMaxSpans = 128;
constexpr double kDecayFactorLimit = kExpClip * (1.0 - 1e-12);
constexpr double kDecayClipFrom = kExpClip * (1.0 + 1e-12);
constexpr double kDecayUnitRatioFrom = 68.0;  // sqrt(1e-12/(2ε)) = 67.1

// Columns [j0, fa) and [fb, clip) of a row's run j0 … j0 + n − 1 are direct, [fa, fb)
// factorised, [clip, j0 + n) clipped.
struct DecaySegments {
  int fa, fb, clip;
};

inline DecaySegments SegmentsOf(const Tables::DecayFactors& d, std::size_t i, int j0, int n) {
  const int end = j0 + n;
  if (!d.on) return {j0, j0, end};
  auto in = [&](int x) { return std::clamp(x, j0, end); };
  const int clip = in(d.clip[i]);
  const int fa = std::min(in(d.lo[i]), clip);
  const int fb = std::max(fa, std::min(in(d.hi[i]), clip));
  return {fa, fb, clip};
}

struct Group {
  int row = 0, col_begin = 0, count = 0;
  std::vector<int> tiles;  // tile indices (all angles on these columns)
};

}  // namespace het_kernel

struct HeterodyneKernel::Impl {
  HeterodyneGrid grid;
  std::vector<RowTile> tiles;
  KernelOptions options;
  ExpandedIndex index;
  std::int64_t n_points = 0;
  std::vector<std::int64_t> tile_offset;
  std::vector<het_kernel::Group> groups;
  std::vector<int> chunk_begin;  // group index where each chunk starts (+ the end)
  std::unique_ptr<ThreadPool> pool;

  // The phase by angle addition where its bound holds (SeparablePhaseEnd).
  bool Separable() const { return options.separable && !options.exact_transcendentals; }
  std::size_t PartialSize(het_kernel::Pass pass) const {
    return pass == het_kernel::Pass::kNormal     ? CompactNormalSize(index)
           : pass == het_kernel::Pass::kGradient ? CompactGradientSize(index)
                                                 : 1;
  }

  het_kernel::Tables MakeTables(std::span<const double> params, bool derivatives) const;
  // Adds chunk `c`'s χ² into `part` (zeroed); with `model`, writes c2 instead.
  void RunChunk(const het_kernel::Tables& tab, int c, double* part, double* model) const;
  // Adds chunk `c`'s points into `part` (zeroed) in the gradient or normal-pass layout.
  template <het_kernel::Pass P>
  void RunDerivChunk(const het_kernel::Tables& tab, int c, double* part) const;
  bool Partials(std::span<const double> params, het_kernel::Pass pass, double* out,
                const std::function<bool()>& stop) const;
  std::vector<double> Reduce(std::span<const double> params, het_kernel::Pass pass) const;
  void CheckParams(std::span<const double> params) const {
    if (static_cast<int>(params.size()) != index.size()) {
      ThrowBadInput(fmt::format("the two-component kernel needs {} parameters, found {}",
                                index.size(), params.size()));
    }
  }
};

}  // namespace homodyne::model
