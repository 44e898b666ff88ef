// The point loops of the kernel (private to src/model), compiled three times: by
// point_terms.cpp (baseline x86-64 or any other ISA) and point_terms_avx2.cpp (x86-64-v3) with
// the vector type held as two 4-lane halves, and by point_terms_avx512.cpp (x86-64-v4) with a
// native 8-lane vector (one AVX-512 register). All have the same lanes, the same expressions,
// the same fused multiply-adds (Fma, explicit; src/model is compiled without contraction) and
// the same order of every sum, so all give the same bits. Include only from those files,
// after defining HOMODYNE_POINT_TERMS_NATIVE_V8 (0 or 1), HOMODYNE_POINT_TERMS_FMA (0 or 1,
// see Fma4), HOMODYNE_POINT_TERMS_NS (the namespace of this copy) and
// HOMODYNE_POINT_TERMS_TARGET (the entry points' attributes); with FMA, include <immintrin.h>
// and compile the copy for an ISA that has it (#pragma GCC target).
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include <cmath>

#include "model/constants.h"
#include "model/loss_math.h"
#include "model/robust_loss.h"
#include "point_terms.h"

// The vector type is passed between always-inline helpers only; the baseline clone
// (no AVX) would pass it in memory, which GCC notes as an ABI change.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace homodyne::model::detail::HOMODYNE_POINT_TERMS_NS {
namespace {

#define HOMODYNE_INLINE __attribute__((always_inline)) inline
static_assert(kLanes == 8);
#if HOMODYNE_POINT_TERMS_NATIVE_V8
typedef double V __attribute__((vector_size(64)));
typedef std::int64_t M __attribute__((vector_size(64)));

HOMODYNE_INLINE V Splat(double x) { return V{x, x, x, x, x, x, x, x}; }
HOMODYNE_INLINE V Load(const double* p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
HOMODYNE_INLINE void Store(double* p, V v) { std::memcpy(p, &v, sizeof(v)); }
HOMODYNE_INLINE double Fold(V v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
HOMODYNE_INLINE V Where(M m, V a, V b) { return m ? a : b; }
#else
// kLanes = 8 columns per vector, held as two 4-lane halves: the same lanes on every ISA, so
// the lane structure of the sums (and so their bits) does not depend on the machine. A native
// 8-lane GCC vector would compile to one AVX-512 register, but without AVX-512 GCC lowers it
// to code 7–10× slower than these halves (measured); the halves are one AVX2 register each.
typedef double V4 __attribute__((vector_size(32)));
typedef std::int64_t M4 __attribute__((vector_size(32)));
struct V {
  V4 lo, hi;
};
struct M {
  M4 lo, hi;
};

HOMODYNE_INLINE V operator+(V a, V b) { return {a.lo + b.lo, a.hi + b.hi}; }
HOMODYNE_INLINE V operator-(V a, V b) { return {a.lo - b.lo, a.hi - b.hi}; }
HOMODYNE_INLINE V operator*(V a, V b) { return {a.lo * b.lo, a.hi * b.hi}; }
HOMODYNE_INLINE V operator/(V a, V b) { return {a.lo / b.lo, a.hi / b.hi}; }
HOMODYNE_INLINE V& operator+=(V& a, V b) { return a = a + b; }
HOMODYNE_INLINE M operator>(V a, V b) { return {a.lo > b.lo, a.hi > b.hi}; }
HOMODYNE_INLINE M operator<(V a, V b) { return {a.lo < b.lo, a.hi < b.hi}; }
HOMODYNE_INLINE M operator!=(V a, V b) { return {a.lo != b.lo, a.hi != b.hi}; }
HOMODYNE_INLINE M operator&(M a, M b) { return {a.lo & b.lo, a.hi & b.hi}; }

HOMODYNE_INLINE V Splat(double x) { return {V4{x, x, x, x}, V4{x, x, x, x}}; }

HOMODYNE_INLINE V Load(const double* p) {
  V v;
  std::memcpy(&v.lo, p, sizeof(v.lo));
  std::memcpy(&v.hi, p + 4, sizeof(v.hi));
  return v;
}

HOMODYNE_INLINE void Store(double* p, V v) {
  std::memcpy(p, &v.lo, sizeof(v.lo));
  std::memcpy(p + 4, &v.hi, sizeof(v.hi));
}

// Lanes combined as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
HOMODYNE_INLINE double Fold(V v) {
  return ((v.lo[0] + v.lo[1]) + (v.lo[2] + v.lo[3])) + ((v.hi[0] + v.hi[1]) + (v.hi[2] + v.hi[3]));
}

// Where(m, a, b): a in the lanes where m is set, else b.
HOMODYNE_INLINE V Where(M m, V a, V b) { return {m.lo ? a.lo : b.lo, m.hi ? a.hi : b.hi}; }
#endif

// a·b + c rounded once, lane by lane. Explicit, since contraction (-ffp-contract) fused
// differently in the passes' inlined copies of the same expression and broke their
// bit-identical χ². HOMODYNE_POINT_TERMS_FMA = 1: the FMA instructions (the copy is compiled for
// x86-64-v3 or v4); 0: fma() per lane, correctly rounded, so the same bits (the baseline copy,
// for x86-64 CPUs without FMA, which predate AVX2; elsewhere GCC emits the ISA's own fma).
#if HOMODYNE_POINT_TERMS_NATIVE_V8
typedef double V4 __attribute__((vector_size(32)));
#endif
#if HOMODYNE_POINT_TERMS_FMA
HOMODYNE_INLINE V4 Fma4(V4 a, V4 b, V4 c) { return _mm256_fmadd_pd(a, b, c); }
#else
HOMODYNE_INLINE V4 Fma4(V4 a, V4 b, V4 c) {
  return V4{__builtin_fma(a[0], b[0], c[0]), __builtin_fma(a[1], b[1], c[1]),
            __builtin_fma(a[2], b[2], c[2]), __builtin_fma(a[3], b[3], c[3])};
}
#endif
// max(a, b) lane by lane as a > b ? a : b (b where a is NaN): one instruction on AVX2, where
// GCC emits a compare and a blend for the select. (The AVX-512 copy keeps the select: GCC 12's
// _mm512_max_pd trips -Wmaybe-uninitialized inside its own header.)
#if HOMODYNE_POINT_TERMS_FMA && !HOMODYNE_POINT_TERMS_NATIVE_V8
HOMODYNE_INLINE V Max(V a, V b) { return {_mm256_max_pd(a.lo, b.lo), _mm256_max_pd(a.hi, b.hi)}; }
#else
HOMODYNE_INLINE V Max(V a, V b) { return Where(a > b, a, b); }
#endif
#if HOMODYNE_POINT_TERMS_NATIVE_V8
static_assert(HOMODYNE_POINT_TERMS_FMA, "the native 8-lane copy is the AVX-512 one");
HOMODYNE_INLINE V Fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
#else
HOMODYNE_INLINE V Fma(V a, V b, V c) { return {Fma4(a.lo, b.lo, c.lo), Fma4(a.hi, b.hi, c.hi)}; }
#endif
// √x lane by lane, correctly rounded on every copy (so the same bits).
#if HOMODYNE_POINT_TERMS_NATIVE_V8
// By halves: GCC 12's _mm512_sqrt_pd trips -Wmaybe-uninitialized inside its header (as
// _mm512_max_pd does, see Max).
HOMODYNE_INLINE V Sqrt(V x) {
  const V4 lo = _mm256_sqrt_pd(__builtin_shufflevector(x, x, 0, 1, 2, 3));
  const V4 hi = _mm256_sqrt_pd(__builtin_shufflevector(x, x, 4, 5, 6, 7));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}
#elif HOMODYNE_POINT_TERMS_FMA
HOMODYNE_INLINE V Sqrt(V x) { return {_mm256_sqrt_pd(x.lo), _mm256_sqrt_pd(x.hi)}; }
#else
HOMODYNE_INLINE V Sqrt(V x) {
  return {V4{__builtin_sqrt(x.lo[0]), __builtin_sqrt(x.lo[1]), __builtin_sqrt(x.lo[2]),
             __builtin_sqrt(x.lo[3])},
          V4{__builtin_sqrt(x.hi[0]), __builtin_sqrt(x.hi[1]), __builtin_sqrt(x.hi[2]),
             __builtin_sqrt(x.hi[3])}};
}
#endif
// loss_math.h's Reduce on a vector of doubles D (a 4-lane half or the native 8 lanes): the
// same exact bit operations as robust_loss.cpp's scalar one, lane by lane.
template <typename D>
HOMODYNE_INLINE void ReduceLanes(D u, D& k, D& m, D& scale) {
  typedef std::uint64_t U __attribute__((vector_size(sizeof(D))));
  const U bits = reinterpret_cast<U>(u);
  const U e = (bits - 0x3fe6a09e667f3bcdULL) >> 52;  // √2/2's bits
  m = reinterpret_cast<D>(bits - (e << 52));
  // e as a double: exact, e < 2^52.
  k = reinterpret_cast<D>(e | 0x4330000000000000ULL) - 0x1p52;
  const D s = reinterpret_cast<D>((0x3ffULL - e) << 52);
  scale = k < 1000.0 ? s : D{};
}
// The operations loss_math.h takes, on V.
struct VectorLossOps {
  using T = V;
  static HOMODYNE_INLINE V Splat(double x) { return HOMODYNE_POINT_TERMS_NS::Splat(x); }
  static HOMODYNE_INLINE V Fma(V a, V b, V c) { return HOMODYNE_POINT_TERMS_NS::Fma(a, b, c); }
  static HOMODYNE_INLINE V Where(M m, V a, V b) { return HOMODYNE_POINT_TERMS_NS::Where(m, a, b); }
#if HOMODYNE_POINT_TERMS_NATIVE_V8
  static HOMODYNE_INLINE void Reduce(V u, V& k, V& m, V& scale) { ReduceLanes(u, k, m, scale); }
#else
  static HOMODYNE_INLINE void Reduce(V u, V& k, V& m, V& scale) {
    ReduceLanes(u.lo, k.lo, m.lo, scale.lo);
    ReduceLanes(u.hi, k.hi, m.hi, scale.hi);
  }
#endif
};

// Any lane of m set: one mask test on the x86 vector copies (the generic form below costs
// GCC a chain of extracts and scalar ors per vector), the lanes' or elsewhere.
#if HOMODYNE_POINT_TERMS_NATIVE_V8
HOMODYNE_INLINE bool Any(M m) {
  const auto i = reinterpret_cast<__m512i>(m);
  return _mm512_test_epi64_mask(i, i) != 0;
}
#elif HOMODYNE_POINT_TERMS_FMA
HOMODYNE_INLINE bool Any(M m) {
  return _mm256_movemask_pd(reinterpret_cast<__m256d>(m.lo | m.hi)) != 0;
}
#else
HOMODYNE_INLINE bool Any(M m) {
  const M4 o = m.lo | m.hi;
  return ((o[0] | o[1]) | (o[2] | o[3])) != 0;
}
#endif

// soft_l1's terms as robust_loss.cpp's EvaluateLoss computes them (the same expressions in
// the same order): ρ(z) and, with kDerivs, the weight s² and the residual factor ρ′/s². The
// square root and division only when a lane lies beyond the series (kSoftL1SeriesBelow).
template <bool kDerivs>
HOMODYNE_INLINE void SoftL1Lanes(V z, V& rho, V& weight, V& factor) {
  const V one = Splat(1.0);
  const V a = one + z;
  const V rho_series =
      z * Fma(z,
              Fma(z, Fma(z, Fma(z, Splat(7.0 / 128.0), Splat(-5.0 / 64.0)), Splat(1.0 / 8.0)),
                  Splat(-1.0 / 4.0)),
              one);
  V weight_series;
  if constexpr (kDerivs) {
    weight_series =
        Fma(z,
            Fma(z, Fma(z, Fma(z, Splat(315.0 / 128.0), Splat(-35.0 / 16.0)), Splat(15.0 / 8.0)),
                Splat(-3.0 / 2.0)),
            one);
  }
  const M far = z > Splat(kSoftL1SeriesBelow);
  if (!Any(far)) {
    rho = rho_series;
    if constexpr (kDerivs) {
      weight = weight_series;
      factor = a;
    }
    return;
  }
  const V sq = Sqrt(a);
  const V inv = one / sq;
  const V bb = a - z;
  const V ea = (z - (a - bb)) + (one - bb);
  const V e = Fma(sq, sq, Splat(0.0) - a);
  const V m = sq - one;
  const M finite = Splat(std::numeric_limits<double>::infinity()) > a;  // see EvaluateLoss
  rho = Where(far, Where(finite, Fma(ea - e, inv, m + m), m + m), rho_series);
  if constexpr (kDerivs) {
    const V floor = Splat(kLossCurvatureFloor);
    const V curvature = inv * (inv * inv);
    const M kept = curvature > floor;
    weight = Where(far, Where(kept, curvature, floor), weight_series);
    factor = Where(far, Where(kept, a, inv * Splat(0x1p52)), a);
  }
}

// The loss terms of robust_loss.h's EvaluateLoss, lane by lane with its expressions in its
// order: ρ(z) and, with kDerivs, the weight s² = max(ρ′ + 2zρ″, floor) and the residual factor
// ρ′/s². `kind` is a robust LossKind.
template <bool kDerivs>
HOMODYNE_INLINE void LossLanes(int kind, V z, V& rho, V& weight, V& factor) {
  const V one = Splat(1.0);
  V d1, curvature;
  switch (static_cast<LossKind>(kind)) {
    case LossKind::kHuber: {
      const M out = z > one;
      if (!Any(out)) {
        // Every lane inside the knee: ρ = z, weight max(1, floor) = 1, factor 1/1, the bits
        // of the expressions below without their square root and divisions.
        rho = z;
        if constexpr (kDerivs) {
          weight = one;
          factor = one;
        }
        return;
      }
      const V sq = Sqrt(z);
      rho = Where(out, (sq + sq) - one, z);
      if constexpr (kDerivs) {
        d1 = Where(out, one / sq, one);
        curvature = Where(out, Splat(0.0), one);
      }
      break;
    }
    case LossKind::kCauchy:
      rho = Log1pNonNegative<VectorLossOps>(z);
      if constexpr (kDerivs) {
        d1 = one / (one + z);
        curvature = (one - z) * (d1 * d1);
      }
      break;
    case LossKind::kArctan:
      rho = AtanNonNegative<VectorLossOps>(z);
      if constexpr (kDerivs) {
        const V z2 = z * z;
        d1 = one / (one + z2);
        curvature = (one - Splat(3.0) * z2) * (d1 * d1);
      }
      break;
    default:  // soft_l1
      SoftL1Lanes<kDerivs>(z, rho, weight, factor);
      return;
  }
  if constexpr (kDerivs) {
    weight = Max(curvature, Splat(kLossCurvatureFloor));
    factor = d1 / weight;
  }
}

// The robust instantiations of the passes: none (linear), soft_l1 (homodyne's default, its own
// loop) and any other robust kind (a switch per vector).
inline constexpr int kLossNone = 0, kLossSoftL1 = 1, kLossOther = 2;

// The tile sums accumulate each vector's two halves added first (lane l gets lanes l and
// l + 4), in 4 lanes, folded as (l0 + l1) + (l2 + l3): the normal-equation loop keeps 20 of
// them live, which at 8 lanes (two AVX2 registers each) spilled to the stack on every vector.
// The same on both copies and in every pass (so the χ², gradient and normal passes give the
// same χ² bits). A trivial aggregate (no member initialiser; zero it with Zero4()).
#if HOMODYNE_POINT_TERMS_NATIVE_V8
HOMODYNE_INLINE V4 Lo(V x) { return __builtin_shufflevector(x, x, 0, 1, 2, 3); }
HOMODYNE_INLINE V4 Hi(V x) { return __builtin_shufflevector(x, x, 4, 5, 6, 7); }
#else
HOMODYNE_INLINE V4 Lo(V x) { return x.lo; }
HOMODYNE_INLINE V4 Hi(V x) { return x.hi; }
#endif
HOMODYNE_INLINE V4 HalfSum(V x) { return Lo(x) + Hi(x); }
// The halves of x·y added: lane l gets x_l·y_l + x_{l+4}·y_{l+4} (one rounding fewer).
HOMODYNE_INLINE V4 HalfDot(V x, V y) { return Fma4(Lo(x), Lo(y), Hi(x) * Hi(y)); }
struct Sum4 {
  V4 v;
  HOMODYNE_INLINE Sum4& operator+=(V x) {
    v += HalfSum(x);
    return *this;
  }
  HOMODYNE_INLINE void AddProduct(V x, V y) { v += HalfDot(x, y); }
};
HOMODYNE_INLINE Sum4 Zero4() { return Sum4{V4{0.0, 0.0, 0.0, 0.0}}; }
HOMODYNE_INLINE double Fold(Sum4 a) {
  double l[4];
  std::memcpy(l, &a.v, sizeof(l));
  return FoldLanes(l);
}

// The terms of the kLanes points of columns c … c + kLanes − 1.
struct Lanes {
  // r0 = d − c2 and g1sq = g1² before the 1/σ of the scaled residual r = r0/σ and of
  // uc = ∂c2/∂contrast/σ = g1²/σ, which the sums apply once (Normal, Gradient, FoldColumns).
  // Under a robust loss (kRobust): w is w·s², r0 is r0·ρ′/s² (so w·r0 = w·ρ′·r0, and every
  // other w·x·y = w·s²·x·y) and rho_w = w·ρ(z), the χ² lanes' term.
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
    const V u = t.r0 * k.loss_inv_scale;
    V rho, weight, factor;
    if constexpr (kRobust == kLossSoftL1) {
      SoftL1Lanes<kDerivs>(u * u, rho, weight, factor);
    } else {
      LossLanes<kDerivs>(in.loss, u * u, rho, weight, factor);
    }
    t.rho_w = kMask ? x.w * rho : rho;
    if constexpr (kDerivs) {
      t.w = kMask ? x.w * weight : weight;
      t.r0 = t.r0 * factor;
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
        V g1_next, s_next, ds_next;
        SeparableLanes<kDerivs>(row, k, c + kLanes, g1_next, s_next, ds_next);
        body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                   ds),
             c);
        g1_raw = g1_next;
        s = s_next;
        ds = ds_next;
      }
      body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                 ds),
           c);
      c += kLanes;
    }
    for (; c < hi; c += kLanes) {
      V g1_raw, s, ds;
      SeparableLanes<kDerivs>(row, k, c, g1_raw, s, ds);
      body(Terms<true, kDerivs, !kUnit, kRobust>(in, k, c, LoadInputs<true>(in, k, c), g1_raw, s,
                                                 ds),
           c);
    }
  }
  for (; c + kLanes <= n; c += kLanes) from_arrays.template operator()<true>(c);
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

