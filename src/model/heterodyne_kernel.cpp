#include "model/heterodyne_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "model/compact_partial.h"
#include "model/fast_sincos.h"
#include "model/heterodyne_block.h"
#include "model/heterodyne_reference.h"
#include "model/simd_clones.h"
#include "model/thread_pool.h"

namespace homodyne::model {
namespace {

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

// cos θ (and sin θ) of n columns by angle addition from the tables' entries of the columns
// (tab_cos, tab_sin) and of the row (ci, si).
HOMODYNE_SIMD_CLONES void SeparableCos(const double* tab_cos, const double* tab_sin, double ci,
                                       double si, double* cs, int n) {
  for (int c = 0; c < n; ++c) cs[c] = tab_cos[c] * ci + tab_sin[c] * si;
}
HOMODYNE_SIMD_CLONES void SeparableSinCos(const double* tab_cos, const double* tab_sin, double ci,
                                          double si, double* sn, double* cs, int n) {
  for (int c = 0; c < n; ++c) {
    cs[c] = tab_cos[c] * ci + tab_sin[c] * si;
    sn[c] = tab_sin[c] * ci - tab_cos[c] * si;
  }
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

// F, G, T and the rows' boundaries of one prefix P (decay.on stays false where the
// factorisation does not apply).
void BuildDecayFactors(const std::vector<double>& p, double half_q2, int span, std::size_t n_spans,
                       Tables::DecayFactors& d) {
  if (!(half_q2 < 0.0) || !std::isfinite(half_q2)) return;
  for (double v : p) {
    if (!std::isfinite(v)) return;
  }
  d.on = true;
  const std::size_t n = p.size();
  const auto L = static_cast<std::size_t>(span);
  d.f.resize(n);
  d.g.resize(n);
  for (std::size_t m = 0; m < n; ++m) {
    const std::size_t a = m - m % L, b = a + L;
    d.f[m] = std::exp(half_q2 * (p[m] - p[a]));
    d.g[m] = b < n ? std::exp(half_q2 * (p[b] - p[m])) : 0.0;
  }
  d.t.assign(n_spans * n_spans, 0.0);
  for (std::size_t s1 = 0; s1 < n_spans; ++s1) {
    for (std::size_t s2 = s1; s2 < n_spans; ++s2) {
      d.t[s1 * n_spans + s2] = std::exp(half_q2 * (p[s2 * L] - p[s1 * L]));
    }
  }
  const double shift = -half_q2 * kSmoothAbs;  // c·1e-12
  d.lo.resize(n);
  d.hi.resize(n);
  d.clip.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double pi = p[i];
    // The first column j in (i, n) where `holds` fails (it holds on a prefix).
    auto first_failing = [&](auto holds) {
      std::size_t lo = i + 1, hi = n;
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (holds(p[mid] - pi)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return static_cast<int>(lo);
    };
    const int shift_small =
        first_failing([&](double dr) { return !(dr > 0.0 && shift <= (2.0 * kEps) * dr); });
    const int next_anchor = static_cast<int>(std::min(n, (i / L + 1) * L));
    d.lo[i] = std::max(shift_small, next_anchor);
    d.hi[i] = first_failing([&](double dr) { return half_q2 * dr >= -kDecayFactorLimit; });
    d.clip[i] = first_failing([&](double dr) { return !(half_q2 * dr <= -kDecayClipFrom); });
  }
}

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

// h[j − fa] = F[j]·(T[s(i) + 1, s]·G[i]) for the columns j in [fa, fb), s = j / span (t_row:
// T's row s(i) + 1, g = G[i]).
HOMODYNE_SIMD_CLONES void FactorisedDecays(const double* __restrict f,
                                           const double* __restrict t_row, double g, int span,
                                           int fa, int fb, double* __restrict h) {
  int j = fa;
  for (int s = fa / span; j < fb; ++s) {
    const int stop = std::min(fb, (s + 1) * span);
    const double rg = t_row[s] * g;
    for (; j < stop; ++j) h[j - fa] = f[j] * rg;
  }
}

// h of component r (0: reference, 1: sample) at the columns j0 … j0 + n − 1 of row i, and
// with dh its derivative with respect to Δ (0 where the clip is active).
void HalfDecays(const Tables& tab, int r, std::size_t i, int j0, int n, double half_q2, double* h,
                double* dh) {
  const Tables::DecayFactors& d = tab.decay[r];
  const std::vector<double>& p = tab.p[r];
  const DecaySegments sg = SegmentsOf(d, i, j0, n);
  auto direct = [&](int from, int to) {
    for (int j = from; j < to; ++j) {
      const auto e = static_cast<std::size_t>(j - j0);
      const double dr = p[static_cast<std::size_t>(j)] - p[i];
      const double ir = std::sqrt(dr * dr + kSmoothAbs);
      const double er = half_q2 * ir;
      const double hv = std::exp(std::clamp(er, -kExpClip, 0.0));
      h[e] = hv;
      if (dh != nullptr) dh[e] = (er > -kExpClip && er < 0.0) ? hv * half_q2 * dr / ir : 0.0;
    }
  };
  direct(j0, sg.fa);
  if (sg.fa < sg.fb) {
    const int span = tab.decay_span;
    const double* t_row = d.t.data() + (i / static_cast<std::size_t>(span) + 1) * tab.n_spans;
    FactorisedDecays(d.f.data(), t_row, d.g[i], span, sg.fa, sg.fb, h + (sg.fa - j0));
    if (dh != nullptr) {
      for (int j = sg.fa; j < sg.fb; ++j) {
        const auto e = static_cast<std::size_t>(j - j0);
        const double dr = p[static_cast<std::size_t>(j)] - p[i];
        const double ratio = dr >= kDecayUnitRatioFrom ? 1.0 : dr / std::sqrt(dr * dr + kSmoothAbs);
        dh[e] = h[e] * half_q2 * ratio;
      }
    }
  }
  direct(sg.fb, sg.clip);
  for (int j = sg.clip; j < j0 + n; ++j) {
    h[j - j0] = tab.h_clip;
    if (dh != nullptr) dh[j - j0] = 0.0;
  }
}

struct Group {
  int row = 0, col_begin = 0, count = 0;
  std::vector<int> tiles;  // tile indices (all angles on these columns)
};

}  // namespace

struct HeterodyneKernel::Impl {
  HeterodyneGrid grid;
  std::vector<RowTile> tiles;
  KernelOptions options;
  ExpandedIndex index;
  std::int64_t n_points = 0;
  std::vector<std::int64_t> tile_offset;
  std::vector<Group> groups;
  std::vector<int> chunk_begin;  // group index where each chunk starts (+ the end)
  std::unique_ptr<ThreadPool> pool;

