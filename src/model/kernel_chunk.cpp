// The per-chunk evaluation loops of ModelKernel (see kernel.h for the strategy).
//
// A chunk is a run of groups (tiles that share a row and columns across angles). Each group
// is cut into blocks of columns, and each block goes through the same phases:
//   ColumnTerms       the angle-independent column values (I_D, I_Γ, their derivatives)
//   DiffusionFactors  g1_diff per column: factorised per pivot span or directly
//   PadBlock          zeros past the block's last column; the column sums reset
//   per tile of the group:
//     ShearFactors    laminar: the shear factor (and its derivative) of every column
//     PointPass       the point loop of the pass, and the tile's per-angle sums
//   FoldColumns       the per-column angle sums into the physics block
// and after the group's last block FoldChi2 adds each tile's χ² lanes to the partial.
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
class ModelKernel::Impl::ChunkRun {
 public:
  // Per thread, kept across chunks and passes (see the members below).
  struct ThreadState {
    std::vector<int> start_distance;
    std::vector<double> chi2_lanes;
  };

  ChunkRun(const Impl& im, const Tables& tab, double* partial, double* model_out,
           SeparableCounts* counts, ThreadState& state)
      : im_(im), tab_(tab), model_out_(model_out), counts_(counts), state_(state) {
    // Partial layout (kNormal): [χ², phys JᵀJ (kNp², upper), phys Jᵀr (kNp), per-angle blocks];
    // (kGradient): [χ², phys Jᵀr (kNp), per angle (Σ w·uc·r, Σ w·r/σ)].
    chi2_ = partial;
    phys_jtj_ = kFull ? partial + 1 : nullptr;
    phys_jtr_ = kFull ? phys_jtj_ + kNp * kNp : kDerivs ? partial + 1 : nullptr;
    angles_ = kDerivs ? phys_jtr_ + kNp : nullptr;
    if (next_array_ > kArrays) std::abort();  // kArrays counts the arrays of the members
    // The point passes' input: the per-column arrays are fixed, the rest is set per tile.
    in_.weight_scale = inv_weight_scale_;
    const RobustLoss& loss = im_.options.loss;
    if (loss.robust()) {
      in_.loss = static_cast<int>(loss.kind);
      in_.loss_inv_scale = inv_sigma_ / loss.f_scale;
      in_.loss_scale_sq = loss.f_scale * loss.f_scale;
      chi2_scale_ = in_.loss_scale_sq;
    }
    in_.g1d = g1d_;
    in_.fac = fac_;
    in_.ig = ig_;
    for (int q = 0; q < 3; ++q) {
      in_.e[q] = e_[q];
      in_.f[q] = f_[q];
    }
    in_.s = kLaminar ? sfac_ : nullptr;
    in_.ds = kLaminar ? dsfac_ : nullptr;
    if constexpr (kDerivs) {
      in_.saa = saa_;
      in_.sab = sab_;
      in_.sbb = sbb_;
      in_.sag = sag_;
      in_.sbg = sbg_;
      in_.sgg = sgg_;
      in_.sar = sar_;
      in_.sbr = sbr_;
      in_.sgr = sgr_;
    }
    if constexpr (kLaminar) {
      state_.start_distance.resize(static_cast<size_t>(im_.index.n_angles), -1);
    }
  }

  void Run(int chunk) {
    for (int g = im_.chunk_begin[static_cast<size_t>(chunk)];
         g < im_.chunk_begin[static_cast<size_t>(chunk) + 1]; ++g) {
      RunGroup(im_.groups[static_cast<size_t>(g)]);
    }
  }

 private:
  static constexpr int kNp = kLaminar ? 7 : 3;
  static constexpr bool kFull = kPass == Pass::kNormal;  // JᵀJ as well as Jᵀr
  static constexpr bool kDerivs = kFull || kPass == Pass::kGradient;
  static constexpr int kWidth = kDerivs ? kBlock : kWideBlock;  // columns per block
  static constexpr int kArrays = 31;
  static constexpr int kSpan = detail::kDiffusionPivotSpan;

