// The point loops of the kernel (private to src/model), compiled three times (by
// point_terms.cpp, point_terms_avx2.cpp and point_terms_avx512.cpp) over the vector type and
// primitives of point_vector_impl.h, which describes the copies and the macros to define
// before including this file. All copies give the same bits.
#include "point_vector_impl.h"

namespace homodyne::model::detail::HOMODYNE_POINT_TERMS_NS {
namespace {

// The terms of the kLanes points of columns c … c + kLanes − 1.
struct Lanes {
  // r0 = d − c2 and g1sq = g1² before the 1/σ of the scaled residual r = r0/σ and of
  // uc = ∂c2/∂contrast/σ = g1²/σ, which the sums apply once (Normal, Gradient, FoldColumns).
  // Under a robust loss (kRobust): w is w·s² (every w·x·y of the Jacobian's products is
  // w·s²·x·y), r0 is the weighted residual w·ρ′·r0 (the residual's products x·r0 take no
  // further weight) and rho_w = w·ρ(z), the χ² lanes' term.
  V model, w, r0, g1sq, alpha, beta, gamma, rho_w;
};

// The block's scalars, broadcast once per block (not per vector).
struct Consts {
  V floor, offset, contrast, two_contrast_sigma, inv_sigma, a, b, uniform_weight, weight_scale;
  V ci, si, ci_a, neg_si_a, inv_a;  // SeparableRow's; ci·(1/a), −si·(1/a)
  V loss_inv_scale;
  const double* prefetch_data;  // PointBlock's, or the block's own arrays when unset
  const double* prefetch_weight;
  __attribute__((always_inline)) explicit Consts(const PointBlock& in)
      : floor(Splat(kG1Floor)),
        offset(Splat(in.offset)),
        contrast(Splat(in.contrast)),
        two_contrast_sigma(Splat(2.0 * in.contrast * in.inv_sigma)),
        inv_sigma(Splat(in.inv_sigma)),
        a(Splat(in.a)),
        b(Splat(in.b)),
        uniform_weight(Splat(in.uniform_weight)),
        weight_scale(Splat(in.weight_scale)),
        ci(Splat(in.sep.ci)),
        si(Splat(in.sep.si)),
        ci_a(Splat(in.sep.ci * in.sep.inv_a)),
        neg_si_a(Splat(-(in.sep.si * in.sep.inv_a))),
        inv_a(Splat(in.sep.inv_a)),
        loss_inv_scale(Splat(in.loss_inv_scale)),
        prefetch_data(in.prefetch_data != nullptr ? in.prefetch_data : in.data),
        prefetch_weight(in.prefetch_weight != nullptr ? in.prefetch_weight : in.weight) {}
};

// The columns' data and weights; the block's last vector may be partial (lanes ≥ n get
// weight 0 and data 0).
struct Inputs {
  V d, w;
};

template <bool kWhole>  // kWhole: c + kLanes ≤ n
__attribute__((always_inline)) inline Inputs LoadInputs(const PointBlock& in, const Consts& k,
                                                        int c) {
  Inputs x;
  if (kWhole) {
    __builtin_prefetch(k.prefetch_data + c, 0, 3);
    x.d = Load(in.data + c);
    if (in.weight != nullptr) {
      __builtin_prefetch(k.prefetch_weight + c, 0, 3);
      x.w = Load(in.weight + c) * k.weight_scale;
    } else {
      x.w = k.uniform_weight;
    }
    return x;
  }
  alignas(64) double d[kLanes] = {}, w[kLanes] = {};
  for (int l = 0; c + l < in.n; ++l) {
    d[l] = in.data[c + l];
    w[l] = in.weight != nullptr ? in.weight[c + l] * in.weight_scale : in.uniform_weight;
  }
  x.d = Load(d);
  x.w = Load(w);
  return x;
}

// kLanes separable columns, the angle-addition form of separable.h divided by a: with ψ = a·δ,
//   sin x/a ≈ S[j]·(ci/a + δ·si) + K[j]·(δ·ci − si/a),  cos x/a ≈ K[j]·(…) − S[j]·(…),
// and g1_diff·sinc² = (g1_diff/I_Γ²)·(sin x/a)² — six products per point where
// SeparableFactors and g1_diff·sinc² take eight (ψ, 1/x and sinc disappear). Rounding differs
// from the scalar form by a few ε relative, inside the factor 2 of margin of separable.h's
// bound. With kDerivs also sinc = (sin x/a)·(1/I_Γ), s = sinc² and
// d sinc²/dx = 2·sinc·(cos x − sinc)/x = 2·sinc·(cos x/a − sinc·(1/a))·(1/I_Γ).
template <bool kDerivs>
__attribute__((always_inline)) inline void SeparableLanes(const SeparableRow& row, const Consts& k,
                                                          int c, V& g1_raw, V& s, V& ds) {
  const V tab_sin = Load(row.tab_sin + c), tab_cos = Load(row.tab_cos + c);
  const V delta = Load(row.shift + c);
  const V ca = Fma(delta, k.si, k.ci_a);
  const V cb = Fma(delta, k.ci, k.neg_si_a);
  const V sn = Fma(tab_sin, ca, tab_cos * cb);
  g1_raw = Load(row.g1d_inv_ig2 + c) * (sn * sn);
  if constexpr (kDerivs) {
    const V inv_ig = Load(row.inv_ig + c);
    const V cs = tab_cos * ca - tab_sin * cb;
    const V sinc = sn * inv_ig;
    s = sinc * sinc;
    ds = (sinc + sinc) * ((cs - sinc * k.inv_a) * inv_ig);
  } else {
    (void)s;
    (void)ds;
  }
}

// The point terms of columns c … c + kLanes − 1 from g1_raw = g1_diff·sinc², sinc² s and its
// derivative ds (laminar; static: g1_raw = g1_diff): g1 = max(g1_raw, floor), c2, the
// residual r0 = d − c2 (kMask: 0 where the weight is 0, even for non-finite data; without
// kMask every lane has a nonzero weight), and with kDerivs g1² and the derivative scalars
// α (diffusion), β (shear rate), γ (φ0) of c2/σ, also 0 where the weight is 0 under kMask (so
// that the unit-weight sums, which take no weight products, skip those lanes). kRobust: the
// loss terms of Lanes (kMask is then set).
template <bool kLaminar, bool kDerivs, bool kMask, int kRobust = kLossNone>
__attribute__((always_inline)) inline Lanes Terms(const PointBlock& in, const Consts& k, int c,
                                                  const Inputs& x, V g1_raw, V s, V ds) {
  const V floor = k.floor;
  const V g1 = Max(g1_raw, floor);  // the g1 floor passes no gradient when selected
  const V g1sq = g1 * g1;
  const V model = k.offset + k.contrast * g1sq;  // unfused: exact mode gives the reference's bits
  Lanes t;
  t.model = model;
  t.w = x.w;
  t.r0 = kMask ? Where(x.w != Splat(0.0), x.d - model, Splat(0.0)) : x.d - model;
  if constexpr (kDerivs) {
    const V g1d = Load(in.g1d + c);
    const M alive = g1_raw > floor;
    const M live = kMask ? alive & (x.w != Splat(0.0)) : alive;
    t.g1sq = kMask ? Where(x.w != Splat(0.0), g1sq, Splat(0.0)) : g1sq;
    const V dc2_dg1 = Where(live, k.two_contrast_sigma * g1, Splat(0.0));  // ∂(c2/σ)/∂g1
    t.alpha = (kLaminar ? dc2_dg1 * s : dc2_dg1) * Load(in.fac + c);
    if constexpr (kLaminar) {
      const V ds_scaled = dc2_dg1 * g1d * ds;
      t.beta = ds_scaled * k.a;
      t.gamma = ds_scaled * k.b * Load(in.ig + c);
    }
  } else {
    (void)ds;
  }
  if constexpr (kRobust != kLossNone) {
    // Without kMask every weight is 1 (unit-weight block, whole vector): x.w·y = y, bit for
    // bit, so the products are skipped.
    V ws2, wr;
    LossStep<kDerivs, kMask, kRobust>(in.loss, k.loss_inv_scale, x.w, t.r0, t.rho_w, ws2, wr);
    if constexpr (kDerivs) {
      t.w = ws2;
      t.r0 = wr;
    }
  }
  return t;
}

// Calls body(t, c) for the block's vectors in column order: the shear factors come from the
// caller's arrays outside [sep_lo, sep_hi) and from the separable path inside it. kUnit:
// every weight of the block is 1 (UnitWeight), so only the partial last vector needs the mask.
template <bool kLaminar, bool kDerivs, bool kUnit, int kRobust = kLossNone, typename Body>
__attribute__((always_inline)) inline void ForEachVector(const PointBlock& in, Body&& body) {
  const int n = in.n;
  const Consts k(in);
  const auto from_arrays = [&]<bool kWhole>(int c) __attribute__((always_inline)) {
    const Inputs x = LoadInputs<kWhole>(in, k, c);
    constexpr bool kMask = !kUnit || !kWhole;
    if constexpr (kLaminar) {
      const V s = Load(in.s + c);
      body(Terms<true, kDerivs, kMask, kRobust>(in, k, c, x, Load(in.g1d + c) * s, s,
                                                kDerivs ? Load(in.ds + c) : Splat(0.0)),
           c);
    } else {
      body(Terms<false, kDerivs, kMask, kRobust>(in, k, c, x, Load(in.g1d + c), Splat(1.0),
                                                 Splat(0.0)),
           c);
    }
  };
  // The loops' llvm-mca region numbers (HOMODYNE_MCA_BEGIN): site · 64 + this id, site 1 the
  // χ² loop over separable columns, 2 the other passes' loop over them, 3 the loop over columns
  // from the arrays (bench/kernel_bounds.py picks each pass's loop by these numbers).
  constexpr int kId = (kLaminar ? 1 : 0) + (kDerivs ? 2 : 0) + (kUnit ? 4 : 0) + 8 * kRobust;
  // [lo, hi) is empty or a range of whole vectors.
  const int lo = kLaminar && in.sep_lo < in.sep_hi ? in.sep_lo : 0;
  const int hi = kLaminar && in.sep_lo < in.sep_hi ? in.sep_hi : 0;
  int c = 0;
  for (; c < lo; c += kLanes) from_arrays.template operator()<true>(c);
  if constexpr (kLaminar) {
    const SeparableRow row = in.sep;
    if (!kDerivs && c < hi) {
      // χ²: software-pipelined by one vector, the separable sine of the next vector computed in
      // the same step as the terms of this one (the loop is latency-bound: −4 % for the loop;
      // the normal-equation loop, short of registers, is 10 % slower so).
      V g1_raw, s, ds;
      SeparableLanes<kDerivs>(row, k, c, g1_raw, s, ds);
      for (; c + kLanes < hi; c += kLanes) {
        HOMODYNE_MCA_BEGIN(64 + kId);
        V g1_next, s_next, ds_next;
        SeparableLanes<kDerivs>(row, k, c + kLanes, g1_next, s_next, ds_next);
        body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                   ds),
             c);
        g1_raw = g1_next;
        s = s_next;
        ds = ds_next;
        HOMODYNE_MCA_END(64 + kId);
      }
      body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                 ds),
           c);
      c += kLanes;
    }
    for (; c < hi; c += kLanes) {
      HOMODYNE_MCA_BEGIN(128 + kId);
      V g1_raw, s, ds;
      SeparableLanes<kDerivs>(row, k, c, g1_raw, s, ds);
      body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                 ds),
           c);
      HOMODYNE_MCA_END(128 + kId);
    }
  }
  for (; c + kLanes <= n; c += kLanes) {
    HOMODYNE_MCA_BEGIN(192 + kId);
    from_arrays.template operator()<true>(c);
    HOMODYNE_MCA_END(192 + kId);
  }
  if (c < n) from_arrays.template operator()<false>(c);
}