  // The phase by angle addition where its bound holds (SeparablePhaseEnd).
  bool Separable() const { return options.separable && !options.exact_transcendentals; }
  std::size_t PartialSize(Pass pass) const {
    return pass == Pass::kNormal     ? CompactNormalSize(index)
           : pass == Pass::kGradient ? CompactGradientSize(index)
                                     : 1;
  }

  Tables MakeTables(std::span<const double> params, bool derivatives) const;
  // Adds chunk `c`'s χ² into `part` (zeroed); with `model`, writes c2 instead.
  void RunChunk(const Tables& tab, int c, double* part, double* model) const;
  // Adds chunk `c`'s points into `part` (zeroed) in the gradient or normal-pass layout.
  template <Pass P>
  void RunDerivChunk(const Tables& tab, int c, double* part) const;
  bool Partials(std::span<const double> params, Pass pass, double* out,
                const std::function<bool()>& stop) const;
  std::vector<double> Reduce(std::span<const double> params, Pass pass) const;
  void CheckParams(std::span<const double> params) const {
    if (static_cast<int>(params.size()) != index.size()) {
      ThrowBadInput(fmt::format("the two-component kernel needs {} parameters, found {}",
                                index.size(), params.size()));
    }
  }
};

Tables HeterodyneKernel::Impl::MakeTables(std::span<const double> params, bool derivatives) const {
  CheckParams(params);
  Tables tab;
  const int na = index.n_angles;
  const std::span<const double> p = params.subspan(static_cast<std::size_t>(2 * na));
  tab.contrast.assign(params.begin(), params.begin() + na);
  tab.offset.assign(params.begin() + na, params.begin() + 2 * na);
  tab.q2 = grid.q * grid.q;
  for (int k = 0; k < na; ++k) {
    const double angle = (grid.phi_deg[static_cast<std::size_t>(k)] + p[het::kPhi0Het]) * kDegToRad;
    tab.a.push_back(grid.q * std::cos(angle));
    tab.da.push_back(-grid.q * std::sin(angle) * kDegToRad);
  }
  static_cast<heterodyne::TimeTables&>(tab) =
      heterodyne::BuildTimeTables(grid.t, grid.dt, p, derivatives);
  tab.h_clip = std::exp(-kExpClip);
  if (Separable()) {
    const std::size_t n_t = grid.t.size();
    tab.decay_span =
        std::max(kDecayMinSpan, static_cast<int>((n_t + kDecayMaxSpans - 1) / kDecayMaxSpans));
    const auto span = static_cast<std::size_t>(tab.decay_span);
    tab.n_spans = (n_t + span - 1) / span;
    const double half_q2 = -0.5 * tab.q2;
    for (int r = 0; r < 2; ++r) {
      BuildDecayFactors(tab.p[r], half_q2, tab.decay_span, tab.n_spans, tab.decay[r]);
    }
  }
  if (Separable()) {
    const std::vector<double>& v = tab.p[2];
    const std::size_t n_t = v.size();
    tab.n_t = n_t;
    tab.v_max.resize(n_t);
    double m = 0.0;
    for (std::size_t t = 0; t < n_t; ++t) {
      // NaN propagates: no column after it is separable.
      const double av = std::abs(v[t]);
      m = (av > m || std::isnan(av)) ? av : m;
      tab.v_max[t] = m;
    }
    tab.cos_x.resize(n_t * static_cast<std::size_t>(na));
    tab.sin_x.resize(tab.cos_x.size());
    std::vector<double> x(n_t);
    for (int k = 0; k < na; ++k) {
      const double a = tab.a[static_cast<std::size_t>(k)];
      for (std::size_t t = 0; t < n_t; ++t) x[t] = a * v[t];
      const std::size_t at = static_cast<std::size_t>(k) * n_t;
      FastSinCos(x.data(), tab.sin_x.data() + at, tab.cos_x.data() + at, static_cast<int>(n_t));
    }
  }
  return tab;
}

// The angle-independent quantities of one row's columns (a group), shared by its angles.
struct ColumnTerms {
  std::vector<double> hr, hs, rr, ss, m2, norm, v;
  std::vector<double> theta, sin_theta, cos_theta;  // per angle, refilled
  std::vector<double> c2, r;                        // per angle: model and residual
  void Resize(int n) {
    for (auto* a : {&hr, &hs, &rr, &ss, &m2, &norm, &v, &theta, &sin_theta, &cos_theta, &c2, &r}) {
      a->resize(static_cast<std::size_t>(n));
    }
  }
};

// The fraction terms of n columns of row i that every pass shares (and the velocity
// differences), with the reference's expressions: every pass has the same c2 bits.
HOMODYNE_SIMD_CLONES void ColumnsAt(const double* __restrict fs_j, double bi,
                                    const double* __restrict pv_j, double pv_i,
                                    const double* __restrict hr, const double* __restrict hs,
                                    double* __restrict rr, double* __restrict ss,
                                    double* __restrict m2, double* __restrict norm,
                                    double* __restrict v, int n) {
  const double ai = 1.0 - bi;
  const double ni = bi * bi + ai * ai;
  for (int c = 0; c < n; ++c) {
    const double bj = fs_j[c], aj = 1.0 - bj;
    rr[c] = (ai * aj) * (ai * aj) * (hr[c] * hr[c]);
    ss[c] = (bi * bj) * (bi * bj) * (hs[c] * hs[c]);
    m2[c] = 2.0 * ((ai * bi) * (aj * bj));
    const double nm = ni * (bj * bj + aj * aj);
    norm[c] = nm > kNormFloor ? nm : kNormFloor;
    v[c] = pv_j[c] - pv_i;
  }
}

// The derivative passes' column terms of a block's nb columns: ColumnsAt's (the same
// expressions) and the chain-rule factors of heterodyne_block.h; col.hr and col.hs are set.
HOMODYNE_SIMD_CLONES void DerivColumnsAt(const double* __restrict fs_j, double bi,
                                         const double* __restrict pv_j, double pv_i,
                                         detail::HetBlockColumns& col, int nb) {
  const double ai = 1.0 - bi;
  const double ni = bi * bi + ai * ai;
  for (int e = 0; e < nb; ++e) {
    const double bj = fs_j[e], aj = 1.0 - bj;
    const double hr = col.hr[e], hs = col.hs[e];
    col.rr[e] = (ai * aj) * (ai * aj) * (hr * hr);
    col.ss[e] = (bi * bj) * (bi * bj) * (hs * hs);
    col.m2[e] = 2.0 * ((ai * bi) * (aj * bj));
    const double nm = ni * (bj * bj + aj * aj);
    const bool floored = !(nm > kNormFloor);
    const double norm = floored ? kNormFloor : nm;
    col.norm[e] = norm;
    col.v[e] = pv_j[e] - pv_i;
    col.inv_norm[e] = 1.0 / norm;
    col.kr[e] = 2.0 * (ai * aj) * (ai * aj) * hr;
    col.ks[e] = 2.0 * (bi * bj) * (bi * bj) * hs;
    col.dni[e] = floored ? 0.0 : 2.0 * (bi - ai) * (bj * bj + aj * aj);
    col.dnj[e] = floored ? 0.0 : 2.0 * (bj - aj) * ni;
    col.dsi0[e] = -2.0 * ai * (aj * aj) * (hr * hr) + 2.0 * bi * (bj * bj) * (hs * hs);
    col.dsi1[e] = 2.0 * (aj * bj);
    col.dsi2[e] = ai - bi;
    col.dsj0[e] = -2.0 * aj * (ai * ai) * (hr * hr) + 2.0 * bj * (bi * bi) * (hs * hs);
    col.dsj1[e] = 2.0 * (ai * bi);
    col.dsj2[e] = aj - bj;
  }
}

HOMODYNE_SIMD_CLONES void Differences(const double* __restrict x, double xi, double* __restrict out,
                                      int n) {
  for (int e = 0; e < n; ++e) out[e] = x[e] - xi;
}

// The phase's cosine (and sine) of n columns: the array sine/cosine within ~2 ulp, or libm's,
// whose bits are the reference model's (KernelOptions::exact_transcendentals).
inline void PhaseSinCos(bool exact, const double* theta, double* sn, double* cs, int n,
                        bool with_sine) {
  if (exact) {
    for (int col = 0; col < n; ++col) {
      cs[col] = std::cos(theta[col]);
      if (with_sine) sn[col] = std::sin(theta[col]);
    }
  } else {
    FastSinCos(theta, sn, cs, n);
  }
}

void HeterodyneKernel::Impl::RunChunk(const Tables& tab, int c, double* part, double* model) const {
  const double inv_sigma = 1.0 / options.sigma;
  const double half_q2 = -0.5 * tab.q2;
  thread_local ColumnTerms ct;
  for (int gidx = chunk_begin[static_cast<std::size_t>(c)];
       gidx < chunk_begin[static_cast<std::size_t>(c) + 1]; ++gidx) {
    const Group& grp = groups[static_cast<std::size_t>(gidx)];
    const auto i = static_cast<std::size_t>(grp.row);
    const int n = grp.count;
    ct.Resize(n);
    HalfDecays(tab, 0, i, grp.col_begin, n, half_q2, ct.hr.data(), nullptr);
    HalfDecays(tab, 1, i, grp.col_begin, n, half_q2, ct.hs.data(), nullptr);
    const auto j0 = static_cast<std::size_t>(grp.col_begin);
    ColumnsAt(tab.fs.data() + j0, tab.fs[i], tab.p[2].data() + j0, tab.p[2][i], ct.hr.data(),
              ct.hs.data(), ct.rr.data(), ct.ss.data(), ct.m2.data(), ct.norm.data(), ct.v.data(),
              n);
    for (int ti : grp.tiles) {
      const RowTile& tile = tiles[static_cast<std::size_t>(ti)];
      const auto k = static_cast<std::size_t>(tile.angle);
      const double a = tab.a[k];
      const int ns = SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, n);
      if (ns > 0) {
        const std::size_t at = k * tab.n_t;
        const double* tc = tab.cos_x.data() + at;
        const double* ts = tab.sin_x.data() + at;
        SeparableCos(tc + grp.col_begin, ts + grp.col_begin, tc[i], ts[i], ct.cos_theta.data(), ns);
      }
      for (int col = ns; col < n; ++col) {
        ct.theta[static_cast<std::size_t>(col)] = a * ct.v[static_cast<std::size_t>(col)];
      }
      PhaseSinCos(options.exact_transcendentals, ct.theta.data() + ns, ct.sin_theta.data() + ns,
                  ct.cos_theta.data() + ns, n - ns, false);
      const double contrast = tab.contrast[k];
      const double offset = tab.offset[k];
      double* c2 = ct.c2.data();
      for (int col = 0; col < n; ++col) {
        const auto e = static_cast<std::size_t>(col);
        const double sum = ct.rr[e] + ct.ss[e] + ct.m2[e] * ct.hr[e] * ct.hs[e] * ct.cos_theta[e];
        c2[col] = offset + (contrast * sum) / ct.norm[e];
      }
      if (model != nullptr) {
        std::copy(c2, c2 + n, model + tile_offset[static_cast<std::size_t>(ti)]);
        continue;
      }
      // Residuals and χ² terms (0 at masked points, whatever their data), summed in four
      // fixed lanes: vectorisable, and the same order for every pass and thread count (the
      // derivative passes sum the same terms in the same lanes, detail::HetTileDerivatives).
      double* r = ct.r.data();
      double* term = ct.theta.data();  // the phases are no longer needed
      const double* data = tile.data;
      if (options.loss.robust()) {
        const int kind = static_cast<int>(options.loss.kind);
        const double inv_scale = 1.0 / options.loss.f_scale;
        const double scale_sq = options.loss.f_scale * options.loss.f_scale;
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          const double w = tile.weight != nullptr ? tile.weight[col] : tile.uniform_weight;
          term[col] =
              w != 0.0 ? detail::HetRobustPoint(kind, inv_scale, scale_sq, w, r[col]).term : 0.0;
        }
      } else if (tile.weight != nullptr) {
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          const double w = tile.weight[col];
          term[col] = w != 0.0 ? w * r[col] * r[col] : 0.0;
        }
      } else {
        const double w = tile.uniform_weight;
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          term[col] = w != 0.0 ? w * r[col] * r[col] : 0.0;
        }
      }
      double lane[4] = {0.0, 0.0, 0.0, 0.0};
      int col4 = 0;
      for (; col4 + 4 <= n; col4 += 4) {
        for (int l = 0; l < 4; ++l) lane[l] += term[col4 + l];
      }
      for (int l = 0; col4 + l < n; ++l) lane[l] += term[col4 + l];
      part[0] += (lane[0] + lane[1]) + (lane[2] + lane[3]);
    }
  }
}

