#include "model/heterodyne_block.h"

#include <cstdint>
#include <cstring>

#include "core/simd_clones.h"
#include "point_terms.h"

// The 4-lane vector type is passed between always-inline helpers only; the baseline clone
// (no AVX) would pass it in memory, which GCC notes as an ABI change.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace homodyne::model::detail {
namespace {

#define HOMODYNE_HET_INLINE __attribute__((always_inline)) inline
typedef double V4 __attribute__((vector_size(32)));
typedef std::int64_t M4 __attribute__((vector_size(32)));

// An 8-lane vector for the element-wise loops of the AVX-512 copy (their width does not
// change their bits); every sum keeps the 4-lane order of V4.
typedef double V8 __attribute__((vector_size(64)));

template <class V = V4>
HOMODYNE_HET_INLINE V Ld(const double* p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class V>
HOMODYNE_HET_INLINE void St(double* p, V v) {
  std::memcpy(p, &v, sizeof(v));
}
template <class V = V4>
HOMODYNE_HET_INLINE V Splat(double x) {
  return V{} + x;
}
template <class V>
constexpr int kWidth = static_cast<int>(sizeof(V) / sizeof(double));
// Lanes combined as (l0 + l1) + (l2 + l3).
HOMODYNE_HET_INLINE double Fold(V4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// The non-fraction physical parameters: index, coefficient, column vector (dp row, or −1 for
// the phase difference ΔP_v that phi0_het's derivative multiplies).
constexpr int kNf = 10;
constexpr int kNfParam[kNf] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 13};
constexpr int kNfCoef[kNf] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3};
constexpr int kGi = 4, kGj = 5;  // the fraction's coefficients
constexpr int kF0 = 9;           // first fraction parameter
constexpr int kNp = 14;

// Index of the pair (a, b) in HetBlockSums::s.
constexpr int Pair(int a, int b) {
  if (a > b) return Pair(b, a);
  return a * kHetCoefs - a * (a - 1) / 2 + (b - a);
}

HOMODYNE_HET_INLINE const double* Basis(const HetBlockColumns& col, int nf) {
  return nf < 9 ? col.dp[nf] : col.v;
}

// Σ over the first n (a multiple of kHetLanes) columns in 16 lanes (column mod 16), the four
// 4-lane accumulators added as (a0 + a1) + (a2 + a3) and then folded.
HOMODYNE_HET_INLINE double Sum1(const double* x, int n) {
  V4 a0{}, a1{}, a2{}, a3{};
  for (int c = 0; c < n; c += kHetLanes) {
    a0 += Ld(x + c);
    a1 += Ld(x + c + 4);
    a2 += Ld(x + c + 8);
    a3 += Ld(x + c + 12);
  }
  return Fold((a0 + a1) + (a2 + a3));
}
HOMODYNE_HET_INLINE double Sum2(const double* x, const double* y, int n) {
  V4 a0{}, a1{}, a2{}, a3{};
  for (int c = 0; c < n; c += kHetLanes) {
    a0 += Ld(x + c) * Ld(y + c);
    a1 += Ld(x + c + 4) * Ld(y + c + 4);
    a2 += Ld(x + c + 8) * Ld(y + c + 8);
    a3 += Ld(x + c + 12) * Ld(y + c + 12);
  }
  return Fold((a0 + a1) + (a2 + a3));
}
HOMODYNE_HET_INLINE double Sum3(const double* x, const double* y, const double* z, int n) {
  V4 a0{}, a1{}, a2{}, a3{};
  for (int c = 0; c < n; c += kHetLanes) {
    a0 += Ld(x + c) * Ld(y + c) * Ld(z + c);
    a1 += Ld(x + c + 4) * Ld(y + c + 4) * Ld(z + c + 4);
    a2 += Ld(x + c + 8) * Ld(y + c + 8) * Ld(z + c + 8);
    a3 += Ld(x + c + 12) * Ld(y + c + 12) * Ld(z + c + 12);
  }
  return Fold((a0 + a1) + (a2 + a3));
}

// The model, the residual and χ² term (the χ² pass's expressions), and the chain-rule
// coefficients of a tile's first n_pad columns (a multiple of V's width; data and weights
// zero-padded), all 0 at masked points (whatever their data).
template <class V>
HOMODYNE_HET_INLINE void CoefficientsOf(const HetBlockColumns& col, const HetTileInput& in,
                                        HetTileScratch& sc, int n_pad) {
  const double inv_sigma = in.inv_sigma;
  const double scale = in.contrast * in.inv_sigma;
  const V offset = Splat<V>(in.offset), contrast = Splat<V>(in.contrast), vscale = Splat<V>(scale);
  const V vinv_sigma = Splat<V>(inv_sigma), va = Splat<V>(in.a), vda = Splat<V>(in.da), zero{};
  for (int e = 0; e < n_pad; e += kWidth<V>) {
    const V cth = Ld<V>(in.cos_theta + e), sth = Ld<V>(in.sin_theta + e);
    const V hr = Ld<V>(col.hr + e), hs = Ld<V>(col.hs + e), m2 = Ld<V>(col.m2 + e);
    const V inv_n = Ld<V>(col.inv_norm + e);
    const V sum = Ld<V>(col.rr + e) + Ld<V>(col.ss + e) + m2 * hr * hs * cth;
    const V c2 = offset + (contrast * sum) / Ld<V>(col.norm + e);
    const V r = (Ld<V>(sc.data + e) - c2) * vinv_sigma;
    const V w = Ld<V>(sc.w + e);
    const auto on = w != zero;
    // g as the reference computes it: ∂c2/∂f_s subtracts g·∂norm/∂f_s from a term of the same
    // size (it nearly cancels where the fraction saturates), so g's rounding must be the
    // reference's.
    const V g = sum / Ld<V>(col.norm + e);
    const V dg = -(m2 * hr * hs) * sth * inv_n * vscale;
    const V hh = hr * hs * cth;
    St(sc.term + e, on ? w * r * r : zero);
    St(sc.r + e, on ? r : zero);
    St(sc.wr + e, on ? w * r : zero);
    St(sc.uc + e, on ? g * vinv_sigma : zero);
    St(sc.c[0] + e,
       on ? vscale * (Ld<V>(col.kr + e) + m2 * hs * cth) * inv_n * Ld<V>(col.dhr + e) : zero);
    St(sc.c[1] + e,
       on ? vscale * (Ld<V>(col.ks + e) + m2 * hr * cth) * inv_n * Ld<V>(col.dhs + e) : zero);
    St(sc.c[2] + e, on ? dg * va : zero);
    St(sc.c[3] + e, on ? dg * vda : zero);
    St(sc.c[4] + e, on ? vscale *
                             (Ld<V>(col.dsi0 + e) + Ld<V>(col.dsi1 + e) * hh * Ld<V>(col.dsi2 + e) -
                              g * Ld<V>(col.dni + e)) *
                             inv_n
                       : zero);
    St(sc.c[5] + e, on ? vscale *
                             (Ld<V>(col.dsj0 + e) + Ld<V>(col.dsj1 + e) * hh * Ld<V>(col.dsj2 + e) -
                              g * Ld<V>(col.dnj + e)) *
                             inv_n
                       : zero);
  }
}

}  // namespace

