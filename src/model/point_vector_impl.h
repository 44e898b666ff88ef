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
//
// This part (point_vector_impl.h, included by point_terms_impl.h) holds the 8-lane vector
// type, its primitives, the robust loss over lanes and the lane sums; point_terms_impl.h the
// point loops that use them.
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
// llvm-mca's region markers (assembler comments) around a point loop's body, numbered by the
// loop's site and template arguments, for bench/run_kernel_bounds.sh, which compiles the copies
// with -S -DHOMODYNE_MCA_MARKERS to find the loops in the assembly. Empty in every other build.
#ifndef HOMODYNE_MCA_BEGIN
#ifdef HOMODYNE_MCA_MARKERS
#define HOMODYNE_MCA_BEGIN(id) __asm__ volatile("# LLVM-MCA-BEGIN loop%c0" : : "i"(id))
#define HOMODYNE_MCA_END(id) __asm__ volatile("# LLVM-MCA-END loop%c0" : : "i"(id))
#else
#define HOMODYNE_MCA_BEGIN(id) static_cast<void>(id)
#define HOMODYNE_MCA_END(id) static_cast<void>(id)
#endif
#endif
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
// Any(a > b): on the AVX-512 copy the compare's mask register tested directly (Any of a
// vector mask first widens the compare's mask into a vector and tests that: two
// instructions more per vector).
#if HOMODYNE_POINT_TERMS_NATIVE_V8
HOMODYNE_INLINE bool AnyGreater(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ) != 0; }
#else
HOMODYNE_INLINE bool AnyGreater(V a, V b) { return Any(a > b); }
#endif