// Per-thread buffers of the derivative passes.
struct DerivScratch {
  detail::HetBlockColumns col;
  detail::HetBlockSums sums;
  detail::HetTileScratch tile[detail::kHetTileBatch];
  alignas(64) double theta[detail::kHetBlock], sin_theta[detail::kHetBlock],
      cos_theta[detail::kHetBlock];
  std::vector<double> chi2_lanes;  // 4 per tile of the group
  std::vector<int> separable_end;  // per tile of the group: SeparablePhaseEnd
};

template <Pass P>
void HeterodyneKernel::Impl::RunDerivChunk(const Tables& tab, int c, double* part) const {
  using detail::kHetBlock;
  constexpr bool kNormal = P == Pass::kNormal;
  const double inv_sigma = 1.0 / options.sigma;
  const double half_q2 = -0.5 * tab.q2;
  thread_local std::unique_ptr<DerivScratch> scratch;
  if (!scratch) scratch = std::make_unique<DerivScratch>();
  DerivScratch& sc = *scratch;
  detail::HetBlockColumns& col = sc.col;
  double* jtj = kNormal ? part + 1 : nullptr;
  double* jtr = part + 1 + (kNormal ? kNp * kNp : 0);
  double tile_sums[detail::kHetTileSums];
  for (int gidx = chunk_begin[static_cast<std::size_t>(c)];
       gidx < chunk_begin[static_cast<std::size_t>(c) + 1]; ++gidx) {
    const Group& grp = groups[static_cast<std::size_t>(gidx)];
    const auto i = static_cast<std::size_t>(grp.row);
    const double bi = tab.fs[i];
    sc.chi2_lanes.assign(4 * grp.tiles.size(), 0.0);
    sc.separable_end.resize(grp.tiles.size());
    for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
      const auto k = static_cast<std::size_t>(tiles[static_cast<std::size_t>(grp.tiles[t])].angle);
      sc.separable_end[t] = SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, grp.count);
    }
    for (int d = 0; d < 4; ++d) col.fi[d] = tab.dfs[d][i];
    for (int b0 = 0; b0 < grp.count; b0 += kHetBlock) {
      const int nb = std::min(kHetBlock, grp.count - b0);
      col.n = nb;
      HalfDecays(tab, 0, i, grp.col_begin + b0, nb, half_q2, col.hr, col.dhr);
      HalfDecays(tab, 1, i, grp.col_begin + b0, nb, half_q2, col.hs, col.dhs);
      const auto j0 = static_cast<std::size_t>(grp.col_begin + b0);
      DerivColumnsAt(tab.fs.data() + j0, bi, tab.p[2].data() + j0, tab.p[2][i], col, nb);
      for (int r = 0; r < 3; ++r) {
        for (int d = 0; d < 3; ++d) {
          const std::vector<double>& x = tab.dp[r][d];
          Differences(x.data() + j0, x[i], col.dp[3 * r + d], nb);
        }
      }
      for (int d = 0; d < 4; ++d) std::copy_n(tab.dfs[d].data() + j0, nb, col.fj[d]);
      // The fold reads whole lanes: zero the column vectors beyond the block, and the sums.
      const int padded = (nb + detail::kHetLanes - 1) / detail::kHetLanes * detail::kHetLanes;
      for (int e = nb; e < padded; ++e) {
        col.v[e] = 0.0;
        for (auto& x : col.dp) x[e] = 0.0;
        for (auto& x : col.fj) x[e] = 0.0;
      }
      for (auto& x : sc.sums.t) std::fill(x, x + padded, 0.0);
      if constexpr (kNormal) {
        for (auto& x : sc.sums.s) std::fill(x, x + padded, 0.0);
      }
      const detail::HetTileScratch* batch[detail::kHetTileBatch];
      int in_batch = 0;
      for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
        const int ti = grp.tiles[t];
        const RowTile& tile = tiles[static_cast<std::size_t>(ti)];
        const auto k = static_cast<std::size_t>(tile.angle);
        const double a = tab.a[k];
        const int ns = std::clamp(sc.separable_end[t] - b0, 0, nb);
        if (ns > 0) {
          const std::size_t at = k * tab.n_t;
          const double* tc = tab.cos_x.data() + at;
          const double* ts = tab.sin_x.data() + at;
          SeparableSinCos(tc + j0, ts + j0, tc[i], ts[i], sc.sin_theta, sc.cos_theta, ns);
        }
        for (int e = ns; e < nb; ++e) sc.theta[e] = a * col.v[e];
        PhaseSinCos(options.exact_transcendentals, sc.theta + ns, sc.sin_theta + ns,
                    sc.cos_theta + ns, nb - ns, true);
        detail::HetTileInput in;
        in.data = tile.data + b0;
        in.weight = tile.weight != nullptr ? tile.weight + b0 : nullptr;
        in.uniform_weight = tile.uniform_weight;
        in.contrast = tab.contrast[k];
        in.offset = tab.offset[k];
        in.inv_sigma = inv_sigma;
        in.a = a;
        in.da = tab.da[k];
        in.cos_theta = sc.cos_theta;
        in.sin_theta = sc.sin_theta;
        in.chi2_lanes = sc.chi2_lanes.data() + 4 * t;
        if (options.loss.robust()) {
          in.loss = static_cast<int>(options.loss.kind);
          in.loss_inv_scale = 1.0 / options.loss.f_scale;
          in.loss_scale_sq = options.loss.f_scale * options.loss.f_scale;
        }
        // This tile's next block of data (and weights): the angles' rows are far apart in
        // memory, more streams than the hardware prefetcher follows.
        const int next = b0 + kHetBlock;
        for (int e = next; e < std::min(next + kHetBlock, grp.count); e += 8) {
          __builtin_prefetch(tile.data + e);
          if (tile.weight != nullptr) __builtin_prefetch(tile.weight + e);
        }
        detail::HetTileScratch& ts = sc.tile[in_batch];
        detail::HetTileDerivatives(col, in, ts, tile_sums, kNormal);
        batch[in_batch++] = &ts;
        if (in_batch == detail::kHetTileBatch || t + 1 == grp.tiles.size()) {
          detail::HetAddTiles(nb, batch, in_batch, sc.sums, kNormal);
          in_batch = 0;
        }
        const double uo = inv_sigma;
        if constexpr (kNormal) {
          double* ang = part + 1 + kNp * kNp + kNp + static_cast<std::ptrdiff_t>(k) * (5 + 2 * kNp);
          ang[0] += tile_sums[0];
          ang[1] += tile_sums[1] * uo;
          ang[2] += tile_sums[2] * (uo * uo);
          ang[3] += tile_sums[3];
          ang[4] += tile_sums[4] * uo;
          for (int p = 0; p < 10; ++p) {
            const int param = p < 9 ? p : het::kPhi0Het;
            ang[5 + param] += tile_sums[5 + 2 * p];
            ang[5 + kNp + param] += tile_sums[6 + 2 * p] * uo;
          }
          for (int d = 0; d < 4; ++d) {
            ang[5 + het::kF0 + d] += col.fi[d] * tile_sums[25] + tile_sums[27 + d];
            ang[5 + kNp + het::kF0 + d] += (col.fi[d] * tile_sums[26] + tile_sums[31 + d]) * uo;
          }
        } else {
          double* ang = part + 1 + kNp + 2 * static_cast<std::ptrdiff_t>(k);
          ang[0] += tile_sums[3];
          ang[1] += tile_sums[4] * uo;
        }
      }
      detail::HetFoldBlock(col, sc.sums, jtj, jtr);
    }
    for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
      const double* lane = sc.chi2_lanes.data() + 4 * t;
      part[0] += (lane[0] + lane[1]) + (lane[2] + lane[3]);
    }
  }
}

