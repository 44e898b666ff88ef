// The two-component kernel's chunk loops (heterodyne_kernel_impl.h): a chunk's χ² or model,
// and its gradient or normal-equation partials.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/simd_clones.h"
#include "model/fast_sincos.h"
#include "model/heterodyne_block.h"
#include "model/heterodyne_kernel_impl.h"

namespace homodyne::model {
namespace het_kernel {
namespace {

// cos θ (and sin θ) of n columns by angle addition from the tables' entries of the columns
// (tab_cos, tab_sin) and of the row (ci, si).
HOMODYNE_SIMD_CLONES void SeparableCos(const double* tab_cos, const double* tab_sin, double ci,
                                       double si, double* cs, int n) {
  for (int c = 0; c < n; ++c) cs[c] = tab_cos[c] * ci + tab_sin[c] * si;
}
HOMODYNE_SIMD_CLONES void SeparableSinCos(const double* tab_cos, const double* tab_sin, double ci,
                                          double si, double* sn, double* cs, int n) {
  for (int c = 0; c < n; ++c) {
    cs[c] = tab_cos[c] * ci + tab_sin[c] * si;
    sn[c] = tab_sin[c] * ci - tab_cos[c] * si;
  }
}

// h[j − fa] = F[j]·(T[s(i) + 1, s]·G[i]) for the columns j in [fa, fb), s = j / span (t_row:
// T's row s(i) + 1, g = G[i]).
HOMODYNE_SIMD_CLONES void FactorisedDecays(const double* __restrict f,
                                           const double* __restrict t_row, double g, int span,
                                           int fa, int fb, double* __restrict h) {
  int j = fa;
  for (int s = fa / span; j < fb; ++s) {
    const int stop = std::min(fb, (s + 1) * span);
    const double rg = t_row[s] * g;
    for (; j < stop; ++j) h[j - fa] = f[j] * rg;
  }
}

// h of component r (0: reference, 1: sample) at the columns j0 … j0 + n − 1 of row i, and
// with dh its derivative with respect to Δ (0 where the clip is active).
void HalfDecays(const Tables& tab, int r, std::size_t i, int j0, int n, double half_q2, double* h,
                double* dh) {
  const Tables::DecayFactors& d = tab.decay[r];
  const std::vector<double>& p = tab.p[r];
  const DecaySegments sg = SegmentsOf(d, i, j0, n);
  auto direct = [&](int from, int to) {
    for (int j = from; j < to; ++j) {
      const auto e = static_cast<std::size_t>(j - j0);
      const double dr = p[static_cast<std::size_t>(j)] - p[i];
      const double ir = std::sqrt(dr * dr + kSmoothAbs);
      const double er = half_q2 * ir;
      const double hv = std::exp(std::clamp(er, -kExpClip, 0.0));
      h[e] = hv;
      if (dh != nullptr) dh[e] = (er > -kExpClip && er < 0.0) ? hv * half_q2 * dr / ir : 0.0;
    }
  };
  direct(j0, sg.fa);
  if (sg.fa < sg.fb) {
    const int span = tab.decay_span;
    const double* t_row = d.t.data() + (i / static_cast<std::size_t>(span) + 1) * tab.n_spans;
    FactorisedDecays(d.f.data(), t_row, d.g[i], span, sg.fa, sg.fb, h + (sg.fa - j0));
    if (dh != nullptr) {
      for (int j = sg.fa; j < sg.fb; ++j) {
        const auto e = static_cast<std::size_t>(j - j0);
        const double dr = p[static_cast<std::size_t>(j)] - p[i];
        const double ratio = dr >= kDecayUnitRatioFrom ? 1.0 : dr / std::sqrt(dr * dr + kSmoothAbs);
        dh[e] = h[e] * half_q2 * ratio;
      }
    }
  }
  direct(sg.fb, sg.clip);
  for (int j = sg.clip; j < j0 + n; ++j) {
    h[j - j0] = tab.h_clip;
    if (dh != nullptr) dh[j - j0] = 0.0;
  }
}

}  // namespace
}  // namespace het_kernel

using namespace het_kernel;  // NOLINT(build/namespaces): the kernel's own internals

// The angle-independent quantities of one row's columns (a group), shared by its angles.
struct ColumnTerms {
  std::vector<double> hr, hs, rr, ss, m2, norm, v;
  std::vector<double> theta, sin_theta, cos_theta;  // per angle, refilled
  std::vector<double> c2, r;                        // per angle: model and residual
  void Resize(int n) {
    for (auto* a : {&hr, &hs, &rr, &ss, &m2, &norm, &v, &theta, &sin_theta, &cos_theta, &c2, &r}) {
      a->resize(static_cast<std::size_t>(n));
    }
  }
};

// The fraction terms of n columns of row i that every pass shares (and the velocity
// differences), with the reference's expressions: every pass has the same c2 bits.
HOMODYNE_SIMD_CLONES void ColumnsAt(const double* __restrict fs_j, double bi,
                                    const double* __restrict pv_j, double pv_i,
                                    const double* __restrict hr, const double* __restrict hs,
                                    double* __restrict rr, double* __restrict ss,
                                    double* __restrict m2, double* __restrict norm,
                                    double* __restrict v, int n) {
  const double ai = 1.0 - bi;
  const double ni = bi * bi + ai * ai;
  for (int c = 0; c < n; ++c) {
    const double bj = fs_j[c], aj = 1.0 - bj;
    rr[c] = (ai * aj) * (ai * aj) * (hr[c] * hr[c]);
    ss[c] = (bi * bj) * (bi * bj) * (hs[c] * hs[c]);
    m2[c] = 2.0 * ((ai * bi) * (aj * bj));
    const double nm = ni * (bj * bj + aj * aj);
    norm[c] = nm > kNormFloor ? nm : kNormFloor;
    v[c] = pv_j[c] - pv_i;
  }
}

// The derivative passes' column terms of a block's nb columns: ColumnsAt's (the same
// expressions) and the chain-rule factors of heterodyne_block.h; col.hr and col.hs are set.
HOMODYNE_SIMD_CLONES void DerivColumnsAt(const double* __restrict fs_j, double bi,
                                         const double* __restrict pv_j, double pv_i,
                                         detail::HetBlockColumns& col, int nb) {
  const double ai = 1.0 - bi;
  const double ni = bi * bi + ai * ai;
  for (int e = 0; e < nb; ++e) {
    const double bj = fs_j[e], aj = 1.0 - bj;
    const double hr = col.hr[e], hs = col.hs[e];
    col.rr[e] = (ai * aj) * (ai * aj) * (hr * hr);
    col.ss[e] = (bi * bj) * (bi * bj) * (hs * hs);
    col.m2[e] = 2.0 * ((ai * bi) * (aj * bj));
    const double nm = ni * (bj * bj + aj * aj);
    const bool floored = !(nm > kNormFloor);
    const double norm = floored ? kNormFloor : nm;
    col.norm[e] = norm;
    col.v[e] = pv_j[e] - pv_i;
    col.inv_norm[e] = 1.0 / norm;
    col.kr[e] = 2.0 * (ai * aj) * (ai * aj) * hr;
    col.ks[e] = 2.0 * (bi * bj) * (bi * bj) * hs;
    col.dni[e] = floored ? 0.0 : 2.0 * (bi - ai) * (bj * bj + aj * aj);
    col.dnj[e] = floored ? 0.0 : 2.0 * (bj - aj) * ni;
    col.dsi0[e] = -2.0 * ai * (aj * aj) * (hr * hr) + 2.0 * bi * (bj * bj) * (hs * hs);
    col.dsi1[e] = 2.0 * (aj * bj);
    col.dsi2[e] = ai - bi;
    col.dsj0[e] = -2.0 * aj * (ai * ai) * (hr * hr) + 2.0 * bj * (bi * bi) * (hs * hs);
    col.dsj1[e] = 2.0 * (ai * bi);
    col.dsj2[e] = aj - bj;
  }
}

HOMODYNE_SIMD_CLONES void Differences(const double* __restrict x, double xi, double* __restrict out,
                                      int n) {
  for (int e = 0; e < n; ++e) out[e] = x[e] - xi;
}

// The phase's cosine (and sine) of n columns: the array sine/cosine within ~2 ulp, or libm's,
// whose bits are the reference model's (KernelOptions::exact_transcendentals).
inline void PhaseSinCos(bool exact, const double* theta, double* sn, double* cs, int n,
                        bool with_sine) {
  if (exact) {
    for (int col = 0; col < n; ++col) {
      cs[col] = std::cos(theta[col]);
      if (with_sine) sn[col] = std::sin(theta[col]);
    }
  } else {
    FastSinCos(theta, sn, cs, n);
  }
}

void HeterodyneKernel::Impl::RunChunk(const Tables& tab, int c, double* part, double* model) const {
  const double inv_sigma = 1.0 / options.sigma;
  const double half_q2 = -0.5 * tab.q2;
  thread_local ColumnTerms ct;
  for (int gidx = chunk_begin[static_cast<std::size_t>(c)];
       gidx < chunk_begin[static_cast<std::size_t>(c) + 1]; ++gidx) {
    const Group& grp = groups[static_cast<std::size_t>(gidx)];
    const auto i = static_cast<std::size_t>(grp.row);
    const int n = grp.count;
    ct.Resize(n);
    HalfDecays(tab, 0, i, grp.col_begin, n, half_q2, ct.hr.data(), nullptr);
    HalfDecays(tab, 1, i, grp.col_begin, n, half_q2, ct.hs.data(), nullptr);
    const auto j0 = static_cast<std::size_t>(grp.col_begin);
    ColumnsAt(tab.fs.data() + j0, tab.fs[i], tab.p[2].data() + j0, tab.p[2][i], ct.hr.data(),
              ct.hs.data(), ct.rr.data(), ct.ss.data(), ct.m2.data(), ct.norm.data(), ct.v.data(),
              n);
    for (int ti : grp.tiles) {
      const RowTile& tile = tiles[static_cast<std::size_t>(ti)];
      const auto k = static_cast<std::size_t>(tile.angle);
      const double a = tab.a[k];
      const int ns = SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, n);
      if (ns > 0) {
        const std::size_t at = k * tab.n_t;
        const double* tc = tab.cos_x.data() + at;
        const double* ts = tab.sin_x.data() + at;
        SeparableCos(tc + grp.col_begin, ts + grp.col_begin, tc[i], ts[i], ct.cos_theta.data(), ns);
      }
      for (int col = ns; col < n; ++col) {
        ct.theta[static_cast<std::size_t>(col)] = a * ct.v[static_cast<std::size_t>(col)];
      }
      PhaseSinCos(options.exact_transcendentals, ct.theta.data() + ns, ct.sin_theta.data() + ns,
                  ct.cos_theta.data() + ns, n - ns, false);
      const double contrast = tab.contrast[k];
      const double offset = tab.offset[k];
      double* c2 = ct.c2.data();
      for (int col = 0; col < n; ++col) {
        const auto e = static_cast<std::size_t>(col);
        const double sum = ct.rr[e] + ct.ss[e] + ct.m2[e] * ct.hr[e] * ct.hs[e] * ct.cos_theta[e];
        c2[col] = offset + (contrast * sum) / ct.norm[e];
      }
      if (model != nullptr) {
        std::copy(c2, c2 + n, model + tile_offset[static_cast<std::size_t>(ti)]);
        continue;
      }
      // Residuals and χ² terms (0 at masked points, whatever their data), summed in four
      // fixed lanes: vectorisable, and the same order for every pass and thread count (the
      // derivative passes sum the same terms in the same lanes, detail::HetTileDerivatives).
      double* r = ct.r.data();
      double* term = ct.theta.data();  // the phases are no longer needed
      const double* data = tile.data;
      if (options.loss.robust()) {
        const double inv_scale = 1.0 / options.loss.f_scale;
        const double scale_sq = options.loss.f_scale * options.loss.f_scale;
        double* w = ct.sin_theta.data();  // the χ² pass takes no sines
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          w[col] = tile.weight != nullptr ? tile.weight[col] : tile.uniform_weight;
          term[col] = 0.0;
        }
        RobustPointTerms(options.loss.kind, inv_scale, scale_sq, n, r, w, term, nullptr);
      } else if (tile.weight != nullptr) {
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          const double w = tile.weight[col];
          term[col] = w != 0.0 ? w * r[col] * r[col] : 0.0;
        }
      } else {
        const double w = tile.uniform_weight;
        for (int col = 0; col < n; ++col) {
          r[col] = (data[col] - c2[col]) * inv_sigma;
          term[col] = w != 0.0 ? w * r[col] * r[col] : 0.0;
        }
      }
      double lane[4] = {0.0, 0.0, 0.0, 0.0};
      int col4 = 0;
      for (; col4 + 4 <= n; col4 += 4) {
        for (int l = 0; l < 4; ++l) lane[l] += term[col4 + l];
      }
      for (int l = 0; col4 + l < n; ++l) lane[l] += term[col4 + l];
      part[0] += (lane[0] + lane[1]) + (lane[2] + lane[3]);
    }
  }
}

