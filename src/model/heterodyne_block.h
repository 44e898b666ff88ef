// The derivative passes of the two-component kernel (heterodyne_kernel.h) over one block of a
// row's columns (private to src/model).
//
// A point's derivative row u = ∂c2/∂θ / σ over the 14 physical parameters factorises into
// angle-independent vectors of its columns and 6 scalar coefficients per angle:
//   u = (c_r·ΔP_r', c_s·ΔP_s', c_v·ΔP_v', g_i·f_s'(t_i) + g_j·f_s'(t_j), c_φ·ΔP_v)
// (ΔP' the prefix derivatives' differences j − i, f_s' the fraction's 4 derivatives, the
// c's and g's the chain-rule factors of the angle). So Σ_k w·u·uᵀ over the angles of a column
// is M_jᵀ·S_j·M_j with S_j = Σ_k w·c·cᵀ (6 × 6): per point the kernel adds 21 + 6 products to
// per-column sums S and T (T = Σ_k w·r·c, for Jᵀr) instead of the 105 + 14 of the physical
// JᵀWJ and JᵀWr, and once per block folds them with the column vectors into JᵀWJ and JᵀWr.
// The per-angle rows (Σ w·u_c·u, Σ w·u_o·u) are summed per tile from the same factors.
//
// Every sum runs over columns in fixed lanes (lane = column mod 4, or mod 16 in the fold)
// combined in a fixed order, and the element-wise work has no contraction: the same bits on
// every ISA copy (HOMODYNE_SIMD_CLONES, and an 8-lane AVX-512 copy of the element-wise loops
// taken when HasAvx512(), point_terms.h) and for every thread count.
#pragma once

#include "model/robust_loss.h"