bool HeterodyneKernel::Impl::Partials(std::span<const double> params, Pass pass, double* out,
                                      const std::function<bool()>& stop) const {
  const Tables tab = MakeTables(params, pass != Pass::kChi2);
  const int n_chunks = static_cast<int>(chunk_begin.size()) - 1;
  const std::size_t psize = PartialSize(pass);
  std::atomic<bool> stopped{false};
  pool->ParallelFor(n_chunks, [&](int c) {
    if (stop && (stopped.load(std::memory_order_relaxed) || stop())) {
      stopped.store(true, std::memory_order_relaxed);
      return;
    }
    // Summed in the thread's own buffer: neighbouring chunks' partials share cache lines
    // (the χ² pass's are one double each), and writing them point by point from two
    // threads made two threads slower than one.
    thread_local std::vector<double> local;
    local.assign(psize, 0.0);
    switch (pass) {
      case Pass::kChi2:
        RunChunk(tab, c, local.data(), nullptr);
        break;
      case Pass::kGradient:
        RunDerivChunk<Pass::kGradient>(tab, c, local.data());
        break;
      case Pass::kNormal:
        RunDerivChunk<Pass::kNormal>(tab, c, local.data());
        break;
    }
    std::copy(local.begin(), local.end(), out + static_cast<std::size_t>(c) * psize);
  });
  return !stopped.load();
}