  // One block of a group's columns: [j0, j0 + nb), the b0-th column of the group on.
  struct Block {
    size_t i = 0;  // the group's row
    size_t j0 = 0;
    int b0 = 0, nb = 0;
    int nb_padded = 0;  // nb rounded up to whole vectors (detail::PointBlock reads that far)
    bool separable = false;
    bool separable_diffusion = false;
  };
  // The separable part of one tile's block (PointBlock::sep and its whole vectors).
  struct ShearRow {
    int sep_lo = 0, sep_hi = 0;
    detail::SeparableRow sep;
  };

  using Group = Impl::Group;

  void RunGroup(const Group& group) {
    if constexpr (kLaminar) passed_.assign(group.tiles.size(), 0);
    if constexpr (kPass != Pass::kModel) state_.chi2_lanes.assign(4 * group.tiles.size(), 0.0);
    const auto i = static_cast<size_t>(group.row);
    // The group's columns right of the diagonal (j > i), which the separable paths may take.
    const size_t right_begin = std::max(static_cast<size_t>(group.col_begin), i + 1);
    for (int b0 = 0, nb = 0; b0 < group.count; b0 += nb) {
      Block b;
      b.i = i;
      b.b0 = b0;
      b.j0 = static_cast<size_t>(group.col_begin + b0);
      // Blocks of kWidth columns, with a cut at the diagonal: no block has columns on both
      // sides, so every column right of it may take the separable paths whatever the width.
      nb = std::min(kWidth, group.count - b0);
      if (b.j0 < right_begin && right_begin < b.j0 + static_cast<size_t>(nb)) {
        nb = static_cast<int>(right_begin - b.j0);
      }
      b.nb = nb;
      b.nb_padded = (nb + detail::kLanes - 1) & ~(detail::kLanes - 1);
      // The separable forms need every column on the same side of the diagonal (j > i).
      b.separable = separable_ && b.j0 > i;
      b.separable_diffusion = separable_diffusion_ && b.j0 > i;

      ColumnTerms(b);
      DiffusionFactors(group, b);
      PadBlock(b);
      for (size_t slot = 0; slot < group.tiles.size(); ++slot) {
        const RowTile& tile = im_.group_tiles[group.first + slot];
        const ShearRow shear = ShearFactors(slot, static_cast<size_t>(tile.angle), b);
        PointPass(group, slot, b, shear);
      }
      FoldColumns(b);
    }
    FoldChi2(group);
  }

  // The angle-independent values of the block's columns (detail::ColumnValues).
  void ColumnTerms(const Block& b) {
    const size_t i = b.i, j0 = b.j0;
    detail::ColumnInputs cin;
    cin.n = b.nb;
    cin.wq = tab_.wq;
    cin.cd = tab_.cd.data() + j0;
    cin.cd_i = tab_.cd[i];
    if constexpr (kLaminar) {
      cin.cg = tab_.cg.data() + j0;
      cin.cg_i = tab_.cg[i];
    }
    if constexpr (kDerivs) {
      for (int q = 0; q < 3; ++q) {
        cin.dcd[q] = tab_.dcd[q].data() + j0;
        cin.dcd_i[q] = tab_.dcd[q][i];
        if constexpr (kLaminar) {
          cin.dcg[q] = tab_.dcg[q].data() + j0;
          cin.dcg_i[q] = tab_.dcg[q][i];
        }
      }
    }
    const detail::ColumnValues cout{log_g1_, delta_d_, id_d_,  shift_d_, {e_[0], e_[1], e_[2]},
                                    ig_,     cgsum_,   shift_, inv_ig_,  {f_[0], f_[1], f_[2]}};
    if constexpr (kLaminar) {
      detail::LaminarColumns(cin, cout, kDerivs);
    } else {
      detail::StaticColumns(cin, cout, kDerivs);
    }
  }