__attribute__((target("arch=x86-64-v4"))) void HetCoefficientsAvx512(const HetBlockColumns& col,
                                                                     const HetTileInput& in,
                                                                     HetTileScratch& sc, int n) {
  CoefficientsOf<V8>(col, in, sc, (n + 7) / 8 * 8);
}

HOMODYNE_SIMD_CLONES void HetCoefficientsV4(const HetBlockColumns& col, const HetTileInput& in,
                                            HetTileScratch& sc, int n) {
  CoefficientsOf<V4>(col, in, sc, (n + 3) / 4 * 4);
}

namespace {

// The AVX-512 copy when the CPU runs it (HasAvx512, point_terms.h), else the clones'.
void Coefficients(const HetBlockColumns& col, const HetTileInput& in, HetTileScratch& sc, int n) {
  if (HasAvx512()) {
    HetCoefficientsAvx512(col, in, sc, n);
  } else {
    HetCoefficientsV4(col, in, sc, n);
  }
}

}  // namespace

HOMODYNE_SIMD_CLONES void HetTileDerivatives(const HetBlockColumns& col, const HetTileInput& in,
                                             HetTileScratch& sc, double* tile_sums, bool normal) {
  const int n = col.n;
  const int n4 = (n + 3) / 4 * 4;
  // The tile's data and weights, zero-padded to whole vectors.
  if (in.weight != nullptr) {
    for (int e = 0; e < n; ++e) sc.w[e] = in.weight[e];
  } else {
    for (int e = 0; e < n; ++e) sc.w[e] = in.uniform_weight;
  }
  for (int e = 0; e < n; ++e) sc.data[e] = in.data[e];
  const int n8 = (n + 7) / 8 * 8;  // the widest copy's vectors
  for (int e = n; e < n8; ++e) sc.w[e] = sc.data[e] = 0.0;
  Coefficients(col, in, sc, n);
  if (in.loss != 0) {  // robust: the point terms in place (masked stay 0)
    RobustPointTerms(static_cast<LossKind>(in.loss), in.loss_inv_scale, in.loss_scale_sq, n, sc.r,
                     sc.w, sc.term, sc.wr);
  }
  // χ² in the χ² pass's lanes (column mod 4, carried over the row's blocks).
  double* lane = in.chi2_lanes;
  int c4 = 0;
  for (; c4 + 4 <= n; c4 += 4) {
    for (int l = 0; l < 4; ++l) lane[l] += sc.term[c4 + l];
  }
  for (int l = 0; c4 + l < n; ++l) lane[l] += sc.term[c4 + l];

  if (!normal) {
    V4 s_ruc{}, s_r{};
    for (int e = 0; e < n4; e += 4) {
      const V4 wr = Ld(sc.wr + e);
      s_ruc += wr * Ld(sc.uc + e);
      s_r += wr;
    }
    tile_sums[3] = Fold(s_ruc);
    tile_sums[4] = Fold(s_r);
    return;
  }
  V4 acc[kHetTileSums] = {};
  for (int e = 0; e < n4; e += 4) {
    const V4 w = Ld(sc.w + e), wr = Ld(sc.wr + e), uc = Ld(sc.uc + e);
    V4 wc[kHetCoefs];
#pragma GCC unroll 6
    for (int a = 0; a < kHetCoefs; ++a) wc[a] = w * Ld(sc.c[a] + e);
    const V4 wuc = w * uc;
    acc[0] += wuc * uc;
    acc[1] += wuc;
    acc[2] += w;
    acc[3] += wr * uc;
    acc[4] += wr;
#pragma GCC unroll 10
    for (int p = 0; p < kNf; ++p) {
      const V4 b = Ld(Basis(col, p) + e);
      const V4 wcb = wc[kNfCoef[p]] * b;
      acc[5 + 2 * p] += wcb * uc;
      acc[6 + 2 * p] += wcb;
    }
    acc[25] += wc[kGi] * uc;
    acc[26] += wc[kGi];
#pragma GCC unroll 4
    for (int d = 0; d < 4; ++d) {
      const V4 wcf = wc[kGj] * Ld(col.fj[d] + e);
      acc[27 + d] += wcf * uc;
      acc[31 + d] += wcf;
    }
  }
  for (int m = 0; m < kHetTileSums; ++m) tile_sums[m] = Fold(acc[m]);
}