// In-place update of a per-column sum array: p[c … c + kLanes − 1] += x·y, fused.
__attribute__((always_inline)) inline void AddProductTo(double* p, V x, V y) {
  Store(p, Fma(x, y, Load(p)));
}

// χ² of a tile, the same in every pass: lanes of Σ w·r0² (Σ r0² under unit weights), times
// 1/σ² once; under a robust loss lanes of Σ w·ρ(z), times C² once.
template <bool kUnit, int kRobust = kLossNone>
__attribute__((always_inline)) inline void AddChi2(Sum4& acc, const Lanes& t) {
  if constexpr (kRobust != kLossNone) {
    acc += t.rho_w;
  } else {
    acc.AddProduct(kUnit ? t.r0 : t.w * t.r0, t.r0);
  }
}
__attribute__((always_inline)) inline double Chi2Sum(Sum4 acc, const PointBlock& in) {
  if (in.loss != 0) return Fold(acc) * in.loss_scale_sq;
  return Fold(acc) * (in.inv_sigma * in.inv_sigma);
}
// The block's starting χ² lanes (PointBlock::chi2_lanes) and, at its end, the write-back.
__attribute__((always_inline)) inline Sum4 Chi2Start(const PointBlock& in) {
  if (in.chi2_lanes == nullptr) return Zero4();
  Sum4 acc;
  std::memcpy(&acc.v, in.chi2_lanes, sizeof(acc.v));
  return acc;
}
__attribute__((always_inline)) inline void Chi2Carry(const Sum4& acc, const PointBlock& in) {
  if (in.chi2_lanes != nullptr) std::memcpy(in.chi2_lanes, &acc.v, sizeof(acc.v));
}