std::vector<double> HeterodyneKernel::Impl::Reduce(std::span<const double> params,
                                                   Pass pass) const {
  const std::size_t psize = PartialSize(pass);
  const auto n_chunks = static_cast<std::size_t>(chunk_begin.size() - 1);
  std::vector<double> partials(n_chunks * psize);
  Partials(params, pass, partials.data(), {});
  std::vector<double> total(psize, 0.0);
  for (std::size_t c = 0; c < n_chunks; ++c) {
    for (std::size_t e = 0; e < psize; ++e) total[e] += partials[c * psize + e];
  }
  return total;
}

HeterodyneKernel::HeterodyneKernel(HeterodyneGrid grid, std::vector<RowTile> tiles,
                                   KernelOptions options)
    : impl_(std::make_unique<Impl>()) {
  options.Validate();

  Impl& im = *impl_;
  if (grid.t.empty()) ThrowBadInput("the two-component kernel needs a non-empty time grid");
  if (grid.phi_deg.empty()) ThrowBadInput("the two-component kernel needs at least one angle");
  if (!(grid.dt > 0.0) || !std::isfinite(grid.dt)) {
    ThrowBadInput(fmt::format("dt must be a finite number > 0, found {}", grid.dt));
  }
  im.grid = std::move(grid);
  im.tiles = std::move(tiles);
  im.options = options;
  im.index.n_angles = static_cast<int>(im.grid.phi_deg.size());
  im.index.n_phys = kNp;
  const int n_t = static_cast<int>(im.grid.t.size());
  const auto& starts = options.chunk_tile_starts;
  if (!starts.empty() && (starts.front() != 0 || !std::is_sorted(starts.begin(), starts.end()) ||
                          starts.back() > static_cast<int>(im.tiles.size()))) {
    ThrowBadInput("chunk_tile_starts must start at 0, increase, and stay within the tiles");
  }
  std::vector<int> chunk_of(im.tiles.size(), 0);
  for (std::size_t c = 0; c < starts.size(); ++c) {
    const int end = c + 1 < starts.size() ? starts[c + 1] : static_cast<int>(im.tiles.size());
    for (int ti = starts[c]; ti < end; ++ti)
      chunk_of[static_cast<std::size_t>(ti)] = static_cast<int>(c);
  }
  std::map<std::tuple<int, int, int, int>, int> group_of;
  std::vector<int> group_chunk;
  for (std::size_t ti = 0; ti < im.tiles.size(); ++ti) {
    const RowTile& tile = im.tiles[ti];
    if (tile.angle < 0 || tile.angle >= im.index.n_angles || tile.row < 0 || tile.row >= n_t ||
        tile.count < 0 || tile.col_begin < 0 || tile.col_begin + tile.count > n_t ||
        (tile.count > 0 && tile.data == nullptr)) {
      ThrowBadInput(fmt::format(
          "row tile {} is invalid (angle {}, row {}, columns {}+{}, {} angles, {} times, data {})",
          ti, tile.angle, tile.row, tile.col_begin, tile.count, im.index.n_angles, n_t,
          tile.data != nullptr ? "set" : "missing"));
    }
    im.tile_offset.push_back(im.n_points);
    im.n_points += tile.count;
    if (tile.count == 0) continue;
    const auto key = std::make_tuple(chunk_of[ti], tile.row, tile.col_begin, tile.count);
    auto [it, inserted] = group_of.emplace(key, static_cast<int>(im.groups.size()));
    if (inserted) {
      im.groups.push_back({tile.row, tile.col_begin, tile.count, {}});
      group_chunk.push_back(chunk_of[ti]);
    }
    im.groups[static_cast<std::size_t>(it->second)].tiles.push_back(static_cast<int>(ti));
  }
  im.chunk_begin.push_back(0);
  if (!starts.empty()) {
    std::size_t g = 0;
    for (std::size_t c = 0; c < starts.size(); ++c) {
      while (g < im.groups.size() && group_chunk[g] == static_cast<int>(c)) ++g;
      im.chunk_begin.push_back(static_cast<int>(g));
    }
  } else {
    std::int64_t in_chunk = 0;
    for (std::size_t g = 0; g < im.groups.size(); ++g) {
      in_chunk += static_cast<std::int64_t>(im.groups[g].count) *
                  static_cast<std::int64_t>(im.groups[g].tiles.size());
      if (in_chunk >= options.chunk_points) {
        im.chunk_begin.push_back(static_cast<int>(g + 1));
        in_chunk = 0;
      }
    }
    if (im.chunk_begin.back() != static_cast<int>(im.groups.size())) {
      im.chunk_begin.push_back(static_cast<int>(im.groups.size()));
    }
  }
  im.pool = std::make_unique<ThreadPool>(options.threads, options.worker_start);
}

