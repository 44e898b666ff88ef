#include "homodyne/model/kernel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "homodyne/error.h"
#include "homodyne/model/fast_sincos.h"
#include "homodyne/model/thread_pool.h"
#include "point_terms.h"
#include "shear_factors.h"

namespace homodyne::model {
namespace {

constexpr int kBlock = detail::kMaxBlock;  // columns sharing the angle-independent part

enum class Pass { kModel, kChi2, kNormal };

// One floored rate on the grid, its cumulative trapezoid and the trapezoids of its
// derivatives with respect to (amplitude, exponent, offset). Same expressions, same order as
// the literal reference (reference_model.cpp), hence bit-identical prefix sums.
void BuildRate(const std::vector<double>& ts, double a, double e, double o, bool derivs,
               std::vector<double>& cum, std::vector<double> (&dcum)[3]) {
  const size_t n = ts.size();
  cum.assign(n, 0.0);
  double prev = 0.0, dprev[3] = {0, 0, 0};
  for (auto& d : dcum) d.assign(derivs ? n : 0, 0.0);
  for (size_t m = 0; m < n; ++m) {
    const double power = std::pow(ts[m], e);
    const double raw = a * power + o;
    const double f = FloorAt(raw, kRateFloor);
    double df[3] = {0, 0, 0};
    if (derivs && raw > kRateFloor) {
      df[0] = power;
      df[1] = a * power * std::log(ts[m]);
      df[2] = 1.0;
    }
    if (m > 0) {
      cum[m] = cum[m - 1] + 0.5 * (prev + f);
      if (derivs) {
        for (int q = 0; q < 3; ++q) dcum[q][m] = dcum[q][m - 1] + 0.5 * (dprev[q] + df[q]);
      }
    }
    prev = f;
    for (int q = 0; q < 3; ++q) dprev[q] = df[q];
  }
}

// Per-evaluation tables (O(n_t + n_phi)).
struct Tables {
  std::vector<double> cd, dcd[3], cg, dcg[3];
  std::vector<double> shear_a;  // sp·cos(π/180(φ0 − φ_k))
  std::vector<double> shear_b;  // sp·(−sin(π/180(φ0 − φ_k))·π/180)
  const double* contrast = nullptr;
  const double* offset = nullptr;
  double wq = 0.0;
};

}  // namespace

void KernelOptions::Validate() const {
  if (threads < 1) {
    ThrowBadInput(fmt::format("threads must be >= 1, found {}", threads), {}, "threads");
  }
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    ThrowBadInput(fmt::format("sigma must be finite and > 0, found {}", sigma), {}, "sigma");
  }
  if (chunk_points < 1) {
    ThrowBadInput(fmt::format("chunk_points must be >= 1, found {}", chunk_points), {},
                  "chunk_points");
  }
}

struct ModelKernel::Impl {
  AnalysisMode mode;
  Geometry geometry;
  std::vector<double> t, phi, ts;
  std::vector<RowTile> tiles;
  KernelOptions options;
  ExpandedIndex index;
  std::vector<std::int64_t> tile_offset;  // first output index of each tile
  std::int64_t n_points = 0;

  struct Group {
    int row, col_begin, count;
    std::vector<int> tiles;
  };
  std::vector<Group> groups;
  std::vector<int> chunk_begin;  // group ranges of the chunks (size n_chunks + 1)
  std::unique_ptr<ThreadPool> pool;

  int n_phys() const { return index.n_phys; }
  // Partial-sum layout of one chunk.
  int angle_stride() const { return 5 + 2 * n_phys(); }
  int partial_size() const {
    return 1 + n_phys() * n_phys() + n_phys() + index.n_angles * angle_stride();
  }

  Tables MakeTables(std::span<const double> params, bool derivs) const;
  template <Pass kPass, bool kLaminar>
  void RunChunk(const Tables& tab, int chunk, double* partial, double* model_out) const;
  std::vector<double> Reduce(std::span<const double> params, Pass pass) const;
};