// w·x, or x under unit weights (whose masked lanes Terms has set to 0) and the linear loss
// (a robust loss's w is w·s², never a unit weight).
template <bool kUnit, int kRobust>
__attribute__((always_inline)) inline V Weighted(const Lanes& t, V x) {
  return kUnit && kRobust == kLossNone ? x : t.w * x;
}
// The factor of t.r0 in a product w·x·r0 whose w·x is wx: wx, or x under a robust loss (whose
// t.r0 carries the weight, w·ρ′·r0).
template <int kRobust>
__attribute__((always_inline)) inline V ResidualFactor(V x, V wx) {
  return kRobust == kLossNone ? wx : x;
}
// Σ w·r0 lanes' operand: w·r0, r0 under unit weights, t.r0 itself under a robust loss.
template <bool kUnit, int kRobust>
__attribute__((always_inline)) inline V WeightedResidual(const Lanes& t) {
  return kRobust == kLossNone ? Weighted<kUnit, kRobust>(t, t.r0) : t.r0;
}

// A block's Jacobian rows between the sweeps of a robust normal pass (Normal): the derivative
// scalars, g1², the residual and the weight of every column.
struct RowBuffer {
  alignas(64) double alpha[kMaxBlock], beta[kMaxBlock], gamma[kMaxBlock], g1sq[kMaxBlock],
      r0[kMaxBlock], w[kMaxBlock];
};