  // g1_diff per pivot span: factorised where the span passes its bound, else directly; with
  // derivatives its factor fac, and for the separable shear g1_diff/I_Γ².
  void DiffusionFactors(const Group& group, const Block& b) {
    const size_t i = b.i, j0 = b.j0;
    const int nb = b.nb;
    const double wq = tab_.wq;
    for (int c = 0; c < nb;) {
      const size_t j = j0 + static_cast<size_t>(c);
      const size_t p = j - j % static_cast<size_t>(kSpan);
      const int end = std::min(nb, c + static_cast<int>(p + kSpan - j));
      bool factorised = false;
      if (b.separable_diffusion) {
        const double r = std::exp(-wq * (tab_.cd[p] - tab_.cd[i]));
        // The test over all of the span's times right of the diagonal, not only this
        // block's columns: the decision, and so every g1_diff, is a function of the row and
        // the span alone, whatever the block width or the tiles' cuts (the exponent at the
        // last column as LaminarColumns computes it).
        const size_t first = std::max(p, i + 1);
        const size_t last = std::min(p + static_cast<size_t>(kSpan), n_t_) - 1;
        const double log_g1_last = -wq * detail::SmoothAbs(tab_.cd[i] - tab_.cd[last]);
        factorised =
            detail::DiffusionSpanHolds(wq, tab_.cd[i], tab_.cd[p], tab_.cd[last], log_g1_last,
                                       tab_.diff_pivot[first] * r, tab_.contrast_scale);
        if (factorised) {
          detail::SeparableDiffusion(tab_.diff_pivot.data() + j0, r, wq, shift_d_, g1d_, c, end);
          if (counts_ != nullptr) {
            counts_->diffusion +=
                static_cast<std::int64_t>(end - c) * static_cast<std::int64_t>(group.tiles.size());
          }
        }
      }
      if (!factorised) {
        for (int cc = c; cc < end; ++cc)
          g1d_[cc] = std::exp(std::clamp(log_g1_[cc], kLogG1Min, 0.0));
      }
      c = end;
    }
    if constexpr (kDerivs) {
      for (int c = 0; c < nb; ++c) {
        fac_[c] = log_g1_[c] < kLogG1Min ? 0.0 : g1d_[c] * (-wq) * (delta_d_[c] / id_d_[c]);
      }
    }
    if constexpr (kLaminar) {
      if (b.separable) {
        for (int c = 0; c < nb; ++c) g1d_inv_ig2_[c] = g1d_[c] * (inv_ig_[c] * inv_ig_[c]);
      }
    }
  }

  // detail::PointBlock reads columns up to a multiple of detail::kLanes: zeros past nb. The
  // per-column angle sums start from zero in every block.
  void PadBlock(const Block& b) {
    for (int c = b.nb; c < b.nb_padded; ++c) {
      g1d_[c] = fac_[c] = ig_[c] = 0.0;
      for (int q = 0; q < 3; ++q) e_[q][c] = f_[q][c] = 0.0;
    }
    if constexpr (kDerivs) {
      for (int c = 0; c < b.nb_padded; ++c) {
        saa_[c] = sab_[c] = sbb_[c] = sag_[c] = sbg_[c] = sgg_[c] = sar_[c] = sbr_[c] = sgr_[c] =
            0.0;
      }
    }
  }