// soft_l1's terms as robust_loss.cpp's EvaluateLoss computes them (the same expressions in
// the same order): ρ(z) and, with kDerivs, the weight s² and the residual factor ρ′/s². The
// square root and division only when a lane lies beyond the long series
// (kSoftL1LongSeriesBelow).
// kShort: the caller knows every lane lies on the short series (z ≤ kSoftL1SeriesBelow; a
// block whose largest z does, RobustRows), where the short series alone gives the same bits.
template <bool kDerivs, bool kShort = false>
HOMODYNE_INLINE void SoftL1Lanes(V z, V& rho, V& weight, V& factor) {
  const V one = Splat(1.0);
  const V a = one + z;
  const V rho_poly =
      Fma(z,
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
  if constexpr (kShort) {
    rho = z * rho_poly;
    if constexpr (kDerivs) {
      weight = weight_series;
      factor = a;
    }
    return;
  }
  // The long series (robust_loss.cpp, SoftL1LongSeriesRho and SoftL1LongSeriesCurvature) in
  // every lane: the short one's bits in the lanes below its end, so no branch chooses between
  // them. A branch per vector did: on data whose noise puts a point past the short series in
  // most vectors (noise 0.01 at f_scale 1) it went either way at random, and its
  // mispredictions cost more than the long series' eleven operations (paired benchmark, static
  // normal pass: ×1.62–1.68 of the linear pass with it, ×1.31 without; docs/performance.md).
  // The normal pass chooses the short series per block instead (RobustRows).
  const V z2 = z * z;
  const V z5 = (z2 * z2) * z;
  const V rho_tail =
      Fma(z, Fma(z, Fma(z, Splat(715.0 / 32768.0), Splat(-429.0 / 16384.0)), Splat(33.0 / 1024.0)),
          Splat(-21.0 / 512.0));
  const V rho_long = z * Fma(z5, rho_tail, rho_poly);
  V weight_long;
  if constexpr (kDerivs) {
    const V weight_tail =
        Fma(z,
            Fma(z,
                Fma(z, Fma(z, Splat(-230945.0 / 65536.0), Splat(109395.0 / 32768.0)),
                    Splat(-6435.0 / 2048.0)),
                Splat(3003.0 / 1024.0)),
            Splat(-693.0 / 256.0));
    weight_long = Fma(z5, weight_tail, weight_series);
  }
  const V long_end = Splat(kSoftL1LongSeriesBelow);
  // The derivative passes (kDerivs) lay the closed forms out as the unlikely branch, so that
  // GCC's layout and register allocation favour the series path (AVX2 copy, normal pass,
  // soft_l1 at its default f_scale, two A/B runs: ×1.24–1.43 → ×1.15–1.27 and ×1.24–1.32 →
  // ×1.20–1.25 of the linear pass; no change beyond the noise at f_scale 0.01 nor on the
  // AVX-512 copy); the χ² pass does not (its f_scale 0.01 case, mostly closed forms, lost 20 %).
  const bool series = !AnyGreater(z, long_end);
  if (kDerivs ? __builtin_expect(series, 1) : series) {
    rho = rho_long;
    if constexpr (kDerivs) {
      weight = weight_long;
      factor = a;
    }
    return;
  }
  const M far = z > long_end;
  const V sq = Sqrt(a);
  const V inv = one / sq;
  const V bb = a - z;
  const V ea = (z - (a - bb)) + (one - bb);
  const V e = Fma(sq, sq, Splat(0.0) - a);
  const V m = sq - one;
  const M finite = Splat(std::numeric_limits<double>::infinity()) > a;  // see EvaluateLoss
  rho = Where(far, Where(finite, Fma(ea - e, inv, m + m), m + m), rho_long);
  if constexpr (kDerivs) {
    const V floor = Splat(kLossCurvatureFloor);
    const V curvature = inv * (inv * inv);
    const M kept = curvature > floor;
    weight = Where(far, Where(kept, curvature, floor), weight_long);
    factor = Where(far, Where(kept, a, inv * Splat(0x1p52)), a);
  }
}

// Whether every z of a block's residuals r0 (columns 0 … n − 1 in whole vectors; masked lanes
// and lanes past n hold 0) lies on soft_l1's short series: then its vectors may take
// SoftL1Lanes<…, true>, the same bits. Per block, because data of one noise level take the
// same way block after block, where a branch per vector on points mixed at random either side
// of the short series' end mispredicted.
HOMODYNE_INLINE bool OnShortSeries(const double* r0, int n, V inv_scale) {
  V z_max = Splat(0.0);
  for (int c = 0; c < n; c += kLanes) {
    const V u = Load(r0 + c) * inv_scale;
    z_max = Max(u * u, z_max);
  }
  return !AnyGreater(z_max, Splat(kSoftL1SeriesBelow));
}

// The loss terms of robust_loss.h's EvaluateLoss for huber, cauchy and arctan, lane by lane
// with its expressions in its order: ρ(z) and, with kDerivs, the weight s² = max(ρ′ + 2zρ″,
// floor) and ρ′ itself (the passes carry w·ρ′·r0, not the factor ρ′/s², so no division by s²).
// `kind` is a robust LossKind; soft_l1 takes SoftL1Lanes (here only for ρ: its passes have
// their own loops).
template <bool kDerivs>
HOMODYNE_INLINE void LossLanes(int kind, V z, V& rho, V& weight, V& d1) {
  const V one = Splat(1.0);
  V curvature;
  switch (static_cast<LossKind>(kind)) {
    case LossKind::kHuber: {
      if (!AnyGreater(z, one)) {
        // Every lane inside the knee: ρ = z, weight max(1, floor) = 1, ρ′ = 1, the bits of
        // the expressions below without their square root and division.
        rho = z;
        if constexpr (kDerivs) {
          weight = one;
          d1 = one;
        }
        return;
      }
      const M out = z > one;
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
    default: {  // soft_l1, ρ only (weight and ρ′ set to 1, unused)
      V unused_weight, unused_factor;
      SoftL1Lanes<false>(z, rho, unused_weight, unused_factor);
      weight = d1 = one;
      return;
    }
  }
  if constexpr (kDerivs) weight = Max(curvature, Splat(kLossCurvatureFloor));
}

// The robust instantiations of the passes: none (linear), soft_l1 (homodyne's default, its own
// loop) and any other robust kind (a switch per vector).
inline constexpr int kLossNone = 0, kLossSoftL1 = 1, kLossOther = 2;

// The loss step of a vector from its residuals r0 and weights w (kMask: w as given, else every
// weight is 1 and the products with it are skipped, 1·y = y bit for bit): rho_w = w·ρ(z) and,
// with kDerivs, ws2 = w·s² and wr = w·ρ′·r0, the latter as (w·s²)·((ρ′/s²)·r0) for soft_l1
// (ρ′/s² = 1 + z on its series, no division) and as w·(ρ′·r0) for the others (no division by
// s²). One expression in every pass and copy: the same bits.
// kShort: soft_l1 with every lane on its short series (SoftL1Lanes).
template <bool kDerivs, bool kMask, int kRobust, bool kShort = false>
__attribute__((always_inline)) inline void LossStep(int kind, V inv_scale, V w, V r0, V& rho_w,
                                                    V& ws2, V& wr) {
  const V u = r0 * inv_scale;
  V rho, weight, gain;
  if constexpr (kRobust == kLossSoftL1) {
    SoftL1Lanes<kDerivs, kShort>(u * u, rho, weight, gain);
  } else {
    LossLanes<kDerivs>(kind, u * u, rho, weight, gain);
  }
  rho_w = kMask ? w * rho : rho;
  if constexpr (kDerivs) {
    ws2 = kMask ? w * weight : weight;
    if constexpr (kRobust == kLossSoftL1) {
      wr = ws2 * (gain * r0);
    } else {
      wr = kMask ? w * (gain * r0) : gain * r0;
    }
  } else {
    (void)ws2;
    (void)wr;
  }
}

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

// Two tile sums, each updated lane by lane exactly as Sum4 updates it (the same operations, so
// the same bits). The AVX-512 copy holds both in one 8-lane register (the first sum in lanes
// 0–3, the second in 4–7): one 512-bit multiply, FMA and add per pair instead of two 256-bit
// ones each, and half the registers, so that the normal-equation loop's sums stay in registers
// (as separate Sum4, 20 of them, GCC kept them on the stack: a load and a store each per
// vector). The other copies hold two Sum4.
#if HOMODYNE_POINT_TERMS_NATIVE_V8
struct Sum4Pair {
  V v;
  // (lo x0, lo x1) and (hi x0, hi x1) as one vector each.
  static HOMODYNE_INLINE V Los(V x0, V x1) {
    return __builtin_shufflevector(x0, x1, 0, 1, 2, 3, 8, 9, 10, 11);
  }
  static HOMODYNE_INLINE V His(V x0, V x1) {
    return __builtin_shufflevector(x0, x1, 4, 5, 6, 7, 12, 13, 14, 15);
  }
  // Sum4::AddProduct(x0, y0) on the first, (x1, y1) on the second.
  HOMODYNE_INLINE void AddProducts(V x0, V y0, V x1, V y1) {
    v += Fma(Los(x0, x1), Los(y0, y1), His(x0, x1) * His(y0, y1));
  }
  // Sum4::operator+=(x0) on the first, (x1) on the second.
  HOMODYNE_INLINE void Add(V x0, V x1) { v += Los(x0, x1) + His(x0, x1); }
  HOMODYNE_INLINE Sum4 First() const { return Sum4{Lo(v)}; }
  HOMODYNE_INLINE Sum4 Second() const { return Sum4{Hi(v)}; }
};
HOMODYNE_INLINE Sum4Pair ZeroPair() { return Sum4Pair{Splat(0.0)}; }
#else
struct Sum4Pair {
  Sum4 a, b;
  HOMODYNE_INLINE void AddProducts(V x0, V y0, V x1, V y1) {
    a.AddProduct(x0, y0);
    b.AddProduct(x1, y1);
  }
  HOMODYNE_INLINE void Add(V x0, V x1) {
    a += x0;
    b += x1;
  }
  HOMODYNE_INLINE Sum4 First() const { return a; }
  HOMODYNE_INLINE Sum4 Second() const { return b; }
};
HOMODYNE_INLINE Sum4Pair ZeroPair() { return Sum4Pair{Zero4(), Zero4()}; }
#endif
HOMODYNE_INLINE double Fold(Sum4 a) {
  double l[4];
  std::memcpy(l, &a.v, sizeof(l));
  return FoldLanes(l);
}

}  // namespace
}  // namespace homodyne::model::detail::HOMODYNE_POINT_TERMS_NS