// The loss step of Terms over a block's stored rows: ρ into the χ² lanes, and r0, w replaced by
// w·ρ′·r0 and w·s² (LossStep, as in Terms; under unit weights the products with w only where
// Terms masks: a partial last vector).
// soft_l1: every vector by the short series alone where the whole block lies on it
// (OnShortSeries: one branch per block, not a mispredicting one per vector).
template <bool kUnit, int kRobust>
__attribute__((always_inline)) inline void RobustRows(const PointBlock& in, RowBuffer& row,
                                                      Sum4& chi2) {
  const V inv_scale = Splat(in.loss_inv_scale);
  const auto sweep = [&]<bool kShort>() __attribute__((always_inline)) {
    const auto step = [&]<bool kMask>(int c) __attribute__((always_inline)) {
      V rho_w, ws2, wr;
      LossStep<true, kMask, kRobust, kShort>(in.loss, inv_scale, Load(row.w + c), Load(row.r0 + c),
                                             rho_w, ws2, wr);
      chi2 += rho_w;
      Store(row.w + c, ws2);
      Store(row.r0 + c, wr);
    };
    int c = 0;
    // Two vectors per iteration: the loop's count and branch once per two (a short loop).
#pragma GCC unroll 2
    for (; c + kLanes <= in.n; c += kLanes) step.template operator()<!kUnit>(c);
    if (c < in.n) step.template operator()<true>(c);
  };
  if (kRobust == kLossSoftL1 && OnShortSeries(row.r0, in.n, inv_scale)) {
    return sweep.template operator()<true>();
  }
  sweep.template operator()<false>();
}