HeterodyneKernel::~HeterodyneKernel() = default;

const ExpandedIndex& HeterodyneKernel::index() const { return impl_->index; }
std::int64_t HeterodyneKernel::num_points() const { return impl_->n_points; }
void HeterodyneKernel::SetLoss(const RobustLoss& loss) {
  loss.Validate();
  impl_->options.loss = loss;
}
const RobustLoss& HeterodyneKernel::loss() const { return impl_->options.loss; }

int HeterodyneKernel::num_chunks() const { return static_cast<int>(impl_->chunk_begin.size()) - 1; }

std::size_t HeterodyneKernel::partial_size(bool with_derivatives) const {
  return impl_->PartialSize(with_derivatives ? Pass::kNormal : Pass::kChi2);
}

bool HeterodyneKernel::ChunkPartials(std::span<const double> params, bool with_derivatives,
                                     std::span<double> out,
                                     const std::function<bool()>& stop) const {
  const std::size_t need = static_cast<std::size_t>(num_chunks()) * partial_size(with_derivatives);
  if (out.size() != need) {
    ThrowBadInput(fmt::format("chunk partials need {} entries, found {}", need, out.size()));
  }
  return impl_->Partials(params, with_derivatives ? Pass::kNormal : Pass::kChi2, out.data(), stop);
}