  // Laminar: the shear factor sinc² (and its derivative) of the block's columns for angle k.
  // Columns [0, start) are evaluated directly here (sin/cos of x, then the shear factors),
  // [start, nb) take the separable path (start = nb: none): its whole vectors inside the point
  // loop (the returned [sep_lo, sep_hi)), the rest here. Static: nothing to do.
  ShearRow ShearFactors(size_t slot, size_t k, const Block& b) {
    const int nb = b.nb;
    ShearRow out;
    out.sep_lo = out.sep_hi = nb;
    if constexpr (kLaminar) {
      const size_t i = b.i, j0 = b.j0;
      const double a = tab_.shear_a[k];
      int start = nb;
      if (b.separable) {
        if (passed_[slot] != 0) {
          start = 0;
        } else {
          const detail::SeparableColumns cols{g1d_, cgsum_, shift_};
          int& distance = state_.start_distance[k];
          const int guess = distance < 0 ? -1 : distance - static_cast<int>(j0 - i);
          start = detail::SeparableStartFrom(ig_, a, tab_.contrast[k], cols, nb, guess);
          passed_[slot] = start < nb ? 1 : 0;
          distance = start + static_cast<int>(j0 - i);  // start = nb: at least there
        }
      }
      for (int c = 0; c < start; ++c) xs_[c] = a * ig_[c];
      // Phases ≤ kSmallPhase by the series, the others of [0, start) by the sine and sn/x.
      // |x| grows with the distance from the diagonal, and no block has columns on both
      // sides of it, so the small phases are a prefix of the block right of the diagonal
      // and a suffix left of it: every column takes the same branch whatever the block.
      int small_begin = j0 > i ? 0 : start, small_end = small_begin;  // the series' columns
      if (!exact_) {
        if (j0 > i) {
          while (small_end < start && std::abs(xs_[small_end]) <= detail::kSmallPhase) {
            ++small_end;
          }
        } else {
          while (small_begin > 0 && std::abs(xs_[small_begin - 1]) <= detail::kSmallPhase) {
            --small_begin;
          }
        }
        const int n_small = small_end - small_begin;
        if constexpr (kDerivs) {
          detail::SmallPhaseShearFactorsWithDerivative(xs_ + small_begin, sfac_ + small_begin,
                                                       dsfac_ + small_begin, n_small);
        } else {
          detail::SmallPhaseShearFactors(xs_ + small_begin, sfac_ + small_begin, n_small);
        }
      }
      // The sine's columns: [small_end, start) right of the diagonal, [0, small_begin)
      // left of it (all of [0, start) in the exact mode).
      const int first = j0 > i ? small_end : 0;
      const int rest = (j0 > i ? start : small_begin) - first;
      if (exact_) {
        for (int c = 0; c < nb; ++c) {
          sn_[c] = std::sin(xs_[c]);
          if constexpr (kDerivs) cs_[c] = std::cos(xs_[c]);
        }
      } else if (rest > 0) {
        if constexpr (kDerivs) {
          FastSinCos(xs_ + first, sn_ + first, cs_ + first, rest);
        } else {
          FastSin(xs_ + first, sn_ + first, rest);
        }
      }
      if (rest > 0) {
        if constexpr (kDerivs) {
          detail::ShearFactorsWithDerivative(xs_ + first, sn_ + first, cs_ + first, sfac_ + first,
                                             dsfac_ + first, rest);
        } else {
          detail::ShearFactors(xs_ + first, sn_ + first, sfac_ + first, rest);
        }
      }
      // The point loop evaluates the separable columns' whole vectors [sep_lo, sep_hi);
      // the rest of [start, nb) is filled here.
      if (start < nb) {
        const size_t row = k * n_t_;
        out.sep = detail::SeparableRow{tab_.shear_sin.data() + row + j0,
                                       tab_.shear_cos.data() + row + j0,
                                       tab_.shear_sin[row + i],
                                       tab_.shear_cos[row + i],
                                       a,
                                       1.0 / a,
                                       shift_,
                                       inv_ig_,
                                       g1d_inv_ig2_};
        const int whole = nb & ~(detail::kLanes - 1);
        out.sep_lo = std::min((start + detail::kLanes - 1) & ~(detail::kLanes - 1), whole);
        out.sep_hi = std::max(out.sep_lo, whole);
        const int tail = std::max(out.sep_hi, start);
        if constexpr (kDerivs) {
          detail::SeparableShearFactorsWithDerivative(out.sep, sfac_, dsfac_, start, out.sep_lo);
          detail::SeparableShearFactorsWithDerivative(out.sep, sfac_, dsfac_, tail, nb);
        } else {
          detail::SeparableShearFactors(out.sep, sfac_, start, out.sep_lo);
          detail::SeparableShearFactors(out.sep, sfac_, tail, nb);
        }
        if (counts_ != nullptr) counts_->shear += nb - start;
      }
      for (int c = nb; c < b.nb_padded; ++c) sfac_[c] = dsfac_[c] = 0.0;
    } else {
      (void)slot;
      (void)k;
    }
    return out;
  }