template <bool kLaminar, bool kUnit, int kRobust = kLossNone>
__attribute__((always_inline)) inline void Normal(const PointBlock& in, double* sums) {
  Sum4 acc[kNumTileSums];
  for (auto& v : acc) v = Zero4();
  // The loop's sums in registers: four alone and eight pairs (Sum4Pair), copied into acc
  // after it; every sum takes the same operations in the same order as alone (the same bits).
  Sum4 chi2 = Chi2Start(in), wsum = Zero4(), ucg = wsum, gsum = wsum;
  Sum4Pair ucuc_ucr = ZeroPair(), uc_r = ZeroPair(), ae[3], bf[3];
  for (int q = 0; q < 3; ++q) ae[q] = bf[q] = ZeroPair();
  // A vector's sums in four parts, given the products they share: wa = w·α, wuc = w·uc,
  // wuca = w·uc·α, wr = the weighted residual (beta_f: laminar_flow only). body runs them in one
  // loop; the robust pass of the two-half copies in three sweeps (below). Each sum has its own
  // accumulator.
  const auto columns = [&](const Lanes& t, int c, V wa) __attribute__((always_inline)) {
    // Per-column sums over the angles.
    AddProductTo(in.saa + c, wa, t.alpha);
    AddProductTo(in.sar + c, ResidualFactor<kRobust>(t.alpha, wa), t.r0);
    if constexpr (kLaminar) {
      const V wb = Weighted<kUnit, kRobust>(t, t.beta);
      const V wg = Weighted<kUnit, kRobust>(t, t.gamma);
      AddProductTo(in.sab + c, wa, t.beta);
      AddProductTo(in.sbb + c, wb, t.beta);
      AddProductTo(in.sag + c, wa, t.gamma);
      AddProductTo(in.sbg + c, wb, t.gamma);
      AddProductTo(in.sgg + c, wg, t.gamma);
      AddProductTo(in.sbr + c, ResidualFactor<kRobust>(t.beta, wb), t.r0);
      AddProductTo(in.sgr + c, ResidualFactor<kRobust>(t.gamma, wg), t.r0);
    }
  };
  const auto tiles = [&](const Lanes& t, V wr, V wuc) __attribute__((always_inline)) {
    ucuc_ucr.AddProducts(wuc, t.g1sq, t.g1sq, wr);
    uc_r.Add(wuc, wr);
    if constexpr (!kUnit || kRobust != kLossNone) wsum += t.w;
  };
  const auto alpha_e = [&](int c, V wa, V wuca) __attribute__((always_inline)) {
    for (int q = 0; q < 3; ++q) {
      const V e = Load(in.e[q] + c);
      ae[q].AddProducts(wuca, e, wa, e);
    }
  };
  const auto beta_f = [&](const Lanes& t, int c, V wuc) __attribute__((always_inline)) {
    const V wb = Weighted<kUnit, kRobust>(t, t.beta), wucb = wuc * t.beta;
    for (int q = 0; q < 3; ++q) {
      const V f = Load(in.f[q] + c);
      bf[q].AddProducts(wucb, f, wb, f);
    }
    ucg.AddProduct(wuc, t.gamma);
    gsum += Weighted<kUnit, kRobust>(t, t.gamma);
  };
  const auto body = [&](const Lanes& t, int c) __attribute__((always_inline)) {
    const V wa = Weighted<kUnit, kRobust>(t, t.alpha);
    columns(t, c, wa);
    // Per-tile sums.
    const V wr = WeightedResidual<kUnit, kRobust>(t), wuc = Weighted<kUnit, kRobust>(t, t.g1sq),
            wuca = wuc * t.alpha;
    tiles(t, wr, wuc);
    alpha_e(c, wa, wuca);
    if constexpr (kLaminar) beta_f(t, c, wuc);
  };
  if constexpr (kRobust == kLossNone) {
    ForEachVector<kLaminar, true, kUnit>(in, [&](const Lanes& t, int c) {
      AddChi2<kUnit>(chi2, t);
      body(t, c);
    });
  } else {
    // Three sweeps over the block: the linear terms into a row buffer, the loss over the stored
    // residuals, the sums over the stored rows. Fused in one loop, with the loss's chain (z,
    // the series or the square root, ρ′/s²) ahead of every weight product, the pass cost
    // 1.13–1.65× the linear one, in sweeps 0.92–1.11× (medians, the 23 × 1000 benchmark,
    // docs/performance.md). Each point's terms and the order of every sum are the fused loop's,
    // so the bits (and the χ² of the other passes) are unchanged.
    RowBuffer row;
    ForEachVector<kLaminar, true, kUnit>(in, [&](const Lanes& t, int c) {
      Store(row.alpha + c, t.alpha);
      if constexpr (kLaminar) {
        Store(row.beta + c, t.beta);
        Store(row.gamma + c, t.gamma);
      }
      Store(row.g1sq + c, t.g1sq);
      Store(row.r0 + c, t.r0);
      if constexpr (!kUnit) Store(row.w + c, t.w);
    });
    if constexpr (kUnit) {
      // Unit weights: RobustRows reads w of the partial last vector only (1 in its columns, 0
      // beyond, as LoadInputs gives), so the sweep stores none.
      const int last = in.n / kLanes * kLanes;
      if (last < in.n) {
        for (int l = 0; l < kLanes; ++l) row.w[last + l] = last + l < in.n ? 1.0 : 0.0;
      }
    }
    RobustRows<kUnit, kRobust>(in, row, chi2);
    const auto stored = [&](int c) __attribute__((always_inline)) {
      Lanes t{};
      t.alpha = Load(row.alpha + c);
      if constexpr (kLaminar) {
        t.beta = Load(row.beta + c);
        t.gamma = Load(row.gamma + c);
      }
      t.g1sq = Load(row.g1sq + c);
      t.r0 = Load(row.r0 + c);
      t.w = Load(row.w + c);
      return t;
    };
    // The sums over the stored rows in one sweep, or in three on the two-half copies for
    // laminar_flow, so that each sweep's accumulators fit the 16 AVX2 registers (in one sweep
    // GCC keeps its 20 tile sums on the stack, a load and a store each per vector;
    // docs/performance.md). Static's 12 fit in one: ×1.40 of the linear pass against ×1.50 in
    // two sweeps (the paired benchmark, AVX2 copy). Every sum takes the same operations in the
    // same order either way, so the bits are the same.
    if constexpr (HOMODYNE_POINT_TERMS_NATIVE_V8 || !kLaminar) {
      for (int c = 0; c < in.n; c += kLanes) body(stored(c), c);
    } else {
      for (int c = 0; c < in.n; c += kLanes) {
        const Lanes t = stored(c);
        const V wa = Weighted<kUnit, kRobust>(t, t.alpha);
        columns(t, c, wa);
        tiles(t, WeightedResidual<kUnit, kRobust>(t), Weighted<kUnit, kRobust>(t, t.g1sq));
      }
      for (int c = 0; c < in.n; c += kLanes) {
        const Lanes t = stored(c);
        alpha_e(c, Weighted<kUnit, kRobust>(t, t.alpha),
                Weighted<kUnit, kRobust>(t, t.g1sq) * t.alpha);
      }
      for (int c = 0; c < in.n; c += kLanes) {
        const Lanes t = stored(c);
        beta_f(t, c, Weighted<kUnit, kRobust>(t, t.g1sq));
      }
    }
  }
  acc[kSumChi2] = chi2;
  acc[kSumUcUc] = ucuc_ucr.First();
  acc[kSumUcR] = ucuc_ucr.Second();
  acc[kSumUc] = uc_r.First();
  acc[kSumR] = uc_r.Second();
  acc[kSumW] = wsum;
  for (int q = 0; q < 3; ++q) {
    acc[kSumUcAlphaE + q] = ae[q].First();
    acc[kSumAlphaE + q] = ae[q].Second();
    acc[kSumUcBetaF + q] = bf[q].First();
    acc[kSumBetaF + q] = bf[q].Second();
  }
  acc[kSumUcGamma] = ucg;
  acc[kSumGamma] = gsum;
  Chi2Carry(acc[kSumChi2], in);
  sums[kSumChi2] = Chi2Sum(acc[kSumChi2], in);
  // Unit weights: Σ w is the number of columns (exact, as the lane sums of ones were).
  sums[kSumW] = kUnit && kRobust == kLossNone ? static_cast<double>(in.n) : Fold(acc[kSumW]);
  // The 1/σ of uc and r, once per sum.
  const double s1 = in.inv_sigma, s2 = in.inv_sigma * in.inv_sigma;
  for (int k = kSumChi2 + 1; k < kNumTileSums; ++k) {
    const bool uc = k == kSumUc || (k >= kSumUcAlphaE && k < kSumUcAlphaE + 3) ||
                    (k >= kSumUcBetaF && k < kSumUcBetaF + 3) || k == kSumUcGamma;
    const double scale = k == kSumUcUc || k == kSumUcR ? s2 : uc || k == kSumR ? s1 : 1.0;
    if (k != kSumW) sums[k] = Fold(acc[k]) * scale;
  }
}

