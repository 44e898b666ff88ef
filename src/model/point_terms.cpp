#include "point_terms.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "homodyne/model/constants.h"
#include "simd_clones.h"

namespace homodyne::model::detail {
namespace {

typedef double V4 __attribute__((vector_size(32)));

inline double Pick(bool condition, double if_true, double if_false) {
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(condition);
  return std::bit_cast<double>((std::bit_cast<std::uint64_t>(if_true) & mask) |
                               (std::bit_cast<std::uint64_t>(if_false) & ~mask));
}

// Out-parameter form: returning a 32-byte vector by value changes the ABI without AVX.
__attribute__((always_inline)) inline void Load(V4& v, const double* p) {
  std::memcpy(&v, p, sizeof(v));
}

__attribute__((always_inline)) inline double Fold(const V4& v) {
  return (v[0] + v[1]) + (v[2] + v[3]);
}

// Elementwise point values of one block, padded with zeros to a multiple of 4.
struct Points {
  alignas(64) double w[kMaxBlock], r[kMaxBlock], uc[kMaxBlock];
  alignas(64) double alpha[kMaxBlock], beta[kMaxBlock], gamma[kMaxBlock];
};

template <bool kLaminar, bool kDerivs>
__attribute__((always_inline)) inline int ComputePoints(const PointBlock& in, Points& pt) {
  const int n = in.n;
  const int n4 = (n + 3) & ~3;
  const double contrast = in.contrast, offset = in.offset, inv_sigma = in.inv_sigma;
  const double* __restrict g1d = in.g1d;
  const double* __restrict sv = in.s;
  const double* __restrict dsv = in.ds;
  const double* __restrict fac = in.fac;
  const double* __restrict ig = in.ig;
  const double* __restrict data = in.data;
  if (in.weight != nullptr) {
    for (int c = 0; c < n; ++c) pt.w[c] = in.weight[c];
  } else {
    for (int c = 0; c < n; ++c) pt.w[c] = in.uniform_weight;
  }
  for (int c = 0; c < n; ++c) {
    const double s = kLaminar ? sv[c] : 1.0;
    const double g1_raw = kLaminar ? g1d[c] * s : g1d[c];
    const bool alive = g1_raw > kG1Floor;  // the g1 floor passes no gradient when selected
    const double g1 = Pick(alive, g1_raw, kG1Floor);
    const double g1sq = g1 * g1;
    const double model = offset + contrast * g1sq;
    // A masked point (weight 0) contributes exactly 0, even if its data are not finite.
    pt.r[c] = Pick(pt.w[c] != 0.0, (data[c] - model) * inv_sigma, 0.0);
    if constexpr (kDerivs) {
      pt.uc[c] = g1sq * inv_sigma;
      const double dc2_dg1 = Pick(alive, contrast * 2.0 * g1 * inv_sigma, 0.0);
      pt.alpha[c] = (kLaminar ? dc2_dg1 * s : dc2_dg1) * fac[c];
      if constexpr (kLaminar) {
        const double ds_scaled = dc2_dg1 * g1d[c] * dsv[c];
        pt.beta[c] = ds_scaled * in.a;
        pt.gamma[c] = ds_scaled * in.b * ig[c];
      }
    }
  }
  for (int c = n; c < n4; ++c) {
    pt.w[c] = pt.r[c] = pt.uc[c] = pt.alpha[c] = pt.beta[c] = pt.gamma[c] = 0.0;
  }
  return n4;
}

template <bool kLaminar>
__attribute__((always_inline)) inline void Normal(const PointBlock& in, double* sums) {
  Points pt;
  const int n4 = ComputePoints<kLaminar, true>(in, pt);
  // Per-column sums over the angles (elementwise).
  double* __restrict saa = in.saa;
  double* __restrict sar = in.sar;
  for (int c = 0; c < n4; ++c) {
    const double wa = pt.w[c] * pt.alpha[c];
    saa[c] += wa * pt.alpha[c];
    sar[c] += wa * pt.r[c];
  }
  if constexpr (kLaminar) {
    double* __restrict sab = in.sab;
    double* __restrict sbb = in.sbb;
    double* __restrict sag = in.sag;
    double* __restrict sbg = in.sbg;
    double* __restrict sgg = in.sgg;
    double* __restrict sbr = in.sbr;
    double* __restrict sgr = in.sgr;
    for (int c = 0; c < n4; ++c) {
      const double wa = pt.w[c] * pt.alpha[c];
      const double wb = pt.w[c] * pt.beta[c];
      const double wg = pt.w[c] * pt.gamma[c];
      sab[c] += wa * pt.beta[c];
      sbb[c] += wb * pt.beta[c];
      sag[c] += wa * pt.gamma[c];
      sbg[c] += wb * pt.gamma[c];
      sgg[c] += wg * pt.gamma[c];
      sbr[c] += wb * pt.r[c];
      sgr[c] += wg * pt.r[c];
    }
  }
  // Per-tile sums: 4-lane vector reductions.
  V4 acc[kNumTileSums];
  for (auto& v : acc) v = V4{0.0, 0.0, 0.0, 0.0};
  for (int c = 0; c < n4; c += 4) {
    V4 w, r, uc, alpha;
    Load(w, pt.w + c);
    Load(r, pt.r + c);
    Load(uc, pt.uc + c);
    Load(alpha, pt.alpha + c);
    const V4 wr = w * r, wuc = w * uc, wa = w * alpha, wuca = wuc * alpha;
    acc[kSumChi2] += wr * r;
    acc[kSumUcUc] += wuc * uc;
    acc[kSumUc] += wuc;
    acc[kSumW] += w;
    acc[kSumUcR] += uc * wr;
    acc[kSumR] += wr;
    for (int q = 0; q < 3; ++q) {
      V4 e;
      Load(e, in.e[q] + c);
      acc[kSumUcAlphaE + q] += wuca * e;
      acc[kSumAlphaE + q] += wa * e;
    }
    if constexpr (kLaminar) {
      V4 beta, gamma;
      Load(beta, pt.beta + c);
      Load(gamma, pt.gamma + c);
      const V4 wb = w * beta, wucb = wuc * beta;
      for (int q = 0; q < 3; ++q) {
        V4 f;
        Load(f, in.f[q] + c);
        acc[kSumUcBetaF + q] += wucb * f;
        acc[kSumBetaF + q] += wb * f;
      }
      acc[kSumUcGamma] += wuc * gamma;
      acc[kSumGamma] += w * gamma;
    }
  }
  for (int k = 0; k < kNumTileSums; ++k) sums[k] += Fold(acc[k]);
}

template <bool kLaminar>
__attribute__((always_inline)) inline void Gradient(const PointBlock& in, double* sums) {
  Points pt;
  const int n4 = ComputePoints<kLaminar, true>(in, pt);
  double* __restrict sar = in.sar;
  for (int c = 0; c < n4; ++c) {
    const double wa = pt.w[c] * pt.alpha[c];
    sar[c] += wa * pt.r[c];
  }
  if constexpr (kLaminar) {
    double* __restrict sbr = in.sbr;
    double* __restrict sgr = in.sgr;
    for (int c = 0; c < n4; ++c) {
      const double wb = pt.w[c] * pt.beta[c];
      const double wg = pt.w[c] * pt.gamma[c];
      sbr[c] += wb * pt.r[c];
      sgr[c] += wg * pt.r[c];
    }
  }
  V4 chi2 = {0.0, 0.0, 0.0, 0.0}, ucr = chi2, rsum = chi2;
  for (int c = 0; c < n4; c += 4) {
    V4 w, r, uc;
    Load(w, pt.w + c);
    Load(r, pt.r + c);
    Load(uc, pt.uc + c);
    const V4 wr = w * r;
    chi2 += wr * r;
    ucr += uc * wr;
    rsum += wr;
  }
  sums[kSumChi2] += Fold(chi2);
  sums[kSumUcR] += Fold(ucr);
  sums[kSumR] += Fold(rsum);
}

}  // namespace

HOMODYNE_SIMD_CLONES void GradientLaminarBlock(const PointBlock& in, double* sums) {
  Gradient<true>(in, sums);
}

HOMODYNE_SIMD_CLONES void GradientStaticBlock(const PointBlock& in, double* sums) {
  Gradient<false>(in, sums);
}

HOMODYNE_SIMD_CLONES void NormalLaminarBlock(const PointBlock& in, double* sums) {
  Normal<true>(in, sums);
}

HOMODYNE_SIMD_CLONES void NormalStaticBlock(const PointBlock& in, double* sums) {
  Normal<false>(in, sums);
}

HOMODYNE_SIMD_CLONES double Chi2Block(const PointBlock& in) {
  Points pt;
  const int n4 =
      in.s != nullptr ? ComputePoints<true, false>(in, pt) : ComputePoints<false, false>(in, pt);
  V4 acc = {0.0, 0.0, 0.0, 0.0};
  for (int c = 0; c < n4; c += 4) {
    V4 w, r;
    Load(w, pt.w + c);
    Load(r, pt.r + c);
    acc += (w * r) * r;
  }
  return Fold(acc);
}

}  // namespace homodyne::model::detail