double HeterodyneKernel::Chi2(std::span<const double> params) const {
  return impl_->Reduce(params, Pass::kChi2)[0];
}

NormalEquations HeterodyneKernel::Accumulate(std::span<const double> params) const {
  return FromPartial(impl_->Reduce(params, Pass::kNormal));
}

double HeterodyneKernel::Gradient(std::span<const double> params, std::span<double> jtr) const {
  const ExpandedIndex& idx = impl_->index;
  if (static_cast<int>(jtr.size()) != idx.size()) {
    ThrowBadInput(fmt::format("the gradient needs {} entries, found {}", idx.size(), jtr.size()));
  }
  return GradientFromCompact(idx, impl_->Reduce(params, Pass::kGradient), jtr);
}

NormalEquations HeterodyneKernel::FromPartial(std::span<const double> total) const {
  return NormalEquationsFromCompact(impl_->index, total);
}

void HeterodyneKernel::EvaluateModel(std::span<const double> params, std::span<double> out) const {
  const Impl& im = *impl_;
  if (static_cast<std::int64_t>(out.size()) != im.n_points) {
    ThrowBadInput(fmt::format("the model needs {} entries, found {}", im.n_points, out.size()));
  }
  if (im.tiles.empty()) return;
  const Tables tab = im.MakeTables(params, false);
  const int n_chunks = num_chunks();
  im.pool->ParallelFor(n_chunks, [&](int c) { im.RunChunk(tab, c, nullptr, out.data()); });
}

std::int64_t HeterodyneKernel::CountSeparable(std::span<const double> params) const {
  const Impl& im = *impl_;
  const Tables tab = im.MakeTables(params, false);
  std::int64_t count = 0;
  for (const Group& grp : im.groups) {
    for (int ti : grp.tiles) {
      const auto k = static_cast<std::size_t>(im.tiles[static_cast<std::size_t>(ti)].angle);
      count += SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, grp.count);
    }
  }
  return count;
}

HeterodyneKernel::DecayCounts HeterodyneKernel::CountSeparableDecay(
    std::span<const double> params) const {
  const Impl& im = *impl_;
  const Tables tab = im.MakeTables(params, false);
  DecayCounts counts;
  for (const Group& grp : im.groups) {
    const auto tiles = static_cast<std::int64_t>(grp.tiles.size());
    for (const Tables::DecayFactors& d : tab.decay) {
      const DecaySegments sg =
          SegmentsOf(d, static_cast<std::size_t>(grp.row), grp.col_begin, grp.count);
      counts.factorised += tiles * (sg.fb - sg.fa);
      counts.clipped += tiles * (grp.col_begin + grp.count - sg.clip);
    }
  }
  return counts;
}

}  // namespace homodyne::model