template <bool kLaminar, bool kUnit, int kRobust = kLossNone>
__attribute__((always_inline)) inline void Gradient(const PointBlock& in, double* sums) {
  Sum4 chi2 = Chi2Start(in), ucr = Zero4(), rsum = ucr;
  ForEachVector<kLaminar, true, kUnit, kRobust>(in, [&](const Lanes& t, int c) {
    const V wa = Weighted<kUnit, kRobust>(t, t.alpha);
    AddProductTo(in.sar + c, ResidualFactor<kRobust>(t.alpha, wa), t.r0);
    if constexpr (kLaminar) {
      const V wb = Weighted<kUnit, kRobust>(t, t.beta);
      const V wg = Weighted<kUnit, kRobust>(t, t.gamma);
      AddProductTo(in.sbr + c, ResidualFactor<kRobust>(t.beta, wb), t.r0);
      AddProductTo(in.sgr + c, ResidualFactor<kRobust>(t.gamma, wg), t.r0);
    }
    const V wr = WeightedResidual<kUnit, kRobust>(t);
    AddChi2<kUnit, kRobust>(chi2, t);
    ucr.AddProduct(t.g1sq, wr);  // as in Normal
    rsum += wr;
  });
  Chi2Carry(chi2, in);
  sums[kSumChi2] = Chi2Sum(chi2, in);
  sums[kSumUcR] = Fold(ucr) * (in.inv_sigma * in.inv_sigma);  // as in Normal
  sums[kSumR] = Fold(rsum) * in.inv_sigma;
}

template <bool kLaminar, bool kUnit, int kRobust = kLossNone>
__attribute__((always_inline)) inline double Chi2(const PointBlock& in) {
  Sum4 acc = Chi2Start(in);
  if constexpr (kRobust == kLossNone) {
    ForEachVector<kLaminar, false, kUnit>(in, [&](const Lanes& t, int) { AddChi2<kUnit>(acc, t); });
  } else if (kRobust == kLossSoftL1 || in.loss == static_cast<int>(LossKind::kHuber)) {
    ForEachVector<kLaminar, false, kUnit, kRobust>(
        in, [&](const Lanes& t, int) { AddChi2<kUnit, kRobust>(acc, t); });
  } else {
    // cauchy and arctan: two sweeps over the block, the linear loop storing each vector's z
    // and weight, then a short loop taking the loss, so that the log1p's or atan's division
    // chains of many vectors overlap (the long body of the fused loop kept few in flight:
    // −10 to −15 % for these passes; soft_l1 and huber, cheaper per point, lost more to the
    // stores than they gained, +8 to +12 %). Each point's ρ and the order of the sum are
    // Terms' (w·ρ, and w = 1 under unit weights: 1·ρ = ρ), so the χ² keeps the bits of the
    // gradient and normal passes.
    alignas(64) double zs[kMaxBlock], ws[kMaxBlock];
    const V inv_scale = Splat(in.loss_inv_scale);
    ForEachVector<kLaminar, false, kUnit>(in, [&](const Lanes& t, int c) {
      const V u = t.r0 * inv_scale;
      Store(zs + c, u * u);
      Store(ws + c, t.w);
    });
    for (int c = 0; c < in.n; c += kLanes) {
      V rho, weight, d1;
      LossLanes<false>(in.loss, Load(zs + c), rho, weight, d1);
      acc += Load(ws + c) * rho;
    }
  }
  Chi2Carry(acc, in);
  return Chi2Sum(acc, in);
}

// c2 of the block's n columns into out (the model pass).
template <bool kLaminar>
__attribute__((always_inline)) inline void Model(const PointBlock& in, double* out) {
  ForEachVector<kLaminar, false, true>(in, [&](const Lanes& t, int c) {
    if (c + kLanes <= in.n) {
      Store(out + c, t.model);
      return;
    }
    alignas(64) double v[kLanes];
    Store(v, t.model);
    for (int l = 0; c + l < in.n; ++l) out[c + l] = v[l];
  });
}