namespace {

// K tiles' products added to the per-column sums over n_pad columns (a multiple of V's
// width), for each column tile after tile: the bits of adding one tile at a time, with one
// load and store of each sum per K tiles.
template <class V, int K>
HOMODYNE_HET_INLINE void AddTiles(int n_pad, const HetTileScratch* const* tiles, HetBlockSums& sums,
                                  bool normal) {
  for (int e = 0; e < n_pad; e += kWidth<V>) {
    V c[K][kHetCoefs], wc[K][kHetCoefs], wr[K];
#pragma GCC unroll 4
    for (int k = 0; k < K; ++k) {
      const V w = Ld<V>(tiles[k]->w + e);
      wr[k] = Ld<V>(tiles[k]->wr + e);
#pragma GCC unroll 6
      for (int a = 0; a < kHetCoefs; ++a) {
        c[k][a] = Ld<V>(tiles[k]->c[a] + e);
        wc[k][a] = w * c[k][a];
      }
    }
#pragma GCC unroll 6
    for (int a = 0; a < kHetCoefs; ++a) {
      V t = Ld<V>(sums.t[a] + e);
#pragma GCC unroll 4
      for (int k = 0; k < K; ++k) t += wr[k] * c[k][a];
      St(sums.t[a] + e, t);
    }
    if (!normal) continue;
#pragma GCC unroll 6
    for (int a = 0; a < kHetCoefs; ++a) {
#pragma GCC unroll 6
      for (int b = a; b < kHetCoefs; ++b) {
        double* s = sums.s[Pair(a, b)] + e;
        V v = Ld<V>(s);
#pragma GCC unroll 4
        for (int k = 0; k < K; ++k) v += wc[k][a] * c[k][b];
        St(s, v);
      }
    }
  }
}

template <class V>
HOMODYNE_HET_INLINE void AddTilesOf(int n, const HetTileScratch* const* tiles, int count,
                                    HetBlockSums& sums, bool normal) {
  const int n_pad = (n + kWidth<V> - 1) / kWidth<V> * kWidth<V>;
  if (count == 1) {
    AddTiles<V, 1>(n_pad, tiles, sums, normal);
  } else {
    AddTiles<V, kHetTileBatch>(n_pad, tiles, sums, normal);
  }
}

}  // namespace