namespace homodyne::model::detail {

inline constexpr int kHetBlock = 64;     // columns per block (multiple of kHetLanes)
inline constexpr int kHetLanes = 16;     // the fold's lanes: blocks are zero-padded to them
inline constexpr int kHetCoefs = 6;      // c_r, c_s, c_v, c_φ, g_i, g_j
inline constexpr int kHetPairs = 21;     // upper triangle of the 6 × 6 coefficient products
inline constexpr int kHetTileSums = 35;  // per-tile sums of TileDerivatives (see there)

// The angle-independent quantities of a block's columns, zero beyond n up to kHetBlock.
struct HetBlockColumns {
  int n = 0;
  alignas(64) double hr[kHetBlock], hs[kHetBlock], rr[kHetBlock], ss[kHetBlock], m2[kHetBlock],
      norm[kHetBlock], v[kHetBlock];
  // 1/norm; ∂h_r/∂ΔP_r, ∂h_s/∂ΔP_s (0 where the clip is active); 2(f_r,i f_r,j)²h_r and
  // 2(f_s,i f_s,j)²h_s; ∂norm/∂f_s,i and ∂norm/∂f_s,j (0 where the floor holds); the sum's
  // derivatives with respect to f_s,i and f_s,j as d0 + d1·(h_r·h_s·cos θ)·d2.
  alignas(64) double inv_norm[kHetBlock], dhr[kHetBlock], dhs[kHetBlock], kr[kHetBlock],
      ks[kHetBlock], dni[kHetBlock], dnj[kHetBlock], dsi0[kHetBlock], dsi1[kHetBlock],
      dsi2[kHetBlock], dsj0[kHetBlock], dsj1[kHetBlock], dsj2[kHetBlock];
  // ΔP' of the prefixes r, s, v (3 each, in the parameter order) and f_s'(t_j) (4).
  alignas(64) double dp[9][kHetBlock];
  alignas(64) double fj[4][kHetBlock];
  double fi[4] = {0.0, 0.0, 0.0, 0.0};  // f_s'(t_i): the row's
};

// Per-column sums over a block's angles.
struct HetBlockSums {
  alignas(64) double s[kHetPairs][kHetBlock];  // Σ w·c_a·c_b, a ≤ b
  alignas(64) double t[kHetCoefs][kHetBlock];  // Σ w·r·c_a
};

// One tile (angle) over a block's columns.
struct HetTileInput {
  const double* data = nullptr;    // n values
  const double* weight = nullptr;  // n values, or nullptr → uniform_weight
  double uniform_weight = 0.0;
  double contrast = 0.0, offset = 0.0, inv_sigma = 0.0;
  double a = 0.0, da = 0.0;           // q·cos(angle), its derivative with respect to phi0_het
  const double* cos_theta = nullptr;  // n values
  const double* sin_theta = nullptr;  // n values
  double* chi2_lanes = nullptr;       // 4 lanes (column mod 4) of Σ w·r², carried over blocks
  // The loss (model/robust_loss.h, a LossKind as int; 0 linear): robust, each point's χ² term
  // is w·C²·ρ(z), z = (r·loss_inv_scale)² (loss_inv_scale = 1/C), its weight w·s² and its
  // weighted residual w·ρ′·r in every sum (robust_loss.h, RobustPointTerms: the χ² pass and
  // the derivative passes both use it, so their χ² have the same bits).
  int loss = 0;
  double loss_inv_scale = 0.0, loss_scale_sq = 0.0;
};

// Scratch of TileDerivatives (per thread).
struct HetTileScratch {
  alignas(64) double data[kHetBlock], w[kHetBlock], wr[kHetBlock], uc[kHetBlock],
      c[kHetCoefs][kHetBlock], term[kHetBlock], r[kHetBlock];
};

// Fills the tile's coefficients in `sc`, adds its χ² terms to its χ² lanes, and writes the
// tile sums: with `normal`, sums[35] = Σ w·u_c², Σ w·u_c, Σ w, Σ w·r·u_c, Σ w·r, then per
// non-fraction physical parameter p (0–8, 13 in order) Σ w·u_c·c·b and Σ w·c·b, then
// Σ w·u_c·g_i, Σ w·g_i, Σ w·u_c·g_j·f_s,j'(4), Σ w·g_j·f_s,j'(4); without, sums[3] = Σ w·r·u_c
// and sums[4] = Σ w·r only (the same bits as with `normal`).
void HetTileDerivatives(const HetBlockColumns& col, const HetTileInput& in, HetTileScratch& sc,
                        double* tile_sums, bool normal);

inline constexpr int kHetTileBatch = 2;  // tiles per HetAddTiles call (at most)
// Adds `count` (1 … kHetTileBatch) tiles' products to the per-column sums over n columns (t
// always, s with `normal`), tile after tile for each column: the bits do not depend on how
// the tiles are batched.
void HetAddTiles(int n, const HetTileScratch* const* tiles, int count, HetBlockSums& sums,
                 bool normal);

// Adds the block's folded sums into jtj (14 × 14 row-major, upper triangle; nullptr: not
// wanted) and jtr (14). Jᵀr has the same bits with and without jtj.
void HetFoldBlock(const HetBlockColumns& col, const HetBlockSums& sums, double* jtj, double* jtr);

// The copies of the element-wise loops behind HetTileDerivatives (the coefficients of a
// tile's n columns from sc.data and sc.w, zero-padded to a multiple of 8) and HetAddTiles,
// which take the
// AVX-512 one when HasAvx512() (point_terms.h): 8 lanes for x86-64-v4 (call only when
// HasAvx512()), and 4-lane clones. They give the same bits (model_heterodyne_block_test).
void HetCoefficientsAvx512(const HetBlockColumns& col, const HetTileInput& in, HetTileScratch& sc,
                           int n);
void HetCoefficientsV4(const HetBlockColumns& col, const HetTileInput& in, HetTileScratch& sc,
                       int n);
void HetAddTilesAvx512(int n, const HetTileScratch* const* tiles, int count, HetBlockSums& sums,
                       bool normal);
void HetAddTilesV4(int n, const HetTileScratch* const* tiles, int count, HetBlockSums& sums,
                   bool normal);

}  // namespace homodyne::model::detail