// Every weight of the block is 1: the loops without weight products. Any other uniform
// weight (0 included: its residuals are masked to 0) takes the weighted form.
inline bool UnitWeight(const PointBlock& in) {
  return in.weight == nullptr && in.uniform_weight == 1.0;
}

// The fold of the per-column angle sums, one parameter p at a time: Σ_c over the block's
// columns of the products that involve p (Jᵀr_p and JᵀJ_pq, q ≥ p), in passes over the
// columns with at most 4 JᵀJ accumulators each (P, Q0, Q1 compile-time, so the accumulators
// stay in registers; all 35 at once spilled on every column). Each accumulator sums the same
// products in the same column order as a single pass would, so the bits do not depend on
// how the pairs are grouped.
HOMODYNE_INLINE constexpr int ParameterGroup(int p) { return p < 3 ? 0 : p < 6 ? 1 : 2; }

// u_q at columns c … c + kLanes − 1: e_q, f_q or 1 (the angle-independent factors).
template <int Q>
HOMODYNE_INLINE V ColumnFactor(const PointBlock& in, int c) {
  if constexpr (Q < 3) return Load(in.e[Q] + c);
  if constexpr (Q >= 3 && Q < 6) return Load(in.f[Q - 3] + c);
  return Splat(1.0);
}

// The per-column sum array of the groups (g, h) of a pair (0 = α, 1 = β, 2 = γ), or of
// the residual products (h = 3).
HOMODYNE_INLINE const double* ColumnSum(const PointBlock& in, int g, int h) {
  if (h == 3) return g == 0 ? in.sar : g == 1 ? in.sbr : in.sgr;
  if (g > h) return ColumnSum(in, h, g);
  if (g == 0) return h == 0 ? in.saa : h == 1 ? in.sab : in.sag;
  if (g == 1) return h == 1 ? in.sbb : in.sbg;
  return in.sgg;
}

// Σ over the columns for p = P and q ∈ [Q0, Q1) (and Jᵀr_P when kWithR).
template <int kNp, int P, int Q0, int Q1, bool kWithR, bool kJtj>
HOMODYNE_INLINE void FoldPairs(const PointBlock& in, int n, double* jtj, double* jtr) {
  constexpr int kCount = kJtj ? Q1 - Q0 : 0;
  V m[kCount > 0 ? kCount : 1];
  for (auto& v : m) v = Splat(0.0);
  V r = Splat(0.0);
  const double* sr = ColumnSum(in, ParameterGroup(P), 3);
  const double* sw[kCount > 0 ? kCount : 1];
  for (int j = 0; j < kCount; ++j) sw[j] = ColumnSum(in, ParameterGroup(P), ParameterGroup(Q0 + j));
  for (int c = 0; c < n; c += kLanes) {
    const V up = ColumnFactor<P>(in, c);
    if constexpr (kWithR) r = Fma(Load(sr + c), up, r);
    if constexpr (kJtj) {
      // clang-format 14 would split this template lambda from its call.
      // clang-format off
      [&]<int... J>(std::integer_sequence<int, J...>) __attribute__((always_inline)) {
        ((m[J] = Fma(Load(sw[J] + c) * up, ColumnFactor<Q0 + J>(in, c), m[J])), ...);
      }(std::make_integer_sequence<int, kCount>());
      // clang-format on
    }
  }
  // The column sums hold α·r0 (r0 = σ·r): the 1/σ of r here, once.
  if constexpr (kWithR) jtr[P] += Fold(r) * in.inv_sigma;
  for (int j = 0; j < kCount; ++j) jtj[P * kNp + Q0 + j] += Fold(m[j]);
}

template <int kNp, bool kJtj, int P>
HOMODYNE_INLINE void FoldFrom(const PointBlock& in, int n, double* jtj, double* jtr) {
  if constexpr (P < kNp) {
    constexpr int kMid = P + 4 < kNp ? P + 4 : kNp;
    FoldPairs<kNp, P, P, kMid, true, kJtj>(in, n, jtj, jtr);
    if constexpr (kJtj && kMid < kNp) FoldPairs<kNp, P, kMid, kNp, false, kJtj>(in, n, jtj, jtr);
    FoldFrom<kNp, kJtj, P + 1>(in, n, jtj, jtr);
  }
}

template <bool kLaminar, bool kJtj>
__attribute__((always_inline)) inline void FoldColumns(const PointBlock& in, int n, double* jtj,
                                                       double* jtr) {
  FoldFrom<kLaminar ? 7 : 3, kJtj, 0>(in, n, jtj, jtr);
}

#undef HOMODYNE_INLINE
}  // namespace

HOMODYNE_POINT_TERMS_TARGET void FoldLaminarColumns(const PointBlock& block, int n, double* jtj,
                                                    double* jtr) {
  jtj != nullptr ? FoldColumns<true, true>(block, n, jtj, jtr)
                 : FoldColumns<true, false>(block, n, jtj, jtr);
}