// Per-thread buffers of the derivative passes.
struct DerivScratch {
  detail::HetBlockColumns col;
  detail::HetBlockSums sums;
  detail::HetTileScratch tile[detail::kHetTileBatch];
  alignas(64) double theta[detail::kHetBlock], sin_theta[detail::kHetBlock],
      cos_theta[detail::kHetBlock];
  std::vector<double> chi2_lanes;  // 4 per tile of the group
  std::vector<int> separable_end;  // per tile of the group: SeparablePhaseEnd
};

template <Pass P>
void HeterodyneKernel::Impl::RunDerivChunk(const Tables& tab, int c, double* part) const {
  using detail::kHetBlock;
  constexpr bool kNormal = P == Pass::kNormal;
  const double inv_sigma = 1.0 / options.sigma;
  const double half_q2 = -0.5 * tab.q2;
  thread_local std::unique_ptr<DerivScratch> scratch;
  if (!scratch) scratch = std::make_unique<DerivScratch>();
  DerivScratch& sc = *scratch;
  detail::HetBlockColumns& col = sc.col;
  double* jtj = kNormal ? part + 1 : nullptr;
  double* jtr = part + 1 + (kNormal ? kNp * kNp : 0);
  double tile_sums[detail::kHetTileSums];
  for (int gidx = chunk_begin[static_cast<std::size_t>(c)];
       gidx < chunk_begin[static_cast<std::size_t>(c) + 1]; ++gidx) {
    const Group& grp = groups[static_cast<std::size_t>(gidx)];
    const auto i = static_cast<std::size_t>(grp.row);
    const double bi = tab.fs[i];
    sc.chi2_lanes.assign(4 * grp.tiles.size(), 0.0);
    sc.separable_end.resize(grp.tiles.size());
    for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
      const auto k = static_cast<std::size_t>(tiles[static_cast<std::size_t>(grp.tiles[t])].angle);
      sc.separable_end[t] = SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, grp.count);
    }
    for (int d = 0; d < 4; ++d) col.fi[d] = tab.dfs[d][i];
    for (int b0 = 0; b0 < grp.count; b0 += kHetBlock) {
      const int nb = std::min(kHetBlock, grp.count - b0);
      col.n = nb;
      HalfDecays(tab, 0, i, grp.col_begin + b0, nb, half_q2, col.hr, col.dhr);
      HalfDecays(tab, 1, i, grp.col_begin + b0, nb, half_q2, col.hs, col.dhs);
      const auto j0 = static_cast<std::size_t>(grp.col_begin + b0);
      DerivColumnsAt(tab.fs.data() + j0, bi, tab.p[2].data() + j0, tab.p[2][i], col, nb);
      for (int r = 0; r < 3; ++r) {
        for (int d = 0; d < 3; ++d) {
          const std::vector<double>& x = tab.dp[r][d];
          Differences(x.data() + j0, x[i], col.dp[3 * r + d], nb);
        }
      }
      for (int d = 0; d < 4; ++d) std::copy_n(tab.dfs[d].data() + j0, nb, col.fj[d]);
      // The fold reads whole lanes: zero the column vectors beyond the block, and the sums.
      const int padded = (nb + detail::kHetLanes - 1) / detail::kHetLanes * detail::kHetLanes;
      for (int e = nb; e < padded; ++e) {
        col.v[e] = 0.0;
        for (auto& x : col.dp) x[e] = 0.0;
        for (auto& x : col.fj) x[e] = 0.0;
      }
      for (auto& x : sc.sums.t) std::fill(x, x + padded, 0.0);
      if constexpr (kNormal) {
        for (auto& x : sc.sums.s) std::fill(x, x + padded, 0.0);
      }
      const detail::HetTileScratch* batch[detail::kHetTileBatch];
      int in_batch = 0;
      for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
        const int ti = grp.tiles[t];
        const RowTile& tile = tiles[static_cast<std::size_t>(ti)];
        const auto k = static_cast<std::size_t>(tile.angle);
        const double a = tab.a[k];
        const int ns = std::clamp(sc.separable_end[t] - b0, 0, nb);
        if (ns > 0) {
          const std::size_t at = k * tab.n_t;
          const double* tc = tab.cos_x.data() + at;
          const double* ts = tab.sin_x.data() + at;
          SeparableSinCos(tc + j0, ts + j0, tc[i], ts[i], sc.sin_theta, sc.cos_theta, ns);
        }
        for (int e = ns; e < nb; ++e) sc.theta[e] = a * col.v[e];
        PhaseSinCos(options.exact_transcendentals, sc.theta + ns, sc.sin_theta + ns,
                    sc.cos_theta + ns, nb - ns, true);
        detail::HetTileInput in;
        in.data = tile.data + b0;
        in.weight = tile.weight != nullptr ? tile.weight + b0 : nullptr;
        in.uniform_weight = tile.uniform_weight;
        in.contrast = tab.contrast[k];
        in.offset = tab.offset[k];
        in.inv_sigma = inv_sigma;
        in.a = a;
        in.da = tab.da[k];
        in.cos_theta = sc.cos_theta;
        in.sin_theta = sc.sin_theta;
        in.chi2_lanes = sc.chi2_lanes.data() + 4 * t;
        if (options.loss.robust()) {
          in.loss = static_cast<int>(options.loss.kind);
          in.loss_inv_scale = 1.0 / options.loss.f_scale;
          in.loss_scale_sq = options.loss.f_scale * options.loss.f_scale;
        }
        // This tile's next block of data (and weights): the angles' rows are far apart in
        // memory, more streams than the hardware prefetcher follows.
        const int next = b0 + kHetBlock;
        for (int e = next; e < std::min(next + kHetBlock, grp.count); e += 8) {
          __builtin_prefetch(tile.data + e);
          if (tile.weight != nullptr) __builtin_prefetch(tile.weight + e);
        }
        detail::HetTileScratch& ts = sc.tile[in_batch];
        detail::HetTileDerivatives(col, in, ts, tile_sums, kNormal);
        batch[in_batch++] = &ts;
        if (in_batch == detail::kHetTileBatch || t + 1 == grp.tiles.size()) {
          detail::HetAddTiles(nb, batch, in_batch, sc.sums, kNormal);
          in_batch = 0;
        }
        const double uo = inv_sigma;
        if constexpr (kNormal) {
          double* ang = part + 1 + kNp * kNp + kNp + static_cast<std::ptrdiff_t>(k) * (5 + 2 * kNp);
          ang[0] += tile_sums[0];
          ang[1] += tile_sums[1] * uo;
          ang[2] += tile_sums[2] * (uo * uo);
          ang[3] += tile_sums[3];
          ang[4] += tile_sums[4] * uo;
          for (int p = 0; p < 10; ++p) {
            const int param = p < 9 ? p : het::kPhi0Het;
            ang[5 + param] += tile_sums[5 + 2 * p];
            ang[5 + kNp + param] += tile_sums[6 + 2 * p] * uo;
          }
          for (int d = 0; d < 4; ++d) {
            ang[5 + het::kF0 + d] += col.fi[d] * tile_sums[25] + tile_sums[27 + d];
            ang[5 + kNp + het::kF0 + d] += (col.fi[d] * tile_sums[26] + tile_sums[31 + d]) * uo;
          }
        } else {
          double* ang = part + 1 + kNp + 2 * static_cast<std::ptrdiff_t>(k);
          ang[0] += tile_sums[3];
          ang[1] += tile_sums[4] * uo;
        }
      }
      detail::HetFoldBlock(col, sc.sums, jtj, jtr);
    }
    for (std::size_t t = 0; t < grp.tiles.size(); ++t) {
      const double* lane = sc.chi2_lanes.data() + 4 * t;
      part[0] += (lane[0] + lane[1]) + (lane[2] + lane[3]);
    }
  }
}

template void HeterodyneKernel::Impl::RunDerivChunk<Pass::kGradient>(const Tables&, int,
                                                                     double*) const;
template void HeterodyneKernel::Impl::RunDerivChunk<Pass::kNormal>(const Tables&, int,
                                                                   double*) const;

}  // namespace homodyne::model
