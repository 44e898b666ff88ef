// The per-chunk evaluation loops of ModelKernel (see kernel.h for the strategy).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "column_terms.h"
#include "kernel_impl.h"
#include "model/constants.h"
#include "model/fast_sincos.h"
#include "point_terms.h"
#include "separable.h"
#include "shear_factors.h"

namespace homodyne::model {

using kernel_internal::kBlock;
using kernel_internal::kWideBlock;
using kernel_internal::Pass;
using kernel_internal::Tables;

template <Pass kPass, bool kLaminar>
void ModelKernel::Impl::RunChunk(const Tables& tab, int chunk, double* partial, double* model_out,
                                 SeparableCounts* counts) const {
  constexpr int kNp = kLaminar ? 7 : 3;
  constexpr bool kFull = kPass == Pass::kNormal;  // JᵀJ as well as Jᵀr
  constexpr bool kDerivs = kFull || kPass == Pass::kGradient;
  const double inv_sigma = 1.0 / options.sigma;
  const double inv_weight_scale = 1.0 / weight_scale;
  const double wq = tab.wq;
  const bool exact = options.exact_transcendentals;
  const int stride = kFull ? angle_stride() : 2;
  // Partial layout (kNormal): [χ², phys JᵀJ (kNp², upper), phys Jᵀr (kNp), per-angle blocks];
  // (kGradient): [χ², phys Jᵀr (kNp), per angle (Σ w·uc·r, Σ w·r/σ)].
  double* chi2 = partial;
  double* phys_jtj = kFull ? partial + 1 : nullptr;
  double* phys_jtr = kFull ? phys_jtj + kNp * kNp : kDerivs ? partial + 1 : nullptr;
  double* angles = kDerivs ? phys_jtr + kNp : nullptr;

  // Columns per block (kernel_impl.h).
  constexpr int kWidth = kDerivs ? kBlock : kWideBlock;
  // The per-block scratch arrays, kWidth apart in one buffer (contiguous for either width).
  constexpr int kArrays = 31;
  alignas(64) double scratch[kArrays * kWideBlock];
  int next_array = 0;
  const auto array = [&]() -> double* { return scratch + kWidth * next_array++; };
  // Angle-independent values of one block of columns:
  //   g1d = exp(clip(−wq·I_D)), fac = ∂g1d/∂I_D·Δ/I (0 when clipped), e_q = ∂ΔC_D/∂θ_q,
  //   ig = I_Γ, f_q = ∂I_Γ/∂θ_q.
  double *g1d = array(), *fac = array(), *ig = array();
  double* e[3] = {array(), array(), array()};
  double* f[3] = {array(), array(), array()};
  // Per-angle scratch: phase, its sine and cosine.
  double *xs = array(), *sn = array(), *cs = array(), *sfac = array(), *dsfac = array();
  // Separable paths (separable.h): C_Γ[i] + C_Γ[j] and the smooth-abs shifts δ_Γ, δ_D; the
  // diffusion exponent −wq·I_D, ΔC_D and I_D per column.
  double *cgsum = array(), *shift = array(), *inv_ig = array(), *shift_d = array(),
         *log_g1 = array(), *delta_d = array(), *id_d = array();
  // g1_diff/I_Γ² per column, for the point passes' separable lanes (SeparableRow).
  double* g1d_inv_ig2 = array();
  const bool separable = kLaminar && !exact && !tab.shear_sin.empty();
  const bool separable_diffusion = !exact && !tab.diff_pivot.empty();
  constexpr int kSpan = detail::kDiffusionPivotSpan;
  const auto n_t = static_cast<size_t>(ts.size());
  // Sums over the angles of one column of w·(α,β,γ)⊗(α,β,γ) and w·(α,β,γ)·r, where the
  // point's physics derivative (∂c2/∂θ)/σ is α·e (diffusion), β·f (shear rate), γ (φ0).
  double *saa = array(), *sab = array(), *sbb = array(), *sag = array(), *sbg = array(),
         *sgg = array(), *sar = array(), *sbr = array(), *sgr = array();
  if (next_array > kArrays) std::abort();  // kArrays counts the arrays above

  // The point passes' input: the per-column arrays are fixed, the rest is set per tile.
  detail::PointBlock in;
  in.weight_scale = inv_weight_scale;
  in.g1d = g1d;
  in.fac = fac;
  in.ig = ig;
  for (int q = 0; q < 3; ++q) {
    in.e[q] = e[q];
    in.f[q] = f[q];
  }
  in.s = kLaminar ? sfac : nullptr;
  in.ds = kLaminar ? dsfac : nullptr;
  if constexpr (kDerivs) {
    in.saa = saa;
    in.sab = sab;
    in.sbb = sbb;
    in.sag = sag;
    in.sbg = sbg;
    in.sgg = sgg;
    in.sar = sar;
    in.sbr = sbr;
    in.sgr = sgr;
  }

  // Per tile of the group: the separable bound held at some column of an earlier block of
  // this row, so it holds at every later column (it is monotone along the row, separable.h)
  // and the later blocks skip SeparableStart.
  std::vector<unsigned char> passed;
  // Per angle: where the bound started to hold in the last block searched, as a distance j − i
  // (past the block if nowhere in it; −1: none yet); the next search starts there
  // (SeparableStartFrom).
  // Kept per thread across chunks and passes (a chunk is a few rows): only a guess, any value
  // of which gives the same start.
  thread_local std::vector<int> start_distance;
  if constexpr (kLaminar) start_distance.resize(static_cast<size_t>(index.n_angles), -1);
  // Per tile of the group: its χ² lanes, carried across the group's blocks (PointBlock::
  // chi2_lanes) and added to the partial, tile by tile, after the group's last block.
  thread_local std::vector<double> chi2_lanes;

  for (int g = chunk_begin[static_cast<size_t>(chunk)];
       g < chunk_begin[static_cast<size_t>(chunk) + 1]; ++g) {
    const Group& group = groups[static_cast<size_t>(g)];
    const auto i = static_cast<size_t>(group.row);
    if constexpr (kLaminar) passed.assign(group.tiles.size(), 0);
    if constexpr (kPass != Pass::kModel) chi2_lanes.assign(4 * group.tiles.size(), 0.0);
    // The group's columns right of the diagonal (j > i), which the separable paths may take.
    const size_t right_begin =
        std::max(static_cast<size_t>(group.col_begin), static_cast<size_t>(group.row) + 1);
    for (int b0 = 0, nb = 0; b0 < group.count; b0 += nb) {
      const size_t j0 = static_cast<size_t>(group.col_begin + b0);
      // Blocks of kWidth columns, with a cut at the diagonal: no block has columns on both
      // sides, so every column right of it may take the separable paths whatever the width.
      nb = std::min(kWidth, group.count - b0);
      if (j0 < right_begin && right_begin < j0 + static_cast<size_t>(nb)) {
        nb = static_cast<int>(right_begin - j0);
      }
      // The separable form needs every column on the same side of the diagonal (j > i).
      const bool separable_block = separable && j0 > i;
      const bool separable_diffusion_block = separable_diffusion && j0 > i;
      {
        detail::ColumnInputs cin;
        cin.n = nb;
        cin.wq = wq;
        cin.cd = tab.cd.data() + j0;
        cin.cd_i = tab.cd[i];
        if constexpr (kLaminar) {
          cin.cg = tab.cg.data() + j0;
          cin.cg_i = tab.cg[i];
        }
        if constexpr (kDerivs) {
          for (int q = 0; q < 3; ++q) {
            cin.dcd[q] = tab.dcd[q].data() + j0;
            cin.dcd_i[q] = tab.dcd[q][i];
            if constexpr (kLaminar) {
              cin.dcg[q] = tab.dcg[q].data() + j0;
              cin.dcg_i[q] = tab.dcg[q][i];
            }
          }
        }
        const detail::ColumnValues cout{log_g1, delta_d, id_d,  shift_d, {e[0], e[1], e[2]},
                                        ig,     cgsum,   shift, inv_ig,  {f[0], f[1], f[2]}};
        if constexpr (kLaminar) {
          detail::LaminarColumns(cin, cout, kDerivs);
        } else {
          detail::StaticColumns(cin, cout, kDerivs);
        }
      }
      // g1_diff per pivot span: factorised where the span passes its bound, else directly.
      for (int c = 0; c < nb;) {
        const size_t j = j0 + static_cast<size_t>(c);
        const size_t p = j - j % static_cast<size_t>(kSpan);
        const int end = std::min(nb, c + static_cast<int>(p + kSpan - j));
        bool factorised = false;
        if (separable_diffusion_block) {
          const double r = std::exp(-wq * (tab.cd[p] - tab.cd[i]));
          // The test over all of the span's times right of the diagonal, not only this
          // block's columns: the decision, and so every g1_diff, is a function of the row and
          // the span alone, whatever the block width or the tiles' cuts (the exponent at the
          // last column as LaminarColumns computes it).
          const size_t first = std::max(p, i + 1);
          const size_t last = std::min(p + static_cast<size_t>(kSpan), n_t) - 1;
          const double log_g1_last = -wq * detail::SmoothAbs(tab.cd[i] - tab.cd[last]);
          factorised =
              detail::DiffusionSpanHolds(wq, tab.cd[i], tab.cd[p], tab.cd[last], log_g1_last,
                                         tab.diff_pivot[first] * r, tab.contrast_scale);
          if (factorised) {
            detail::SeparableDiffusion(tab.diff_pivot.data() + j0, r, wq, shift_d, g1d, c, end);
            if (counts != nullptr) {
              counts->diffusion += static_cast<std::int64_t>(end - c) *
                                   static_cast<std::int64_t>(group.tiles.size());
            }
          }
        }
        if (!factorised) {
          for (int cc = c; cc < end; ++cc)
            g1d[cc] = std::exp(std::clamp(log_g1[cc], kLogG1Min, 0.0));
        }
        c = end;
      }
      if constexpr (kDerivs) {
        for (int c = 0; c < nb; ++c) {
          fac[c] = log_g1[c] < kLogG1Min ? 0.0 : g1d[c] * (-wq) * (delta_d[c] / id_d[c]);
        }
      }
      if constexpr (kLaminar) {
        if (separable_block) {
          for (int c = 0; c < nb; ++c) g1d_inv_ig2[c] = g1d[c] * (inv_ig[c] * inv_ig[c]);
        }
      }
      // detail::PointBlock reads columns up to a multiple of detail::kLanes.
      const int nb_padded = (nb + detail::kLanes - 1) & ~(detail::kLanes - 1);
      for (int c = nb; c < nb_padded; ++c) {
        g1d[c] = fac[c] = ig[c] = 0.0;
        for (int q = 0; q < 3; ++q) e[q][c] = f[q][c] = 0.0;
      }
      if constexpr (kDerivs) {
        for (int c = 0; c < nb_padded; ++c) {
          saa[c] = sab[c] = sbb[c] = sag[c] = sbg[c] = sgg[c] = sar[c] = sbr[c] = sgr[c] = 0.0;
        }
      }
      for (size_t slot = 0; slot < group.tiles.size(); ++slot) {
        const int tile_index = group.tiles[slot];
        const RowTile& tile = group_tiles[group.first + slot];
        const auto k = static_cast<size_t>(tile.angle);
        const double contrast = tab.contrast[k];
        const double offset = tab.offset[k];
        const double a = kLaminar ? tab.shear_a[k] : 0.0;
        const double bcoef = kLaminar ? tab.shear_b[k] : 0.0;
        // Laminar: columns [0, start) are evaluated directly here (sin/cos of x, then the
        // shear factors), [start, nb) take the separable path (start = nb: none), its whole
        // vectors inside the point loop (PointBlock::sep), the rest here.
        int start = nb;
        int sep_lo = nb, sep_hi = nb;  // see below
        detail::SeparableRow sep;
        if constexpr (kLaminar) {
          if (separable_block) {
            if (passed[slot] != 0) {
              start = 0;
            } else {
              const detail::SeparableColumns cols{g1d, cgsum, shift};
              int& distance = start_distance[k];
              const int guess = distance < 0 ? -1 : distance - static_cast<int>(j0 - i);
              start = detail::SeparableStartFrom(ig, a, contrast, cols, nb, guess);
              passed[slot] = start < nb ? 1 : 0;
              distance = start + static_cast<int>(j0 - i);  // start = nb: at least there
            }
          }
          for (int c = 0; c < start; ++c) xs[c] = a * ig[c];
          // Phases ≤ kSmallPhase by the series, the others of [0, start) by the sine and sn/x.
          // |x| grows with the distance from the diagonal, and no block has columns on both
          // sides of it, so the small phases are a prefix of the block right of the diagonal
          // and a suffix left of it: every column takes the same branch whatever the block.
          int small_begin = j0 > i ? 0 : start, small_end = small_begin;  // the series' columns
          if (!exact) {
            if (j0 > i) {
              while (small_end < start && std::abs(xs[small_end]) <= detail::kSmallPhase) {
                ++small_end;
              }
            } else {
              while (small_begin > 0 && std::abs(xs[small_begin - 1]) <= detail::kSmallPhase) {
                --small_begin;
              }
            }
            const int n_small = small_end - small_begin;
            if constexpr (kDerivs) {
              detail::SmallPhaseShearFactorsWithDerivative(xs + small_begin, sfac + small_begin,
                                                           dsfac + small_begin, n_small);
            } else {
              detail::SmallPhaseShearFactors(xs + small_begin, sfac + small_begin, n_small);
            }
          }
          // The sine's columns: [small_end, start) right of the diagonal, [0, small_begin)
          // left of it (all of [0, start) in the exact mode).
          const int first = j0 > i ? small_end : 0;
          const int rest = (j0 > i ? start : small_begin) - first;
          if (exact) {
            for (int c = 0; c < nb; ++c) {
              sn[c] = std::sin(xs[c]);
              if constexpr (kDerivs) cs[c] = std::cos(xs[c]);
            }
          } else if (rest > 0) {
            if constexpr (kDerivs) {
              FastSinCos(xs + first, sn + first, cs + first, rest);
            } else {
              FastSin(xs + first, sn + first, rest);
            }
          }
          if (rest > 0) {
            if constexpr (kDerivs) {
              detail::ShearFactorsWithDerivative(xs + first, sn + first, cs + first, sfac + first,
                                                 dsfac + first, rest);
            } else {
              detail::ShearFactors(xs + first, sn + first, sfac + first, rest);
            }
          }
          // The point loop evaluates the separable columns' whole vectors [sep_lo, sep_hi);
          // the rest of [start, nb) is filled here.
          if (start < nb) {
            const size_t row = k * n_t;
            sep = detail::SeparableRow{tab.shear_sin.data() + row + j0,
                                       tab.shear_cos.data() + row + j0,
                                       tab.shear_sin[row + i],
                                       tab.shear_cos[row + i],
                                       a,
                                       1.0 / a,
                                       shift,
                                       inv_ig,
                                       g1d_inv_ig2};
            const int whole = nb & ~(detail::kLanes - 1);
            sep_lo = std::min((start + detail::kLanes - 1) & ~(detail::kLanes - 1), whole);
            sep_hi = std::max(sep_lo, whole);
            const int tail = std::max(sep_hi, start);
            if constexpr (kDerivs) {
              detail::SeparableShearFactorsWithDerivative(sep, sfac, dsfac, start, sep_lo);
              detail::SeparableShearFactorsWithDerivative(sep, sfac, dsfac, tail, nb);
            } else {
              detail::SeparableShearFactors(sep, sfac, start, sep_lo);
              detail::SeparableShearFactors(sep, sfac, tail, nb);
            }
            if (counts != nullptr) counts->shear += nb - start;
          }
          for (int c = nb; c < nb_padded; ++c) sfac[c] = dsfac[c] = 0.0;
        }
        // The block's fixed fields are set once per chunk (below the scratch arrays).
        in.n = nb;
        in.sep_lo = sep_lo;
        in.sep_hi = sep_hi;
        in.sep = sep;
        in.data = tile.data + b0;
        in.weight = tile.weight ? tile.weight + b0 : nullptr;
        // The block after next in the group's order (this block of the tile two slots on, or
        // the next block of a tile at the start), requested vector by vector in the point loop.
        {
          size_t ps = slot + 2;
          int pb = b0;
          if (ps >= group.tiles.size()) {
            ps -= group.tiles.size();
            pb = b0 + nb < group.count ? b0 + nb : b0;
            if (ps >= group.tiles.size()) ps = slot;
          }
          const RowTile& pt = group_tiles[group.first + ps];
          in.prefetch_data = pt.data + pb;
          in.prefetch_weight = pt.weight ? pt.weight + pb : nullptr;
        }
        in.chi2_lanes = kPass == Pass::kModel ? nullptr : chi2_lanes.data() + 4 * slot;
        in.uniform_weight = tile.uniform_weight * inv_weight_scale;  // exact: a power of two
        in.contrast = contrast;
        in.offset = offset;
        in.inv_sigma = inv_sigma;
        in.a = a;
        in.b = bcoef;
        if constexpr (kPass == Pass::kModel) {
          detail::ModelBlock(in, model_out + tile_offset[static_cast<size_t>(tile_index)] + b0);
          continue;
        } else {
          if constexpr (!kDerivs) {
            detail::Chi2Block(in);  // into in.chi2_lanes
          } else if constexpr (!kFull) {
            double sums[detail::kNumTileSums];  // written by the block function
            if constexpr (kLaminar) {
              detail::GradientLaminarBlock(in, sums);
            } else {
              detail::GradientStaticBlock(in, sums);
            }
            double* ang = angles + k * static_cast<size_t>(stride);
            ang[0] += sums[detail::kSumUcR];
            ang[1] += sums[detail::kSumR] * inv_sigma;
          } else {
            double sums[detail::kNumTileSums];  // written by the block function
            if constexpr (kLaminar) {
              detail::NormalLaminarBlock(in, sums);
            } else {
              detail::NormalStaticBlock(in, sums);
            }
            double* ang = angles + k * static_cast<size_t>(stride);
            ang[0] += sums[detail::kSumUcUc];
            ang[1] += sums[detail::kSumUc] * inv_sigma;
            ang[2] += sums[detail::kSumW] * (inv_sigma * inv_sigma);
            ang[3] += sums[detail::kSumUcR];
            ang[4] += sums[detail::kSumR] * inv_sigma;
            for (int q = 0; q < 3; ++q) {
              ang[5 + q] += sums[detail::kSumUcAlphaE + q];
              ang[5 + kNp + q] += sums[detail::kSumAlphaE + q] * inv_sigma;
              if constexpr (kLaminar) {
                ang[5 + 3 + q] += sums[detail::kSumUcBetaF + q];
                ang[5 + kNp + 3 + q] += sums[detail::kSumBetaF + q] * inv_sigma;
              }
            }
            if constexpr (kLaminar) {
              ang[5 + 6] += sums[detail::kSumUcGamma];
              ang[5 + kNp + 6] += sums[detail::kSumGamma] * inv_sigma;
            }
          }
        }
      }
      if constexpr (kDerivs) {
        // Fold the per-column angle sums into the physics block (Jᵀr only for kGradient,
        // with the same values).
        if constexpr (kLaminar) {
          detail::FoldLaminarColumns(in, nb_padded, phys_jtj, phys_jtr);
        } else {
          detail::FoldStaticColumns(in, nb_padded, phys_jtj, phys_jtr);
        }
      }
    }
    if constexpr (kPass != Pass::kModel) {
      // Each tile's χ², its lanes folded as the point loops fold them.
      for (size_t slot = 0; slot < group.tiles.size(); ++slot) {
        *chi2 += detail::FoldLanes(chi2_lanes.data() + 4 * slot) * (inv_sigma * inv_sigma);
      }
    }
  }
}

// The instantiations used by kernel.cpp.
template void ModelKernel::Impl::RunChunk<Pass::kModel, true>(const Tables&, int, double*, double*,
                                                              SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kModel, false>(const Tables&, int, double*, double*,
                                                               SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kChi2, true>(const Tables&, int, double*, double*,
                                                             SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kChi2, false>(const Tables&, int, double*, double*,
                                                              SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kNormal, true>(const Tables&, int, double*, double*,
                                                               SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kNormal, false>(const Tables&, int, double*,
                                                                double*, SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kGradient, true>(const Tables&, int, double*,
                                                                 double*, SeparableCounts*) const;
template void ModelKernel::Impl::RunChunk<Pass::kGradient, false>(const Tables&, int, double*,
                                                                  double*, SeparableCounts*) const;

}  // namespace homodyne::model