__attribute__((target("arch=x86-64-v4"))) void HetAddTilesAvx512(int n,
                                                                 const HetTileScratch* const* tiles,
                                                                 int count, HetBlockSums& sums,
                                                                 bool normal) {
  AddTilesOf<V8>(n, tiles, count, sums, normal);
}

HOMODYNE_SIMD_CLONES void HetAddTilesV4(int n, const HetTileScratch* const* tiles, int count,
                                        HetBlockSums& sums, bool normal) {
  AddTilesOf<V4>(n, tiles, count, sums, normal);
}

// The AVX-512 copy when the CPU runs it (HasAvx512, point_terms.h), else the clones'.
void HetAddTiles(int n, const HetTileScratch* const* tiles, int count, HetBlockSums& sums,
                 bool normal) {
  if (HasAvx512()) {
    HetAddTilesAvx512(n, tiles, count, sums, normal);
  } else {
    HetAddTilesV4(n, tiles, count, sums, normal);
  }
}

HOMODYNE_SIMD_CLONES void HetFoldBlock(const HetBlockColumns& col, const HetBlockSums& sums,
                                       double* jtj, double* jtr) {
  const int n = (col.n + kHetLanes - 1) / kHetLanes * kHetLanes;
  const double* fi = col.fi;
  // Jᵀr: Σ_j T_a·b for the non-fraction parameters, f_s'(t_i)·Σ T_gi + Σ T_gj·f_s'(t_j).
  for (int p = 0; p < kNf; ++p) {
    jtr[kNfParam[p]] += Sum2(sums.t[kNfCoef[p]], Basis(col, p), n);
  }
  const double t_gi = Sum1(sums.t[kGi], n);
  for (int d = 0; d < 4; ++d) jtr[kF0 + d] += fi[d] * t_gi + Sum2(sums.t[kGj], col.fj[d], n);
  if (jtj == nullptr) return;
  auto at = [jtj](int p, int q) -> double& { return p <= q ? jtj[p * kNp + q] : jtj[q * kNp + p]; };
  for (int p = 0; p < kNf; ++p) {
    const int a = kNfCoef[p];
    const double* bp = Basis(col, p);
    for (int q = p; q < kNf; ++q) {
      at(kNfParam[p], kNfParam[q]) += Sum3(sums.s[Pair(a, kNfCoef[q])], bp, Basis(col, q), n);
    }
    const double x = Sum2(sums.s[Pair(a, kGi)], bp, n);
    for (int d = 0; d < 4; ++d) {
      at(kNfParam[p], kF0 + d) += fi[d] * x + Sum3(sums.s[Pair(a, kGj)], bp, col.fj[d], n);
    }
  }
  const double z_ii = Sum1(sums.s[Pair(kGi, kGi)], n);
  double z_ij[4];
  for (int d = 0; d < 4; ++d) z_ij[d] = Sum2(sums.s[Pair(kGi, kGj)], col.fj[d], n);
  for (int d = 0; d < 4; ++d) {
    for (int e = d; e < 4; ++e) {
      const double z_jj = Sum3(sums.s[Pair(kGj, kGj)], col.fj[d], col.fj[e], n);
      at(kF0 + d, kF0 + e) += ((fi[d] * fi[e]) * z_ii + (fi[d] * z_ij[e] + fi[e] * z_ij[d])) + z_jj;
    }
  }
}

}  // namespace homodyne::model::detail