template <bool kLaminar, bool kUnit, int kRobust = kLossNone>
__attribute__((always_inline)) inline void Normal(const PointBlock& in, double* sums) {
  Sum4 acc[kNumTileSums];
  for (auto& v : acc) v = Zero4();
  acc[kSumChi2] = Chi2Start(in);
  ForEachVector<kLaminar, true, kUnit, kRobust>(in, [&](const Lanes& t, int c) {
    const V wa = Weighted<kUnit, kRobust>(t, t.alpha);
    // Per-column sums over the angles.
    AddProductTo(in.saa + c, wa, t.alpha);
    AddProductTo(in.sar + c, wa, t.r0);
    if constexpr (kLaminar) {
      const V wb = Weighted<kUnit, kRobust>(t, t.beta);
      const V wg = Weighted<kUnit, kRobust>(t, t.gamma);
      AddProductTo(in.sab + c, wa, t.beta);
      AddProductTo(in.sbb + c, wb, t.beta);
      AddProductTo(in.sag + c, wa, t.gamma);
      AddProductTo(in.sbg + c, wb, t.gamma);
      AddProductTo(in.sgg + c, wg, t.gamma);
      AddProductTo(in.sbr + c, wb, t.r0);
      AddProductTo(in.sgr + c, wg, t.r0);
    }
    // Per-tile sums.
    const V wr = Weighted<kUnit, kRobust>(t, t.r0), wuc = Weighted<kUnit, kRobust>(t, t.g1sq),
            wuca = wuc * t.alpha;
    AddChi2<kUnit, kRobust>(acc[kSumChi2], t);
    acc[kSumUcUc].AddProduct(wuc, t.g1sq);
    acc[kSumUc] += wuc;
    if constexpr (!kUnit || kRobust != kLossNone) acc[kSumW] += t.w;
    acc[kSumUcR].AddProduct(t.g1sq, wr);
    acc[kSumR] += wr;
    for (int q = 0; q < 3; ++q) {
      const V e = Load(in.e[q] + c);
      acc[kSumUcAlphaE + q].AddProduct(wuca, e);
      acc[kSumAlphaE + q].AddProduct(wa, e);
    }
    if constexpr (kLaminar) {
      const V wb = Weighted<kUnit, kRobust>(t, t.beta), wucb = wuc * t.beta;
      for (int q = 0; q < 3; ++q) {
        const V f = Load(in.f[q] + c);
        acc[kSumUcBetaF + q].AddProduct(wucb, f);
        acc[kSumBetaF + q].AddProduct(wb, f);
      }
      acc[kSumUcGamma].AddProduct(wuc, t.gamma);
      acc[kSumGamma] += Weighted<kUnit, kRobust>(t, t.gamma);
    }
  });
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
    AddProductTo(in.sar + c, wa, t.r0);
    if constexpr (kLaminar) {
      const V wb = Weighted<kUnit, kRobust>(t, t.beta);
      const V wg = Weighted<kUnit, kRobust>(t, t.gamma);
      AddProductTo(in.sbr + c, wb, t.r0);
      AddProductTo(in.sgr + c, wg, t.r0);
    }
    const V wr = Weighted<kUnit, kRobust>(t, t.r0);
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
  ForEachVector<kLaminar, false, kUnit, kRobust>(
      in, [&](const Lanes& t, int) { AddChi2<kUnit, kRobust>(acc, t); });
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
