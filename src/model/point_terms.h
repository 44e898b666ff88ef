// Vectorised per-(tile, block) point terms of the kernel (private to src/model).
//
// For one tile's block of n ≤ kMaxBlock columns, kLanes columns at a time (explicit vectors): g1,
// c2, residuals and the derivative scalars, the per-column angle sums S and the per-tile sums (lane
// = column mod 4, lanes combined as (l0 + l1) + (l2 + l3)), in one pass over the points. The
// summation order is fixed, so results do not depend on threads; every pass computes a point's
// residual with the same code, so their χ² agree bit for bit.
#pragma once

#include "separable.h"

namespace homodyne::model::detail {

inline constexpr int kLanes = 8;  // columns per vector (lane = column mod kLanes)
// Capacity of a block: the χ² and model passes take blocks of up to kMaxBlock columns, the
// gradient and normal-equation passes (whose per-column sums must stay in L1) half of it.
inline constexpr int kMaxBlock = 256;  // multiple of kLanes

// The fold of a tile sum's 4 lanes, (l0 + l1) + (l2 + l3): the point loops' order, and the
// kernel's for a χ² carried in PointBlock::chi2_lanes (so that every pass folds it alike).
inline double FoldLanes(const double* l) { return (l[0] + l[1]) + (l[2] + l[3]); }

enum TileSum : int {
  kSumChi2 = 0,                   // Σ w·r²
  kSumUcUc,                       // Σ w·uc²   (uc = g1²/σ)
  kSumUc,                         // Σ w·uc
  kSumW,                          // Σ w
  kSumUcR,                        // Σ w·uc·r
  kSumR,                          // Σ w·r
  kSumUcAlphaE,                   // Σ w·uc·α·e_q (3)
  kSumAlphaE = kSumUcAlphaE + 3,  // Σ w·α·e_q (3)
  kSumUcBetaF = kSumAlphaE + 3,   // Σ w·uc·β·f_q (3)
  kSumBetaF = kSumUcBetaF + 3,    // Σ w·β·f_q (3)
  kSumUcGamma = kSumBetaF + 3,    // Σ w·uc·γ
  kSumGamma,                      // Σ w·γ
  kNumTileSums
};

struct PointBlock {
  int n = 0;
  // Angle-independent, per column. The caller zero-fills e, f, fac, g1d, ig from n up to the
  // next multiple of kLanes.
  const double* g1d = nullptr;
  const double* fac = nullptr;
  const double* e[3] = {nullptr, nullptr, nullptr};
  const double* ig = nullptr;
  const double* f[3] = {nullptr, nullptr, nullptr};
  // This tile's angle (laminar; nullptr for static): sinc² and d sinc²/dx per column, filled
  // by the caller for the columns outside [sep_lo, sep_hi); the columns [sep_lo, sep_hi)
  // (multiples of kLanes, within the block's whole vectors) take the separable shear path
  // (separable.h), evaluated from `sep` inside the point loop (sep_lo = sep_hi: none). The
  // caller zero-fills s and ds from n up to the next multiple of kLanes.
  const double* s = nullptr;
  const double* ds = nullptr;
  int sep_lo = 0, sep_hi = 0;
  SeparableRow sep;
  const double* data = nullptr;    // n values
  const double* weight = nullptr;  // n values (times weight_scale) or nullptr → uniform_weight
  // Software prefetch: the loops request prefetch_data[c] (and prefetch_weight[c] when weight
  // is set) with each whole vector of columns c, spreading the next block's requests over the
  // block (the caller points them at this tile's next block, or at data/weight for the last).
  const double* prefetch_data = nullptr;
  const double* prefetch_weight = nullptr;
  // The 4 lane sums of Σ w·r0² (the χ² before its 1/σ², in the lanes of the tile sums),
  // carried across a tile's blocks: read at the block's start and written at its end, so that
  // a tile's χ² does not depend on how its columns are cut into blocks (the χ² and model passes
  // take wider blocks than the gradient and normal passes, and all give the same χ² bits).
  // nullptr: the block's sum starts from 0.
  double* chi2_lanes = nullptr;
  double uniform_weight = 0.0;
  double weight_scale = 1.0;  // multiplies the weight array's values (ModelKernel::Impl)
  double contrast = 0.0, offset = 0.0, inv_sigma = 0.0;
  // The loss (robust_loss.h), an int of LossKind: 0 (linear) sums w·r² and the plain normal
  // equations. Robust: with z = (r0·loss_inv_scale)² (loss_inv_scale = 1/(σ·C)), the χ² lanes
  // sum w·ρ(z) and the χ² is their sum times loss_scale_sq = C²; every sum with r becomes a sum
  // with w·ρ′·r, every other weighted sum takes w·s², s² = max(ρ′ + 2zρ″, ε) (the point loops
  // use w·s² as the weight and r0·ρ′/s² as the residual). The unit-weight loops are not used.
  int loss = 0;
  double loss_inv_scale = 0.0;
  double loss_scale_sq = 0.0;
  double a = 0.0, b = 0.0;  // ∂x/∂I_Γ, ∂x/∂φ0 / I_Γ (laminar)
  // Per-column sums over angles, updated in place: w·αα, αβ, ββ, αγ, βγ, γγ, αr0, βr0, γr0
  // (r0 = σ·r: FoldColumns applies the 1/σ).
  double *saa = nullptr, *sab = nullptr, *sbb = nullptr, *sag = nullptr, *sbg = nullptr,
         *sgg = nullptr, *sar = nullptr, *sbr = nullptr, *sgr = nullptr;
};

// Folds a block's per-column angle sums (block.saa … block.sgr, after every tile of the block
// has added to them) into the physics block, u = (α·e, β·f, γ), over the first n columns
// (n a multiple of kLanes; e, f and the sums zero-padded up to it): jtj (kNp × kNp, upper
// triangle, kNp = 7 laminar, 3 static) and jtr (kNp) gain Σ_c of the products (vector lanes
// over the columns, folded as in the tile sums). jtj = nullptr: Jᵀr only, with the same
// values as with jtj. Reads only the block's column pointers.
void FoldLaminarColumns(const PointBlock& block, int n, double* jtj, double* jtr);
void FoldStaticColumns(const PointBlock& block, int n, double* jtj, double* jtr);

// Writes the tile sums to sums[kNumTileSums] (every entry; the caller need not zero them) and
// adds to the per-column S arrays.
void NormalLaminarBlock(const PointBlock& in, double* sums);
void NormalStaticBlock(const PointBlock& in, double* sums);
// Gradient-only variants: update only sar (and sbr, sgr for laminar) and write only
// sums[kSumChi2], sums[kSumUcR], sums[kSumR], with the same expressions and order as the
// normal passes (bit-identical values).
void GradientLaminarBlock(const PointBlock& in, double* sums);
void GradientStaticBlock(const PointBlock& in, double* sums);
// Σ w·r² in the same lanes and order as the normal passes (bit-identical χ²). With chi2_lanes
// set, the sum continues the carried lanes and returns (and sums[kSumChi2] above holds) the
// χ² of everything carried so far.
double Chi2Block(const PointBlock& in);
// c2 of the block's n columns into out[0 … n), the values whose residuals the passes above
// sum (the data are loaded but do not enter c2; the weights are not read).
void ModelBlock(const PointBlock& in, double* out);

// The compiled copies behind the functions above (point_terms_impl.h): `halves` (8 lanes as
// two 4-lane halves, baseline ISA, fma() per lane) and, on x86-64 with GCC/Clang, `avx2` (the
// halves for x86-64-v3; call only when HasAvx2Fma()) and `avx512` (a native 8-lane vector; call
// only when HasAvx512()). They give the same bits.
#define HOMODYNE_POINT_TERMS_DECLARE                                                 \
  void FoldLaminarColumns(const PointBlock& block, int n, double* jtj, double* jtr); \
  void FoldStaticColumns(const PointBlock& block, int n, double* jtj, double* jtr);  \
  void GradientLaminarBlock(const PointBlock& block, double* sums);                  \
  void GradientStaticBlock(const PointBlock& block, double* sums);                   \
  void NormalLaminarBlock(const PointBlock& block, double* sums);                    \
  void NormalStaticBlock(const PointBlock& block, double* sums);                     \
  double Chi2Block(const PointBlock& block);                                         \
  void ModelBlock(const PointBlock& block, double* out);
namespace halves {
HOMODYNE_POINT_TERMS_DECLARE
}  // namespace halves
namespace avx2 {
HOMODYNE_POINT_TERMS_DECLARE
}  // namespace avx2
namespace avx512 {
HOMODYNE_POINT_TERMS_DECLARE
}  // namespace avx512
#undef HOMODYNE_POINT_TERMS_DECLARE
// True when the CPU runs x86-64-v4 code (AVX-512 F, BW, CD, DQ, VL) and the environment
// variable HOMODYNE_NO_AVX512 is unset or empty; the entry points then take the avx512 copy.
bool HasAvx512();
// True when the CPU has AVX2 and FMA (x86-64-v3's vector and FMA instructions) and the
// environment variable HOMODYNE_NO_AVX2 is unset or empty (with HOMODYNE_NO_AVX512 as well, the
// entry points take the baseline copy: the tests use it).
bool HasAvx2Fma();

}  // namespace homodyne::model::detail
