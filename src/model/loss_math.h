// log1p(z) and atan(z) for z ≥ 0 in basic operations only (+ − × ÷, fused multiply-add,
// selects and exact bit manipulation), for cauchy's and arctan's ρ (robust_loss.h). Written
// once over an operations type O, so the scalar EvaluateLoss (O = ScalarLossOps, below) and
// the kernel's vector copies (point_terms_impl.h, O over the 8-lane vector) run the same
// operations in the same order: a point's ρ has the same bits in every copy and in every pass,
// and the vector loops need no per-lane libm call (which cost 3–9× the linear pass).
//
// O provides: T (double or a vector of doubles) with + − × ÷ and >, <; Splat(double) → T;
// Fma(a, b, c) (a·b + c rounded once); Where(mask, a, b); and Reduce(u, k, m, scale) for
// u ≥ 1: u = 2^k·m exactly with m ∈ [√2/2, √2) (k ≥ 0 as a double), scale = 2^−k for k < 1000
// and 0 beyond (any u: inf and NaN give anything, the callers select u for them). Reduce is
// exact integer work on the bits, so every correct implementation gives the same bits.
//
// Accuracy (both checked against long double in model_robust_loss_test over z from 1e-300 to
// 1e300): log1p within 3 ulp, atan within 2 ulp. The analysis behind it:
//   log1p: 1 + z = u + ea exactly (two-sum), u = 2^k·m, f = (m − 1) + ea·2^−k (m − 1 exact,
//   one rounding), log(1 + f) = 2·atanh(s) with s = f/(2 + f), |s| ≤ 3 − 2√2 < 0.1716,
//   = 2s + 2s·Σ_{j=1..10} s^{2j}/(2j + 1) (Taylor; the first term left out is below
//   s^{22}/23 < 2^−60 relative), plus k·ln2 in two parts (k·ln2_hi exact for k ≤ 2048).
//   2s carries about 1 ulp (the rounding of 2 + f and of the division), the rest ≤ 1 more
//   (measured worst 2.5 ulp).
//   atan: z is taken to the nearest of θ ∈ {0, atan(b1), π/4, atan(b3), π/2} (b1, b3 the
//   doubles nearest tan(π/8), tan(3π/8); θ as double + double), atan(z) = θ + atan(t) with
//   t = (z − b)/(1 + b·z) (t = −1/z at π/2), |t| ≤ tan(π/16) + 1e-15 < 0.19892, and
//   atan(t) = t + t·Σ_{j=1..10} (−1)^j t^{2j}/(2j + 1) (alternating: the error is below
//   t^{22}/23 < 2^−55 relative; measured worst 1.8 ulp).
#pragma once

namespace homodyne::model {

template <class O>
inline typename O::T Log1pNonNegative(typename O::T z) {
  using T = typename O::T;
  const T one = O::Splat(1.0);
  const T u = one + z;
  const T bb = u - z;
  const T ea = (z - (u - bb)) + (one - bb);  // 1 + z = u + ea exactly (finite z)
  T k, m, scale;
  O::Reduce(u, k, m, scale);
  const T f = O::Fma(ea, scale, m - one);
  // q = 2s = 2f/(2 + f) (2f, not s: s of a subnormal f would lose its last bit), and
  // log(1 + f) = q + q·Σ_{j≥1} (q²)^j/((2j + 1)·4^j).
  const T q = (f + f) / (O::Splat(2.0) + f);
  const T w = q * q;
  // 1/((2j + 1)·4^j), j = 10 … 1, by Horner (the 4^j exact).
  T r = O::Splat(0x1p-20 / 21.0);
  r = O::Fma(r, w, O::Splat(0x1p-18 / 19.0));
  r = O::Fma(r, w, O::Splat(0x1p-16 / 17.0));
  r = O::Fma(r, w, O::Splat(0x1p-14 / 15.0));
  r = O::Fma(r, w, O::Splat(0x1p-12 / 13.0));
  r = O::Fma(r, w, O::Splat(0x1p-10 / 11.0));
  r = O::Fma(r, w, O::Splat(0x1p-8 / 9.0));
  r = O::Fma(r, w, O::Splat(0x1p-6 / 7.0));
  r = O::Fma(r, w, O::Splat(0x1p-4 / 5.0));
  r = O::Fma(r, w, O::Splat(0x1p-2 / 3.0));
  const T log_m = O::Fma(q, r * w, q);
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // 21 trailing zero bits: k·kLn2Hi exact
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  const T result = k * O::Splat(kLn2Hi) + O::Fma(k, O::Splat(kLn2Lo), log_m);
  // u = ∞ (z = ∞) gives ∞ and NaN gives NaN, as std::log1p.
  return O::Where(u < O::Splat(__builtin_inf()), result, u);
}

template <class O>
inline typename O::T AtanNonNegative(typename O::T z) {
  using T = typename O::T;
  const T zero = O::Splat(0.0), one = O::Splat(1.0);
  // The sectors' bounds tan(π/16), tan(3π/16), tan(5π/16), tan(7π/16) (rounded: any bound
  // near them keeps |t| within the series' range).
  const auto s1 = z > O::Splat(0.198912367379658);
  const auto s2 = z > O::Splat(0.6681786379192989);
  const auto s3 = z > O::Splat(1.496605762665489);
  const auto s4 = z > O::Splat(5.027339492125848);
  constexpr double kB1 = 0x1.a827999fcef32p-2, kB3 = 0x1.3504f333f9de6p+1;
  // t = (z − b)/(1 + z·b) for b = 0, b1, 1, b3, and −1/z at π/2 (so that z = ∞ gives −0).
  const T a = O::Where(s4, zero, one);
  const T b = O::Where(
      s4, one, O::Where(s3, O::Splat(kB3), O::Where(s2, one, O::Where(s1, O::Splat(kB1), zero))));
  const T hi = O::Where(s4, O::Splat(0x1.921fb54442d18p+0),
                        O::Where(s3, O::Splat(0x1.2d97c7f3321d2p+0),
                                 O::Where(s2, O::Splat(0x1.921fb54442d18p-1),
                                          O::Where(s1, O::Splat(0x1.921fb54442d18p-2), zero))));
  const T lo = O::Where(s4, O::Splat(0x1.1a62633145c07p-54),
                        O::Where(s3, O::Splat(0x1.fc774dbe287a0p-56),
                                 O::Where(s2, O::Splat(0x1.1a62633145c07p-55),
                                          O::Where(s1, O::Splat(0x1.c398861b78b55p-59), zero))));
  const T t = O::Where(s4, O::Splat(-1.0), z - b) / O::Fma(z, b, a);
  const T w = t * t;
  // (−1)^j/(2j + 1), j = 10 … 1, by Horner.
  T p = O::Splat(1.0 / 21.0);
  p = O::Fma(p, w, O::Splat(-1.0 / 19.0));
  p = O::Fma(p, w, O::Splat(1.0 / 17.0));
  p = O::Fma(p, w, O::Splat(-1.0 / 15.0));
  p = O::Fma(p, w, O::Splat(1.0 / 13.0));
  p = O::Fma(p, w, O::Splat(-1.0 / 11.0));
  p = O::Fma(p, w, O::Splat(1.0 / 9.0));
  p = O::Fma(p, w, O::Splat(-1.0 / 7.0));
  p = O::Fma(p, w, O::Splat(1.0 / 5.0));
  p = O::Fma(p, w, O::Splat(-1.0 / 3.0));
  return hi + (lo + O::Fma(t, p * w, t));
}

}  // namespace homodyne::model
