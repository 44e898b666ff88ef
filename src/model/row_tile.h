// The unit in which measured data reach the model kernel: a run of consecutive columns of
// one row of one angle's c2 matrix.
#pragma once

namespace homodyne::model {

struct RowTile {
  int angle = 0;                   // index into the kernel's angle list
  int row = 0;                     // i: index into the time grid
  int col_begin = 0;               // j0: first column (the fit uses the upper triangle, j0 > i)
  int count = 0;                   // columns j0 … j0 + count − 1
  const double* data = nullptr;    // c2_exp at those columns (caller keeps it alive)
  const double* weight = nullptr;  // per-point χ² weight, or nullptr → uniform_weight
  // Default 2: an upper-triangle pair (i, j) stands for both (i, j) and (j, i) of
  // homodyne's full-matrix residual vector. Masked points get weight 0 (their data are then
  // ignored, even if not finite); a per-point σ_p can be folded in as w·(σ/σ_p)².
  double uniform_weight = 2.0;
};

}  // namespace homodyne::model
