// Vectorised per-(tile, block) point terms of the kernel (private to src/model).
//
// For one tile's block of n ≤ kMaxBlock columns: g1, c2, residuals and the derivative
// scalars (elementwise, vectorised), the per-column angle sums S (elementwise) and the
// per-tile sums (explicit 4-lane vector reductions: lane = column mod 4, lanes combined as
// (l0 + l1) + (l2 + l3)). The summation order is fixed, so results do not depend on threads.
#pragma once

namespace homodyne::model::detail {

inline constexpr int kMaxBlock = 128;  // multiple of 4

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
  // next multiple of 4.
  const double* g1d = nullptr;
  const double* fac = nullptr;
  const double* e[3] = {nullptr, nullptr, nullptr};
  const double* ig = nullptr;
  const double* f[3] = {nullptr, nullptr, nullptr};
  // This tile's angle: sinc² and d sinc²/dx (laminar; nullptr for static).
  const double* s = nullptr;
  const double* ds = nullptr;
  const double* data = nullptr;    // n values
  const double* weight = nullptr;  // n values or nullptr → uniform_weight
  double uniform_weight = 0.0;
  double contrast = 0.0, offset = 0.0, inv_sigma = 0.0;
  double a = 0.0, b = 0.0;  // ∂x/∂I_Γ, ∂x/∂φ0 / I_Γ (laminar)
  // Per-column sums over angles, updated in place: w·αα, αβ, ββ, αγ, βγ, γγ, αr, βr, γr.
  double *saa = nullptr, *sab = nullptr, *sbb = nullptr, *sag = nullptr, *sbg = nullptr,
         *sgg = nullptr, *sar = nullptr, *sbr = nullptr, *sgr = nullptr;
};

// Adds the tile sums into sums[kNumTileSums] and updates the S arrays.
void NormalLaminarBlock(const PointBlock& in, double* sums);
void NormalStaticBlock(const PointBlock& in, double* sums);
// Gradient-only variants: update only sar (and sbr, sgr for laminar) and add only
// sums[kSumChi2], sums[kSumUcR], sums[kSumR], with the same expressions and order as the
// normal passes (bit-identical values).
void GradientLaminarBlock(const PointBlock& in, double* sums);
void GradientStaticBlock(const PointBlock& in, double* sums);
// Σ w·r² in the same lanes and order as the normal passes (bit-identical χ²).
double Chi2Block(const PointBlock& in);

}  // namespace homodyne::model::detail