  // The pass's point loop over one tile's block, and the tile's per-angle sums.
  void PointPass(const Group& group, size_t slot, const Block& b, const ShearRow& shear) {
    const int tile_index = group.tiles[slot];
    const RowTile& tile = im_.group_tiles[group.first + slot];
    const auto k = static_cast<size_t>(tile.angle);
    const int b0 = b.b0, nb = b.nb;
    // The block's fixed fields are set once per chunk (the constructor).
    in_.n = nb;
    in_.sep_lo = shear.sep_lo;
    in_.sep_hi = shear.sep_hi;
    in_.sep = shear.sep;
    in_.data = tile.data + b0;
    in_.weight = tile.weight ? tile.weight + b0 : nullptr;
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
      const RowTile& pt = im_.group_tiles[group.first + ps];
      in_.prefetch_data = pt.data + pb;
      in_.prefetch_weight = pt.weight ? pt.weight + pb : nullptr;
    }
    in_.chi2_lanes = kPass == Pass::kModel ? nullptr : state_.chi2_lanes.data() + 4 * slot;
    in_.uniform_weight = tile.uniform_weight * inv_weight_scale_;  // exact: a power of two
    in_.contrast = tab_.contrast[k];
    in_.offset = tab_.offset[k];
    in_.inv_sigma = inv_sigma_;
    in_.a = kLaminar ? tab_.shear_a[k] : 0.0;
    in_.b = kLaminar ? tab_.shear_b[k] : 0.0;
    if constexpr (kPass == Pass::kModel) {
      detail::ModelBlock(in_, model_out_ + im_.tile_offset[static_cast<size_t>(tile_index)] + b0);
    } else if constexpr (!kDerivs) {
      detail::Chi2Block(in_);  // into in_.chi2_lanes
    } else if constexpr (!kFull) {
      double sums[detail::kNumTileSums];  // written by the block function
      if constexpr (kLaminar) {
        detail::GradientLaminarBlock(in_, sums);
      } else {
        detail::GradientStaticBlock(in_, sums);
      }
      double* ang = angles_ + k * static_cast<size_t>(stride_);
      ang[0] += sums[detail::kSumUcR];
      ang[1] += sums[detail::kSumR] * inv_sigma_;
    } else {
      double sums[detail::kNumTileSums];  // written by the block function
      if constexpr (kLaminar) {
        detail::NormalLaminarBlock(in_, sums);
      } else {
        detail::NormalStaticBlock(in_, sums);
      }
      AddNormalAngleSums(angles_ + k * static_cast<size_t>(stride_), sums);
    }
  }

  // A tile's normal-equation sums into its angle's block of the partial.
  void AddNormalAngleSums(double* ang, const double* sums) const {
    const double inv_sigma = inv_sigma_;
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

  // The per-column angle sums into the physics block (Jᵀr only for kGradient, with the same
  // values).
  void FoldColumns(const Block& b) {
    if constexpr (kDerivs) {
      if constexpr (kLaminar) {
        detail::FoldLaminarColumns(in_, b.nb_padded, phys_jtj_, phys_jtr_);
      } else {
        detail::FoldStaticColumns(in_, b.nb_padded, phys_jtj_, phys_jtr_);
      }
    } else {
      (void)b;
    }
  }

  // Each tile's χ², its lanes folded as the point loops fold them.
  void FoldChi2(const Group& group) {
    if constexpr (kPass != Pass::kModel) {
      for (size_t slot = 0; slot < group.tiles.size(); ++slot) {
        *chi2_ += detail::FoldLanes(state_.chi2_lanes.data() + 4 * slot) * chi2_scale_;
      }
    } else {
      (void)group;
    }
  }

  double* Array() { return scratch_ + kWidth * next_array_++; }

  const Impl& im_;
  const Tables& tab_;
  double* model_out_;
  SeparableCounts* counts_;
  ThreadState& state_;
  double *chi2_ = nullptr, *phys_jtj_ = nullptr, *phys_jtr_ = nullptr, *angles_ = nullptr;
  const double inv_sigma_ = 1.0 / im_.options.sigma;
  // The factor of the χ² lanes: 1/σ² (linear), C² (robust; see detail::PointBlock::loss).
  double chi2_scale_ = inv_sigma_ * inv_sigma_;
  const double inv_weight_scale_ = 1.0 / im_.weight_scale;
  const bool exact_ = im_.options.exact_transcendentals;
  const int stride_ = kFull ? im_.angle_stride() : 2;
  const bool separable_ = kLaminar && !exact_ && !tab_.shear_sin.empty();
  const bool separable_diffusion_ = !exact_ && !tab_.diff_pivot.empty();
  const size_t n_t_ = im_.ts.size();

  // The per-block scratch arrays, kWidth apart in one buffer (contiguous for either width).
  alignas(64) double scratch_[kArrays * kWideBlock];
  int next_array_ = 0;
  // Angle-independent values of one block of columns:
  //   g1d = exp(clip(−wq·I_D)), fac = ∂g1d/∂I_D·Δ/I (0 when clipped), e_q = ∂ΔC_D/∂θ_q,
  //   ig = I_Γ, f_q = ∂I_Γ/∂θ_q.
  double *g1d_ = Array(), *fac_ = Array(), *ig_ = Array();
  double* e_[3] = {Array(), Array(), Array()};
  double* f_[3] = {Array(), Array(), Array()};
  // Per-angle scratch: phase, its sine and cosine, the shear factor and its derivative.
  double *xs_ = Array(), *sn_ = Array(), *cs_ = Array(), *sfac_ = Array(), *dsfac_ = Array();
  // Separable paths (separable.h): C_Γ[i] + C_Γ[j] and the smooth-abs shifts δ_Γ, δ_D; the
  // diffusion exponent −wq·I_D, ΔC_D and I_D per column.
  double *cgsum_ = Array(), *shift_ = Array(), *inv_ig_ = Array(), *shift_d_ = Array(),
         *log_g1_ = Array(), *delta_d_ = Array(), *id_d_ = Array();
  // g1_diff/I_Γ² per column, for the point passes' separable lanes (SeparableRow).
  double* g1d_inv_ig2_ = Array();
  // Sums over the angles of one column of w·(α,β,γ)⊗(α,β,γ) and w·(α,β,γ)·r, where the
  // point's physics derivative (∂c2/∂θ)/σ is α·e (diffusion), β·f (shear rate), γ (φ0).
  double *saa_ = Array(), *sab_ = Array(), *sbb_ = Array(), *sag_ = Array(), *sbg_ = Array(),
         *sgg_ = Array(), *sar_ = Array(), *sbr_ = Array(), *sgr_ = Array();
  detail::PointBlock in_;
  // Per tile of the group: the separable bound held at some column of an earlier block of
  // this row, so it holds at every later column (it is monotone along the row, separable.h)
  // and the later blocks skip SeparableStart.
  std::vector<unsigned char> passed_;
};

template <Pass kPass, bool kLaminar>
void ModelKernel::Impl::RunChunk(const Tables& tab, int chunk, double* partial, double* model_out,
                                 SeparableCounts* counts) const {
  // Per thread, kept across chunks and passes (a chunk is a few rows):
  //   start_distance, per angle: where the separable bound started to hold in the last block
  //     searched, as a distance j − i (past the block if nowhere in it; −1: none yet); the
  //     next search starts there (SeparableStartFrom). Only a guess: any value of it gives
  //     the same start.
  //   chi2_lanes, per tile of a group: its χ² lanes, carried across the group's blocks
  //     (PointBlock::chi2_lanes) and added to the partial after the group's last block.
  thread_local typename ChunkRun<kPass, kLaminar>::ThreadState state;
  ChunkRun<kPass, kLaminar>(*this, tab, partial, model_out, counts, state).Run(chunk);
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