HOMODYNE_POINT_TERMS_TARGET void FoldStaticColumns(const PointBlock& block, int n, double* jtj,
                                                   double* jtr) {
  jtj != nullptr ? FoldColumns<false, true>(block, n, jtj, jtr)
                 : FoldColumns<false, false>(block, n, jtj, jtr);
}

// The robust passes: soft_l1 (the default loss) in loops of its own, the other kinds with a
// switch per vector; unit-weight blocks without the masks and weight products.
template <bool kLaminar, bool kUnit>
__attribute__((always_inline)) inline void GradientRobustOf(const PointBlock& in, double* sums) {
  in.loss == static_cast<int>(LossKind::kSoftL1) ? Gradient<kLaminar, kUnit, kLossSoftL1>(in, sums)
                                                 : Gradient<kLaminar, kUnit, kLossOther>(in, sums);
}
template <bool kLaminar>
__attribute__((always_inline)) inline void GradientRobust(const PointBlock& in, double* sums) {
  UnitWeight(in) ? GradientRobustOf<kLaminar, true>(in, sums)
                 : GradientRobustOf<kLaminar, false>(in, sums);
}
template <bool kLaminar, bool kUnit>
__attribute__((always_inline)) inline void NormalRobustOf(const PointBlock& in, double* sums) {
  in.loss == static_cast<int>(LossKind::kSoftL1) ? Normal<kLaminar, kUnit, kLossSoftL1>(in, sums)
                                                 : Normal<kLaminar, kUnit, kLossOther>(in, sums);
}
template <bool kLaminar>
__attribute__((always_inline)) inline void NormalRobust(const PointBlock& in, double* sums) {
  UnitWeight(in) ? NormalRobustOf<kLaminar, true>(in, sums)
                 : NormalRobustOf<kLaminar, false>(in, sums);
}
template <bool kLaminar, bool kUnit>
__attribute__((always_inline)) inline double Chi2RobustOf(const PointBlock& in) {
  return in.loss == static_cast<int>(LossKind::kSoftL1) ? Chi2<kLaminar, kUnit, kLossSoftL1>(in)
                                                        : Chi2<kLaminar, kUnit, kLossOther>(in);
}
template <bool kLaminar>
__attribute__((always_inline)) inline double Chi2Robust(const PointBlock& in) {
  return UnitWeight(in) ? Chi2RobustOf<kLaminar, true>(in) : Chi2RobustOf<kLaminar, false>(in);
}

HOMODYNE_POINT_TERMS_TARGET void GradientLaminarBlock(const PointBlock& block, double* sums) {
  const PointBlock in = block;  // see Chi2Block
  if (in.loss != 0) return GradientRobust<true>(in, sums);
  UnitWeight(in) ? Gradient<true, true>(in, sums) : Gradient<true, false>(in, sums);
}

HOMODYNE_POINT_TERMS_TARGET void GradientStaticBlock(const PointBlock& block, double* sums) {
  const PointBlock in = block;  // see Chi2Block
  if (in.loss != 0) return GradientRobust<false>(in, sums);
  UnitWeight(in) ? Gradient<false, true>(in, sums) : Gradient<false, false>(in, sums);
}

HOMODYNE_POINT_TERMS_TARGET void NormalLaminarBlock(const PointBlock& block, double* sums) {
  const PointBlock in = block;  // see Chi2Block
  if (in.loss != 0) return NormalRobust<true>(in, sums);
  UnitWeight(in) ? Normal<true, true>(in, sums) : Normal<true, false>(in, sums);
}

HOMODYNE_POINT_TERMS_TARGET void NormalStaticBlock(const PointBlock& block, double* sums) {
  const PointBlock in = block;  // see Chi2Block
  if (in.loss != 0) return NormalRobust<false>(in, sums);
  UnitWeight(in) ? Normal<false, true>(in, sums) : Normal<false, false>(in, sums);
}

HOMODYNE_POINT_TERMS_TARGET void ModelBlock(const PointBlock& block, double* out) {
  PointBlock in = block;  // see Chi2Block; weights do not enter c2
  in.weight = nullptr;
  in.uniform_weight = 1.0;
  in.s != nullptr ? Model<true>(in, out) : Model<false>(in, out);
}

HOMODYNE_POINT_TERMS_TARGET double Chi2Block(const PointBlock& block) {
  // A local copy: the compiler then knows that the stores into the column sums do not change
  // the block's pointers and keeps them in registers (through the reference it reloaded them
  // before every store).
  const PointBlock in = block;
  if (in.loss != 0) return in.s != nullptr ? Chi2Robust<true>(in) : Chi2Robust<false>(in);
  if (in.s != nullptr) return UnitWeight(in) ? Chi2<true, true>(in) : Chi2<true, false>(in);
  return UnitWeight(in) ? Chi2<false, true>(in) : Chi2<false, false>(in);
}

}  // namespace homodyne::model::detail::HOMODYNE_POINT_TERMS_NS
