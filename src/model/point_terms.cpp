#include "point_terms.h"

#include <cstdint>
#include <cstring>

#include "homodyne/model/constants.h"
#include "simd_clones.h"

// The 4-lane vector type is passed between always-inline helpers only; the baseline clone
// (no AVX) would pass it in memory, which GCC notes as an ABI change.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace homodyne::model::detail {
namespace {

typedef double V4 __attribute__((vector_size(32)));
typedef std::int64_t M4 __attribute__((vector_size(32)));

__attribute__((always_inline)) inline V4 Splat(double x) { return V4{x, x, x, x}; }

__attribute__((always_inline)) inline V4 Load(const double* p) {
  V4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

__attribute__((always_inline)) inline void Store(double* p, V4 v) { std::memcpy(p, &v, sizeof(v)); }

__attribute__((always_inline)) inline double Fold(V4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// Where(m, a, b): a in the lanes where m is set, else b.
__attribute__((always_inline)) inline V4 Where(M4 m, V4 a, V4 b) { return m ? a : b; }

// The terms of four points (columns c … c + 3).
struct Lanes {
  V4 w, r0, r, uc, alpha, beta, gamma;  // r0 = σ·r: the residual before the 1/σ scaling
};

// The block's scalars, broadcast once per block (not per vector).
struct Consts {
  V4 floor, offset, contrast, two_contrast, inv_sigma, a, b, uniform_weight;  // PointBlock
  V4 ci, si, row_a, inv_a;                                                    // SeparableRow fields
  explicit Consts(const PointBlock& in)
      : floor(Splat(kG1Floor)),
        offset(Splat(in.offset)),
        contrast(Splat(in.contrast)),
        two_contrast(Splat(in.contrast) * Splat(2.0)),
        inv_sigma(Splat(in.inv_sigma)),
        a(Splat(in.a)),
        b(Splat(in.b)),
        uniform_weight(Splat(in.uniform_weight)),
        ci(Splat(in.sep.ci)),
        si(Splat(in.sep.si)),
        row_a(Splat(in.sep.a)),
        inv_a(Splat(in.sep.inv_a)) {}
};

// The columns' data and weights; the block's last vector may be partial (lanes ≥ n get
// weight 0 and data 0).
struct Inputs {
  V4 d, w;
};

template <bool kWhole>  // kWhole: c + 4 ≤ n
__attribute__((always_inline)) inline Inputs LoadInputs(const PointBlock& in, const Consts& k,
                                                        int c) {
  Inputs x;
  if (kWhole) {
    x.d = Load(in.data + c);
    x.w = in.weight != nullptr ? Load(in.weight + c) : k.uniform_weight;
    return x;
  }
  alignas(32) double d[4] = {}, w[4] = {};
  for (int l = 0; c + l < in.n; ++l) {
    d[l] = in.data[c + l];
    w[l] = in.weight != nullptr ? in.weight[c + l] : in.uniform_weight;
  }
  x.d = Load(d);
  x.w = Load(w);
  return x;
}

// sinc² and its x-derivative of four separable columns (SeparableSinCos and
// SeparableShearFactorsWithDerivative of separable.h/.cpp, four lanes at a time).
__attribute__((always_inline)) inline void SeparableLanes(const SeparableRow& row, const Consts& k,
                                                          int c, V4& s, V4& ds) {
  const V4 ts = Load(row.tab_sin + c), tc = Load(row.tab_cos + c);
  const V4 s0 = ts * k.ci - tc * k.si;
  const V4 c0 = tc * k.ci + ts * k.si;
  const V4 psi = k.row_a * Load(row.shift + c);
  const V4 sn = s0 + psi * c0;
  const V4 cs = c0 - psi * s0;
  const V4 inv_x = k.inv_a * Load(row.inv_ig + c);
  const V4 sinc = sn * inv_x;
  s = sinc * sinc;
  ds = Splat(2.0) * sinc * ((cs - sinc) * inv_x);
}

// The point terms of columns c … c + 3 from their sinc² s and its derivative ds (laminar):
// g1 = max(g1_diff·s, floor), c2, the residual r0 = d − c2 (0 where the weight is 0, even
// for non-finite data), and with kDerivs r = r0/σ, uc = g1²/σ and the derivative scalars
// α (diffusion), β (shear rate), γ (φ0).
template <bool kLaminar, bool kDerivs>
__attribute__((always_inline)) inline Lanes Terms(const PointBlock& in, const Consts& k, int c,
                                                  const Inputs& x, V4 s, V4 ds) {
  const V4 floor = k.floor;
  const V4 g1d = Load(in.g1d + c);
  const V4 g1_raw = kLaminar ? g1d * s : g1d;
  const M4 alive = g1_raw > floor;  // the g1 floor passes no gradient when selected
  const V4 g1 = Where(alive, g1_raw, floor);
  const V4 g1sq = g1 * g1;
  const V4 model = k.offset + k.contrast * g1sq;
  const V4 inv_sigma = k.inv_sigma;
  Lanes t;
  t.w = x.w;
  t.r0 = Where(x.w != Splat(0.0), x.d - model, Splat(0.0));
  if constexpr (kDerivs) {
    t.r = t.r0 * inv_sigma;
    t.uc = g1sq * inv_sigma;
    const V4 dc2_dg1 = Where(alive, k.two_contrast * g1 * inv_sigma, Splat(0.0));
    t.alpha = (kLaminar ? dc2_dg1 * s : dc2_dg1) * Load(in.fac + c);
    if constexpr (kLaminar) {
      const V4 ds_scaled = dc2_dg1 * g1d * ds;
      t.beta = ds_scaled * k.a;
      t.gamma = ds_scaled * k.b * Load(in.ig + c);
    }
  } else {
    (void)ds;
  }
  return t;
}

// Calls body(t, c) for the block's vectors in column order: the shear factors come from the
// caller's arrays outside [sep_lo, sep_hi) and from the separable path inside it.
template <bool kLaminar, bool kDerivs, typename Body>
__attribute__((always_inline)) inline void ForEachVector(const PointBlock& in, Body&& body) {
  const int n = in.n;
  const Consts k(in);
  const auto from_arrays = [&](int c, const Inputs& x) {
    if constexpr (kLaminar) {
      body(
          Terms<true, kDerivs>(in, k, c, x, Load(in.s + c), kDerivs ? Load(in.ds + c) : Splat(0.0)),
          c);
    } else {
      body(Terms<false, kDerivs>(in, k, c, x, Splat(1.0), Splat(0.0)), c);
    }
  };
  // [lo, hi) is empty or a range of whole vectors.
  const int lo = kLaminar && in.sep_lo < in.sep_hi ? in.sep_lo : 0;
  const int hi = kLaminar && in.sep_lo < in.sep_hi ? in.sep_hi : 0;
  int c = 0;
  for (; c < lo; c += 4) from_arrays(c, LoadInputs<true>(in, k, c));
  if constexpr (kLaminar) {
    const SeparableRow row = in.sep;
    for (; c < hi; c += 4) {
      V4 s, ds;
      SeparableLanes(row, k, c, s, ds);
      body(Terms<true, kDerivs>(in, k, c, LoadInputs<true>(in, k, c), s, ds), c);
    }
  }
  for (; c + 4 <= n; c += 4) from_arrays(c, LoadInputs<true>(in, k, c));
  if (c < n) from_arrays(c, LoadInputs<false>(in, k, c));
}

// In-place update of a per-column sum array: p[c … c + 3] += v.
__attribute__((always_inline)) inline void AddTo(double* p, V4 v) { Store(p, Load(p) + v); }

// χ² of a tile, the same in every pass: lanes of Σ w·r0² (Σ r0² under a uniform weight, whose
// w and 1/σ² are applied once to the tile's sum).
template <bool kUniform>
__attribute__((always_inline)) inline void AddChi2(V4& acc, const Lanes& t) {
  acc += (kUniform ? t.r0 : t.w * t.r0) * t.r0;
}
template <bool kUniform>
__attribute__((always_inline)) inline double Chi2Sum(V4 acc, const PointBlock& in) {
  const double scale = in.inv_sigma * in.inv_sigma;
  return kUniform ? Fold(acc) * (in.uniform_weight * scale) : Fold(acc) * scale;
}

template <bool kLaminar, bool kUniform>
__attribute__((always_inline)) inline void Normal(const PointBlock& in, double* sums) {
  V4 acc[kNumTileSums];
  for (auto& v : acc) v = Splat(0.0);
  ForEachVector<kLaminar, true>(in, [&](const Lanes& t, int c) {
    const V4 wa = t.w * t.alpha;
    // Per-column sums over the angles.
    AddTo(in.saa + c, wa * t.alpha);
    AddTo(in.sar + c, wa * t.r);
    if constexpr (kLaminar) {
      const V4 wb = t.w * t.beta;
      const V4 wg = t.w * t.gamma;
      AddTo(in.sab + c, wa * t.beta);
      AddTo(in.sbb + c, wb * t.beta);
      AddTo(in.sag + c, wa * t.gamma);
      AddTo(in.sbg + c, wb * t.gamma);
      AddTo(in.sgg + c, wg * t.gamma);
      AddTo(in.sbr + c, wb * t.r);
      AddTo(in.sgr + c, wg * t.r);
    }
    // Per-tile sums.
    const V4 wr = t.w * t.r, wuc = t.w * t.uc, wuca = wuc * t.alpha;
    AddChi2<kUniform>(acc[kSumChi2], t);
    acc[kSumUcUc] += wuc * t.uc;
    acc[kSumUc] += wuc;
    acc[kSumW] += t.w;
    acc[kSumUcR] += t.uc * wr;
    acc[kSumR] += wr;
    for (int q = 0; q < 3; ++q) {
      const V4 e = Load(in.e[q] + c);
      acc[kSumUcAlphaE + q] += wuca * e;
      acc[kSumAlphaE + q] += wa * e;
    }
    if constexpr (kLaminar) {
      const V4 wb = t.w * t.beta, wucb = wuc * t.beta;
      for (int q = 0; q < 3; ++q) {
        const V4 f = Load(in.f[q] + c);
        acc[kSumUcBetaF + q] += wucb * f;
        acc[kSumBetaF + q] += wb * f;
      }
      acc[kSumUcGamma] += wuc * t.gamma;
      acc[kSumGamma] += t.w * t.gamma;
    }
  });
  sums[kSumChi2] += Chi2Sum<kUniform>(acc[kSumChi2], in);
  for (int k = kSumChi2 + 1; k < kNumTileSums; ++k) sums[k] += Fold(acc[k]);
}

template <bool kLaminar, bool kUniform>
__attribute__((always_inline)) inline void Gradient(const PointBlock& in, double* sums) {
  V4 chi2 = Splat(0.0), ucr = chi2, rsum = chi2;
  ForEachVector<kLaminar, true>(in, [&](const Lanes& t, int c) {
    const V4 wa = t.w * t.alpha;
    AddTo(in.sar + c, wa * t.r);
    if constexpr (kLaminar) {
      const V4 wb = t.w * t.beta;
      const V4 wg = t.w * t.gamma;
      AddTo(in.sbr + c, wb * t.r);
      AddTo(in.sgr + c, wg * t.r);
    }
    const V4 wr = t.w * t.r;
    AddChi2<kUniform>(chi2, t);
    ucr += t.uc * wr;
    rsum += wr;
  });
  sums[kSumChi2] += Chi2Sum<kUniform>(chi2, in);
  sums[kSumUcR] += Fold(ucr);
  sums[kSumR] += Fold(rsum);
}

template <bool kLaminar, bool kUniform>
__attribute__((always_inline)) inline double Chi2(const PointBlock& in) {
  V4 acc = Splat(0.0);
  ForEachVector<kLaminar, false>(in, [&](const Lanes& t, int) { AddChi2<kUniform>(acc, t); });
  return Chi2Sum<kUniform>(acc, in);
}

// A uniform weight of 0 takes the weighted form (its residuals are masked to 0).
inline bool Uniform(const PointBlock& in) {
  return in.weight == nullptr && in.uniform_weight != 0.0;
}

}  // namespace

HOMODYNE_SIMD_CLONES void GradientLaminarBlock(const PointBlock& in, double* sums) {
  Uniform(in) ? Gradient<true, true>(in, sums) : Gradient<true, false>(in, sums);
}

HOMODYNE_SIMD_CLONES void GradientStaticBlock(const PointBlock& in, double* sums) {
  Uniform(in) ? Gradient<false, true>(in, sums) : Gradient<false, false>(in, sums);
}

HOMODYNE_SIMD_CLONES void NormalLaminarBlock(const PointBlock& in, double* sums) {
  Uniform(in) ? Normal<true, true>(in, sums) : Normal<true, false>(in, sums);
}

HOMODYNE_SIMD_CLONES void NormalStaticBlock(const PointBlock& in, double* sums) {
  Uniform(in) ? Normal<false, true>(in, sums) : Normal<false, false>(in, sums);
}

HOMODYNE_SIMD_CLONES double Chi2Block(const PointBlock& in) {
  if (in.s != nullptr) return Uniform(in) ? Chi2<true, true>(in) : Chi2<true, false>(in);
  return Uniform(in) ? Chi2<false, true>(in) : Chi2<false, false>(in);
}

}  // namespace homodyne::model::detail