Tables ModelKernel::Impl::MakeTables(std::span<const double> params, bool derivs) const {
  if (static_cast<int>(params.size()) != index.size()) {
    ThrowBadInput(
        fmt::format("the model kernel expects {} parameters (2·{} angles + {} "
                    "physical), found {}",
                    index.size(), index.n_angles, index.n_phys, params.size()));
  }
  Tables tab;
  const double* p = params.data() + index.phys(0);
  BuildRate(ts, p[0], p[1], p[2], derivs, tab.cd, tab.dcd);
  if (mode == AnalysisMode::kLaminarFlow) {
    BuildRate(ts, p[3], p[4], p[5], derivs, tab.cg, tab.dcg);
    const double sp = geometry.SincPrefactor();
    for (double phi_k : phi) {
      const double angle = std::numbers::pi / 180.0 * (p[6] - phi_k);
      tab.shear_a.push_back(sp * std::cos(angle));
      tab.shear_b.push_back(sp * (-std::sin(angle) * std::numbers::pi / 180.0));
    }
  }
  tab.contrast = params.data() + index.contrast(0);
  tab.offset = params.data() + index.offset(0);
  tab.wq = geometry.DiffusionPrefactor();
  return tab;
}

template <Pass kPass, bool kLaminar>
void ModelKernel::Impl::RunChunk(const Tables& tab, int chunk, double* partial,
                                 double* model_out) const {
  constexpr int kNp = kLaminar ? 7 : 3;
  constexpr bool kDerivs = kPass == Pass::kNormal;
  const double inv_sigma = 1.0 / options.sigma;
  const double wq = tab.wq;
  const bool exact = options.exact_transcendentals;
  const int stride = angle_stride();
  // Partial layout (kNormal): [χ², phys JᵀJ (kNp², upper), phys Jᵀr (kNp), per-angle blocks].
  double* chi2 = partial;
  double* phys_jtj = kDerivs ? partial + 1 : nullptr;
  double* phys_jtr = kDerivs ? phys_jtj + kNp * kNp : nullptr;
  double* angles = kDerivs ? phys_jtr + kNp : nullptr;

  // Angle-independent values of one block of columns:
  //   g1d = exp(clip(−wq·I_D)), fac = ∂g1d/∂I_D·Δ/I (0 when clipped), e_q = ∂ΔC_D/∂θ_q,
  //   ig = I_Γ, f_q = ∂I_Γ/∂θ_q.
  alignas(64) double g1d[kBlock], fac[kBlock], e[3][kBlock], ig[kBlock], f[3][kBlock];
  // Per-angle scratch: phase, its sine and cosine.
  alignas(64) double xs[kBlock], sn[kBlock], cs[kBlock], sfac[kBlock], dsfac[kBlock];
  // Sums over the angles of one column of w·(α,β,γ)⊗(α,β,γ) and w·(α,β,γ)·r, where the
  // point's physics derivative (∂c2/∂θ)/σ is α·e (diffusion), β·f (shear rate), γ (φ0).
  alignas(64) double saa[kBlock], sab[kBlock], sbb[kBlock], sag[kBlock], sbg[kBlock], sgg[kBlock],
      sar[kBlock], sbr[kBlock], sgr[kBlock];

  for (int g = chunk_begin[static_cast<size_t>(chunk)];
       g < chunk_begin[static_cast<size_t>(chunk) + 1]; ++g) {
    const Group& group = groups[static_cast<size_t>(g)];
    const auto i = static_cast<size_t>(group.row);
    for (int b0 = 0; b0 < group.count; b0 += kBlock) {
      const int nb = std::min(kBlock, group.count - b0);
      const size_t j0 = static_cast<size_t>(group.col_begin + b0);
      for (int c = 0; c < nb; ++c) {
        const size_t j = j0 + static_cast<size_t>(c);
        const double delta = tab.cd[i] - tab.cd[j];
        const double id = std::sqrt(delta * delta + kSmoothAbsEps2);
        const double log_g1 = -wq * id;
        g1d[c] = std::exp(std::clamp(log_g1, kLogG1Min, 0.0));
        if constexpr (kDerivs) {
          fac[c] = log_g1 < kLogG1Min ? 0.0 : g1d[c] * (-wq) * (delta / id);
          for (int q = 0; q < 3; ++q) e[q][c] = tab.dcd[q][i] - tab.dcd[q][j];
        }
        if constexpr (kLaminar) {
          const double dg = tab.cg[i] - tab.cg[j];
          ig[c] = std::sqrt(dg * dg + kSmoothAbsEps2);
          if constexpr (kDerivs) {
            const double ratio = dg / ig[c];
            for (int q = 0; q < 3; ++q) f[q][c] = ratio * (tab.dcg[q][i] - tab.dcg[q][j]);
          }
        }
      }
      const int nb4 = (nb + 3) & ~3;  // detail::PointBlock reads columns up to a multiple of 4
      for (int c = nb; c < nb4; ++c) {
        g1d[c] = fac[c] = ig[c] = 0.0;
        for (int q = 0; q < 3; ++q) e[q][c] = f[q][c] = 0.0;
      }
      if constexpr (kDerivs) {
        for (int c = 0; c < nb4; ++c) {
          saa[c] = sab[c] = sbb[c] = sag[c] = sbg[c] = sgg[c] = sar[c] = sbr[c] = sgr[c] = 0.0;
        }
      }
      for (int tile_index : group.tiles) {
        const RowTile& tile = tiles[static_cast<size_t>(tile_index)];
        const auto k = static_cast<size_t>(tile.angle);
        const double contrast = tab.contrast[k];
        const double offset = tab.offset[k];
        const double a = kLaminar ? tab.shear_a[k] : 0.0;
        const double bcoef = kLaminar ? tab.shear_b[k] : 0.0;
        if constexpr (kLaminar) {
          for (int c = 0; c < nb; ++c) xs[c] = a * ig[c];
          if (exact) {
            for (int c = 0; c < nb; ++c) {
              sn[c] = std::sin(xs[c]);
              if constexpr (kDerivs) cs[c] = std::cos(xs[c]);
            }
          } else if constexpr (kDerivs) {
            FastSinCos(xs, sn, cs, nb);
          } else {
            FastSin(xs, sn, nb);
          }
          if constexpr (kDerivs) {
            detail::ShearFactorsWithDerivative(xs, sn, cs, sfac, dsfac, nb);
          } else {
            detail::ShearFactors(xs, sn, sfac, nb);
          }
        }
        const double* data = tile.data + b0;
        if constexpr (kPass == Pass::kModel) {
          double* out = model_out + tile_offset[static_cast<size_t>(tile_index)] + b0;
          for (int c = 0; c < nb; ++c) {
            const double g1_raw = kLaminar ? g1d[c] * sfac[c] : g1d[c];
            const double g1 = FloorAt(g1_raw, kG1Floor);
            out[c] = offset + contrast * (g1 * g1);
          }
          continue;
        } else {
          detail::PointBlock in;
          in.n = nb;
          in.g1d = g1d;
          in.fac = fac;
          in.ig = ig;
          for (int q = 0; q < 3; ++q) {
            in.e[q] = e[q];
            in.f[q] = f[q];
          }
          in.s = kLaminar ? sfac : nullptr;
          in.ds = kLaminar ? dsfac : nullptr;
          in.data = data;
          in.weight = tile.weight ? tile.weight + b0 : nullptr;
          in.uniform_weight = tile.uniform_weight;
          in.contrast = contrast;
          in.offset = offset;
          in.inv_sigma = inv_sigma;
          in.a = a;
          in.b = bcoef;
          if constexpr (!kDerivs) {
            *chi2 += detail::Chi2Block(in);
          } else {
            in.saa = saa;
            in.sab = sab;
            in.sbb = sbb;
            in.sag = sag;
            in.sbg = sbg;
            in.sgg = sgg;
            in.sar = sar;
            in.sbr = sbr;
            in.sgr = sgr;
            double sums[detail::kNumTileSums] = {};
            if constexpr (kLaminar) {
              detail::NormalLaminarBlock(in, sums);
            } else {
              detail::NormalStaticBlock(in, sums);
            }
            *chi2 += sums[detail::kSumChi2];
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
        // Fold the per-column angle sums into the physics block: u = (α·e, β·f, γ).
        for (int c = 0; c < nb; ++c) {
          double v[kNp];
          double wv[kNp];
          for (int q = 0; q < 3; ++q) {
            v[q] = e[q][c];
            wv[q] = saa[c] * e[q][c];
          }
          for (int p = 0; p < 3; ++p) {
            for (int q = p; q < 3; ++q) phys_jtj[p * kNp + q] += wv[p] * v[q];
            phys_jtr[p] += sar[c] * v[p];
          }
          if constexpr (kLaminar) {
            for (int q = 0; q < 3; ++q) {
              v[3 + q] = f[q][c];
              wv[3 + q] = sbb[c] * f[q][c];
            }
            for (int p = 0; p < 3; ++p) {
              for (int q = 0; q < 3; ++q) phys_jtj[p * kNp + 3 + q] += sab[c] * e[p][c] * f[q][c];
              phys_jtj[p * kNp + 6] += sag[c] * e[p][c];
            }
            for (int p = 3; p < 6; ++p) {
              for (int q = p; q < 6; ++q) phys_jtj[p * kNp + q] += wv[p] * v[q];
              phys_jtj[p * kNp + 6] += sbg[c] * v[p];
              phys_jtr[p] += sbr[c] * v[p];
            }
            phys_jtj[6 * kNp + 6] += sgg[c];
            phys_jtr[6] += sgr[c];
          }
        }
      }
    }
  }
}

std::vector<double> ModelKernel::Impl::Reduce(std::span<const double> params, Pass pass) const {
  const Tables tab = MakeTables(params, pass == Pass::kNormal);
  const int n_chunks = static_cast<int>(chunk_begin.size()) - 1;
  const auto psize = static_cast<size_t>(pass == Pass::kNormal ? partial_size() : 1);
  std::vector<double> partials(static_cast<size_t>(std::max(n_chunks, 0)) * psize, 0.0);
  const bool laminar = mode == AnalysisMode::kLaminarFlow;
  pool->ParallelFor(n_chunks, [&](int chunk) {
    double* part = partials.data() + static_cast<size_t>(chunk) * psize;
    if (pass == Pass::kNormal) {
      laminar ? RunChunk<Pass::kNormal, true>(tab, chunk, part, nullptr)
              : RunChunk<Pass::kNormal, false>(tab, chunk, part, nullptr);
    } else {
      laminar ? RunChunk<Pass::kChi2, true>(tab, chunk, part, nullptr)
              : RunChunk<Pass::kChi2, false>(tab, chunk, part, nullptr);
    }
  });
  std::vector<double> total(psize, 0.0);
  for (int chunk = 0; chunk < n_chunks; ++chunk) {
    const double* part = partials.data() + static_cast<size_t>(chunk) * psize;
    for (size_t e = 0; e < psize; ++e) total[e] += part[e];
  }
  return total;
}

ModelKernel::ModelKernel(AnalysisMode mode, const Geometry& geometry, std::vector<double> t,
                         std::vector<double> phi_deg, std::vector<RowTile> tiles,
                         KernelOptions options)
    : impl_(std::make_unique<Impl>()) {
  options.Validate();
  geometry.Validate();
  Impl& im = *impl_;
  im.mode = mode;
  im.geometry = geometry;
  im.t = std::move(t);
  im.phi = std::move(phi_deg);
  im.tiles = std::move(tiles);
  im.options = options;
  im.index = ExpandedIndex(mode, static_cast<int>(im.phi.size()));
  if (im.t.empty()) ThrowBadInput("the model kernel needs a non-empty time grid");
  if (im.phi.empty()) ThrowBadInput("the model kernel needs at least one angle");
  // Time floor exactly as the reference (physics spec §1.2 step 1).
  const double dt_inf = std::abs(im.t[std::min<size_t>(1, im.t.size() - 1)] - im.t[0]);
  const double eps = 0.5 * dt_inf > kTimeFloorMin ? 0.5 * dt_inf : kTimeFloorMin;
  for (double tm : im.t) im.ts.push_back(FloorAt(tm, eps));

  const int n_t = static_cast<int>(im.t.size());
  std::map<std::tuple<int, int, int>, int> group_of;
  for (size_t ti = 0; ti < im.tiles.size(); ++ti) {
    const RowTile& tile = im.tiles[ti];
    if (tile.angle < 0 || tile.angle >= im.index.n_angles || tile.row < 0 || tile.row >= n_t ||
        tile.count < 0 || tile.col_begin < 0 || tile.col_begin + tile.count > n_t ||
        (tile.count > 0 && tile.data == nullptr)) {
      ThrowBadInput(
          fmt::format("row tile {} is invalid (angle {}, row {}, columns {}+{}, "
                      "{} angles, {} times, data {})",
                      ti, tile.angle, tile.row, tile.col_begin, tile.count, im.index.n_angles, n_t,
                      tile.data ? "set" : "missing"));
    }
    im.tile_offset.push_back(im.n_points);
    im.n_points += tile.count;
    if (tile.count == 0) continue;
    const auto key = std::make_tuple(tile.row, tile.col_begin, tile.count);
    auto [it, inserted] = group_of.emplace(key, static_cast<int>(im.groups.size()));
    if (inserted) im.groups.push_back({tile.row, tile.col_begin, tile.count, {}});
    im.groups[static_cast<size_t>(it->second)].tiles.push_back(static_cast<int>(ti));
  }
  // Fixed chunks of whole groups, each ≈ chunk_points points.
  im.chunk_begin.push_back(0);
  std::int64_t in_chunk = 0;
  for (size_t g = 0; g < im.groups.size(); ++g) {
    in_chunk += static_cast<std::int64_t>(im.groups[g].count) *
                static_cast<std::int64_t>(im.groups[g].tiles.size());
    if (in_chunk >= options.chunk_points) {
      im.chunk_begin.push_back(static_cast<int>(g + 1));
      in_chunk = 0;
    }
  }
  if (im.chunk_begin.back() != static_cast<int>(im.groups.size())) {
    im.chunk_begin.push_back(static_cast<int>(im.groups.size()));
  }
  im.pool = std::make_unique<ThreadPool>(options.threads);
}

ModelKernel::~ModelKernel() = default;
ModelKernel::ModelKernel(ModelKernel&&) noexcept = default;
ModelKernel& ModelKernel::operator=(ModelKernel&&) noexcept = default;

AnalysisMode ModelKernel::mode() const { return impl_->mode; }
const ExpandedIndex& ModelKernel::index() const { return impl_->index; }
std::int64_t ModelKernel::num_points() const { return impl_->n_points; }
const std::vector<RowTile>& ModelKernel::tiles() const { return impl_->tiles; }

double ModelKernel::Chi2(std::span<const double> params) const {
  return impl_->Reduce(params, Pass::kChi2)[0];
}

NormalEquations ModelKernel::Accumulate(std::span<const double> params) const {
  const Impl& im = *impl_;
  const auto total = im.Reduce(params, Pass::kNormal);
  const ExpandedIndex& idx = im.index;
  const int np = idx.n_phys;
  NormalEquations ne(idx.size());
  ne.chi2 = total[0];
  const double* phys_jtj = total.data() + 1;
  const double* phys_jtr = phys_jtj + np * np;
  const double* angles = phys_jtr + np;
  auto set = [&](int a, int b, double v) {
    ne.JtJ(a, b) = v;
    ne.JtJ(b, a) = v;
  };
  // J = −u: JᵀWJ = Σ w·u·uᵀ, JᵀWr = −Σ w·u·r.
  for (int p = 0; p < np; ++p) {
    for (int q = p; q < np; ++q) set(idx.phys(p), idx.phys(q), phys_jtj[p * np + q]);
    ne.jtr[static_cast<size_t>(idx.phys(p))] = -phys_jtr[p];
  }
  for (int k = 0; k < idx.n_angles; ++k) {
    const double* ang = angles + static_cast<size_t>(k) * static_cast<size_t>(im.angle_stride());
    set(idx.contrast(k), idx.contrast(k), ang[0]);
    set(idx.contrast(k), idx.offset(k), ang[1]);
    set(idx.offset(k), idx.offset(k), ang[2]);
    ne.jtr[static_cast<size_t>(idx.contrast(k))] = -ang[3];
    ne.jtr[static_cast<size_t>(idx.offset(k))] = -ang[4];
    for (int p = 0; p < np; ++p) {
      set(idx.contrast(k), idx.phys(p), ang[5 + p]);
      set(idx.offset(k), idx.phys(p), ang[5 + np + p]);
    }
  }
  return ne;
}

void ModelKernel::EvaluateModel(std::span<const double> params, std::span<double> out) const {
  const Impl& im = *impl_;
  if (static_cast<std::int64_t>(out.size()) != im.n_points) {
    ThrowBadInput(fmt::format("model output has {} entries, the kernel has {} points", out.size(),
                              im.n_points));
  }
  const Tables tab = im.MakeTables(params, false);
  const bool laminar = im.mode == AnalysisMode::kLaminarFlow;
  const int n_chunks = static_cast<int>(im.chunk_begin.size()) - 1;
  im.pool->ParallelFor(n_chunks, [&](int chunk) {
    laminar ? im.RunChunk<Pass::kModel, true>(tab, chunk, nullptr, out.data())
            : im.RunChunk<Pass::kModel, false>(tab, chunk, nullptr, out.data());
  });
}

}  // namespace homodyne::model
