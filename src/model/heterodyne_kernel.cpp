#include "model/heterodyne_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "model/compact_partial.h"
#include "model/fast_sincos.h"
#include "model/heterodyne_reference.h"
#include "model/thread_pool.h"

namespace homodyne::model {
namespace {

namespace het = heterodyne::het;
constexpr int kNp = heterodyne::kNumPhysical;
using heterodyne::kExpClip;
using heterodyne::kNormFloor;
using heterodyne::kSmoothAbs;
constexpr double kDegToRad = std::numbers::pi / 180.0;

enum class Pass { kChi2, kGradient, kNormal };

// Per-pass tables: the per-time ones (heterodyne::TimeTables) and the per-angle ones.
struct Tables : heterodyne::TimeTables {
  std::vector<double> a;   // per angle: q·cos((φ_k + phi0_het)·π/180)
  std::vector<double> da;  // per angle: d a / d phi0_het = −q·sin(·)·π/180
  std::vector<double> contrast, offset;
  double q2 = 0.0;
};

struct Group {
  int row = 0, col_begin = 0, count = 0;
  std::vector<int> tiles;  // tile indices (all angles on these columns)
};

}  // namespace

struct HeterodyneKernel::Impl {
  HeterodyneGrid grid;
  std::vector<RowTile> tiles;
  KernelOptions options;
  ExpandedIndex index;
  std::int64_t n_points = 0;
  std::vector<std::int64_t> tile_offset;
  std::vector<Group> groups;
  std::vector<int> chunk_begin;  // group index where each chunk starts (+ the end)
  std::unique_ptr<ThreadPool> pool;

  std::size_t PartialSize(Pass pass) const {
    return pass == Pass::kNormal     ? CompactNormalSize(index)
           : pass == Pass::kGradient ? CompactGradientSize(index)
                                     : 1;
  }

  Tables MakeTables(std::span<const double> params, bool derivatives) const;
  // Adds chunk `c`'s points into `part` (zeroed); with `model`, writes c2 instead.
  template <Pass P>
  void RunChunk(const Tables& tab, int c, double* part, double* model) const;
  bool Partials(std::span<const double> params, Pass pass, double* out,
                const std::function<bool()>& stop) const;
  std::vector<double> Reduce(std::span<const double> params, Pass pass) const;
  void CheckParams(std::span<const double> params) const {
    if (static_cast<int>(params.size()) != index.size()) {
      ThrowBadInput(fmt::format("the two-component kernel needs {} parameters, found {}",
                                index.size(), params.size()));
    }
  }
};

Tables HeterodyneKernel::Impl::MakeTables(std::span<const double> params, bool derivatives) const {
  CheckParams(params);
  Tables tab;
  const int na = index.n_angles;
  const std::span<const double> p = params.subspan(static_cast<std::size_t>(2 * na));
  tab.contrast.assign(params.begin(), params.begin() + na);
  tab.offset.assign(params.begin() + na, params.begin() + 2 * na);
  tab.q2 = grid.q * grid.q;
  for (int k = 0; k < na; ++k) {
    const double angle = (grid.phi_deg[static_cast<std::size_t>(k)] + p[het::kPhi0Het]) * kDegToRad;
    tab.a.push_back(grid.q * std::cos(angle));
    tab.da.push_back(-grid.q * std::sin(angle) * kDegToRad);
  }
  static_cast<heterodyne::TimeTables&>(tab) =
      heterodyne::BuildTimeTables(grid.t, grid.dt, p, derivatives);
  return tab;
}

// The angle-independent quantities of one row's columns (a group), shared by its angles.
struct ColumnTerms {
  std::vector<double> hr, hs, rr, ss, m2, norm, v;
  std::vector<double> dhr, dhs;                     // dh/dδ (0 where the clip is active)
  std::vector<double> floored;                      // 1 where the normalisation floor holds
  std::vector<double> theta, sin_theta, cos_theta;  // per angle, refilled
  std::vector<double> c2, r;                        // per angle: model and residual
  void Resize(int n) {
    for (auto* a : {&hr, &hs, &rr, &ss, &m2, &norm, &v, &dhr, &dhs, &floored, &theta, &sin_theta,
                    &cos_theta, &c2, &r}) {
      a->resize(static_cast<std::size_t>(n));
    }
  }
};

template <Pass P>
void HeterodyneKernel::Impl::RunChunk(const Tables& tab, int c, double* part, double* model) const {
  constexpr bool kDerivs = P != Pass::kChi2;
  const double inv_sigma = 1.0 / options.sigma;
  const double half_q2 = -0.5 * tab.q2;
  const bool exact = options.exact_transcendentals;
  thread_local ColumnTerms ct;
  double u[kNp];
  for (int gidx = chunk_begin[static_cast<std::size_t>(c)];
       gidx < chunk_begin[static_cast<std::size_t>(c) + 1]; ++gidx) {
    const Group& grp = groups[static_cast<std::size_t>(gidx)];
    const auto i = static_cast<std::size_t>(grp.row);
    const double bi = tab.fs[i], ai = 1.0 - bi;
    const int n = grp.count;
    ct.Resize(n);
    // Angle-independent part of each column, with the reference's expressions.
    for (int col = 0; col < n; ++col) {
      const auto j = static_cast<std::size_t>(grp.col_begin + col);
      const auto e = static_cast<std::size_t>(col);
      const double dr = tab.p[0][j] - tab.p[0][i];
      const double ds = tab.p[1][j] - tab.p[1][i];
      const double ir = std::sqrt(dr * dr + kSmoothAbs);
      const double is = std::sqrt(ds * ds + kSmoothAbs);
      const double er = half_q2 * ir, es = half_q2 * is;
      const double hr = std::exp(std::clamp(er, -kExpClip, 0.0));
      const double hs = std::exp(std::clamp(es, -kExpClip, 0.0));
      const double bj = tab.fs[j], aj = 1.0 - bj;
      double norm = (bi * bi + ai * ai) * (bj * bj + aj * aj);
      const bool floored = !(norm > kNormFloor);
      ct.hr[e] = hr;
      ct.hs[e] = hs;
      ct.rr[e] = (ai * aj) * (ai * aj) * (hr * hr);
      ct.ss[e] = (bi * bj) * (bi * bj) * (hs * hs);
      ct.m2[e] = 2.0 * ((ai * bi) * (aj * bj));
      ct.norm[e] = floored ? kNormFloor : norm;
      ct.v[e] = tab.p[2][j] - tab.p[2][i];
      if constexpr (kDerivs) {
        ct.dhr[e] = (er > -kExpClip && er < 0.0) ? hr * half_q2 * dr / ir : 0.0;
        ct.dhs[e] = (es > -kExpClip && es < 0.0) ? hs * half_q2 * ds / is : 0.0;
        ct.floored[e] = floored ? 1.0 : 0.0;
      }
    }
    for (int ti : grp.tiles) {
      const RowTile& tile = tiles[static_cast<std::size_t>(ti)];
      const auto k = static_cast<std::size_t>(tile.angle);
      const double a = tab.a[k];
      for (int col = 0; col < n; ++col) {
        ct.theta[static_cast<std::size_t>(col)] = a * ct.v[static_cast<std::size_t>(col)];
      }
      // The phase's cosine (and sine): array sine/cosine within ~2 ulp, or libm's, whose
      // bits are the reference model's (KernelOptions::exact_transcendentals).
      if (exact) {
        for (int col = 0; col < n; ++col) {
          const auto e = static_cast<std::size_t>(col);
          ct.cos_theta[e] = std::cos(ct.theta[e]);
          if constexpr (kDerivs) ct.sin_theta[e] = std::sin(ct.theta[e]);
        }
      } else {
        FastSinCos(ct.theta.data(), ct.sin_theta.data(), ct.cos_theta.data(), n);
      }
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
      // fixed lanes: vectorisable, and the same order for every pass and thread count.
      double* r = ct.r.data();
      double* term = ct.theta.data();  // the phases are no longer needed
      const double* data = tile.data;
      if (tile.weight != nullptr) {
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
      if constexpr (!kDerivs) continue;
      for (int col = 0; col < n; ++col) {
        const auto e = static_cast<std::size_t>(col);
        const double w = tile.weight != nullptr ? tile.weight[col] : tile.uniform_weight;
        if (w == 0.0) continue;
        const double hr = ct.hr[e], hs = ct.hs[e], m2 = ct.m2[e], norm = ct.norm[e];
        const double cth = ct.cos_theta[e];
        const double sum = ct.rr[e] + ct.ss[e] + m2 * hr * hs * cth;
        const auto j = static_cast<std::size_t>(grp.col_begin + col);
        const double bj = tab.fs[j], aj = 1.0 - bj;
        // du = (dc2/dθ)/σ for the 14 physical parameters.
        const double g = sum / norm;
        const double sth = ct.sin_theta[e];
        const double v = ct.v[e];
        const double dsum_dhr = 2.0 * (ai * aj) * (ai * aj) * hr + m2 * hs * cth;
        const double dsum_dhs = 2.0 * (bi * bj) * (bi * bj) * hs + m2 * hr * cth;
        const double dg_dtheta = -(m2 * hr * hs) * sth / norm;
        const double scale = contrast * inv_sigma;
        const double cr = scale * dsum_dhr / norm * ct.dhr[e];
        const double cs = scale * dsum_dhs / norm * ct.dhs[e];
        const double cv = scale * dg_dtheta * a;
        for (int d = 0; d < 3; ++d) {
          u[het::kD0Ref + d] = cr * (tab.dp[0][d][j] - tab.dp[0][d][i]);
          u[het::kD0Sample + d] = cs * (tab.dp[1][d][j] - tab.dp[1][d][i]);
          u[het::kV0 + d] = cv * (tab.dp[2][d][j] - tab.dp[2][d][i]);
        }
        u[het::kPhi0Het] = scale * dg_dtheta * tab.da[k] * v;
        const double hh = hr * hs * cth;
        const bool floored = ct.floored[e] != 0.0;
        const double dni = floored ? 0.0 : 2.0 * (bi - ai) * (bj * bj + aj * aj);
        const double dnj = floored ? 0.0 : 2.0 * (bj - aj) * (bi * bi + ai * ai);
        const double dsi = -2.0 * ai * (aj * aj) * (hr * hr) + 2.0 * bi * (bj * bj) * (hs * hs) +
                           2.0 * (aj * bj) * hh * (ai - bi);
        const double dsj = -2.0 * aj * (ai * ai) * (hr * hr) + 2.0 * bj * (bi * bi) * (hs * hs) +
                           2.0 * (ai * bi) * hh * (aj - bj);
        const double gi = scale * (dsi - g * dni) / norm;
        const double gj = scale * (dsj - g * dnj) / norm;
        for (int d = 0; d < 4; ++d) u[het::kF0 + d] = gi * tab.dfs[d][i] + gj * tab.dfs[d][j];
        const double uc = g * inv_sigma, uo = inv_sigma;
        const double wr = w * r[col];
        double* phys_jtr = part + 1 + (P == Pass::kNormal ? kNp * kNp : 0);
        for (int p = 0; p < kNp; ++p) phys_jtr[p] += wr * u[p];
        if constexpr (P == Pass::kGradient) {
          double* ang = part + 1 + kNp + 2 * static_cast<std::ptrdiff_t>(k);
          ang[0] += wr * uc;
          ang[1] += wr * uo;
        } else {
          double* jtj = part + 1;
          for (int p = 0; p < kNp; ++p) {
            const double wu = w * u[p];
            for (int q = p; q < kNp; ++q) jtj[p * kNp + q] += wu * u[q];
          }
          double* ang = part + 1 + kNp * kNp + kNp + static_cast<std::ptrdiff_t>(k) * (5 + 2 * kNp);
          ang[0] += w * uc * uc;
          ang[1] += w * uc * uo;
          ang[2] += w * uo * uo;
          ang[3] += wr * uc;
          ang[4] += wr * uo;
          for (int p = 0; p < kNp; ++p) {
            ang[5 + p] += w * uc * u[p];
            ang[5 + kNp + p] += w * uo * u[p];
          }
        }
      }
    }
  }
}

bool HeterodyneKernel::Impl::Partials(std::span<const double> params, Pass pass, double* out,
                                      const std::function<bool()>& stop) const {
  const Tables tab = MakeTables(params, pass != Pass::kChi2);
  const int n_chunks = static_cast<int>(chunk_begin.size()) - 1;
  const std::size_t psize = PartialSize(pass);
  std::atomic<bool> stopped{false};
  pool->ParallelFor(n_chunks, [&](int c) {
    if (stop && (stopped.load(std::memory_order_relaxed) || stop())) {
      stopped.store(true, std::memory_order_relaxed);
      return;
    }
    // Summed in the thread's own buffer: neighbouring chunks' partials share cache lines
    // (the χ² pass's are one double each), and writing them point by point from two
    // threads made two threads slower than one.
    thread_local std::vector<double> local;
    local.assign(psize, 0.0);
    switch (pass) {
      case Pass::kChi2:
        RunChunk<Pass::kChi2>(tab, c, local.data(), nullptr);
        break;
      case Pass::kGradient:
        RunChunk<Pass::kGradient>(tab, c, local.data(), nullptr);
        break;
      case Pass::kNormal:
        RunChunk<Pass::kNormal>(tab, c, local.data(), nullptr);
        break;
    }
    std::copy(local.begin(), local.end(), out + static_cast<std::size_t>(c) * psize);
  });
  return !stopped.load();
}

std::vector<double> HeterodyneKernel::Impl::Reduce(std::span<const double> params,
                                                   Pass pass) const {
  const std::size_t psize = PartialSize(pass);
  const auto n_chunks = static_cast<std::size_t>(chunk_begin.size() - 1);
  std::vector<double> partials(n_chunks * psize);
  Partials(params, pass, partials.data(), {});
  std::vector<double> total(psize, 0.0);
  for (std::size_t c = 0; c < n_chunks; ++c) {
    for (std::size_t e = 0; e < psize; ++e) total[e] += partials[c * psize + e];
  }
  return total;
}

HeterodyneKernel::HeterodyneKernel(HeterodyneGrid grid, std::vector<RowTile> tiles,
                                   KernelOptions options)
    : impl_(std::make_unique<Impl>()) {
  options.Validate();
  Impl& im = *impl_;
  if (grid.t.empty()) ThrowBadInput("the two-component kernel needs a non-empty time grid");
  if (grid.phi_deg.empty()) ThrowBadInput("the two-component kernel needs at least one angle");
  if (!(grid.dt > 0.0) || !std::isfinite(grid.dt)) {
    ThrowBadInput(fmt::format("dt must be a finite number > 0, found {}", grid.dt));
  }
  im.grid = std::move(grid);
  im.tiles = std::move(tiles);
  im.options = options;
  im.index.n_angles = static_cast<int>(im.grid.phi_deg.size());
  im.index.n_phys = kNp;
  const int n_t = static_cast<int>(im.grid.t.size());
  const auto& starts = options.chunk_tile_starts;
  if (!starts.empty() && (starts.front() != 0 || !std::is_sorted(starts.begin(), starts.end()) ||
                          starts.back() > static_cast<int>(im.tiles.size()))) {
    ThrowBadInput("chunk_tile_starts must start at 0, increase, and stay within the tiles");
  }
  std::vector<int> chunk_of(im.tiles.size(), 0);
  for (std::size_t c = 0; c < starts.size(); ++c) {
    const int end = c + 1 < starts.size() ? starts[c + 1] : static_cast<int>(im.tiles.size());
    for (int ti = starts[c]; ti < end; ++ti)
      chunk_of[static_cast<std::size_t>(ti)] = static_cast<int>(c);
  }
  std::map<std::tuple<int, int, int, int>, int> group_of;
  std::vector<int> group_chunk;
  for (std::size_t ti = 0; ti < im.tiles.size(); ++ti) {
    const RowTile& tile = im.tiles[ti];
    if (tile.angle < 0 || tile.angle >= im.index.n_angles || tile.row < 0 || tile.row >= n_t ||
        tile.count < 0 || tile.col_begin < 0 || tile.col_begin + tile.count > n_t ||
        (tile.count > 0 && tile.data == nullptr)) {
      ThrowBadInput(fmt::format(
          "row tile {} is invalid (angle {}, row {}, columns {}+{}, {} angles, {} times, data {})",
          ti, tile.angle, tile.row, tile.col_begin, tile.count, im.index.n_angles, n_t,
          tile.data != nullptr ? "set" : "missing"));
    }
    im.tile_offset.push_back(im.n_points);
    im.n_points += tile.count;
    if (tile.count == 0) continue;
    const auto key = std::make_tuple(chunk_of[ti], tile.row, tile.col_begin, tile.count);
    auto [it, inserted] = group_of.emplace(key, static_cast<int>(im.groups.size()));
    if (inserted) {
      im.groups.push_back({tile.row, tile.col_begin, tile.count, {}});
      group_chunk.push_back(chunk_of[ti]);
    }
    im.groups[static_cast<std::size_t>(it->second)].tiles.push_back(static_cast<int>(ti));
  }
  im.chunk_begin.push_back(0);
  if (!starts.empty()) {
    std::size_t g = 0;
    for (std::size_t c = 0; c < starts.size(); ++c) {
      while (g < im.groups.size() && group_chunk[g] == static_cast<int>(c)) ++g;
      im.chunk_begin.push_back(static_cast<int>(g));
    }
  } else {
    std::int64_t in_chunk = 0;
    for (std::size_t g = 0; g < im.groups.size(); ++g) {
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
  }
  im.pool = std::make_unique<ThreadPool>(options.threads, options.worker_start);
}

HeterodyneKernel::~HeterodyneKernel() = default;

const ExpandedIndex& HeterodyneKernel::index() const { return impl_->index; }
std::int64_t HeterodyneKernel::num_points() const { return impl_->n_points; }
int HeterodyneKernel::num_chunks() const { return static_cast<int>(impl_->chunk_begin.size()) - 1; }

std::size_t HeterodyneKernel::partial_size(bool with_derivatives) const {
  return impl_->PartialSize(with_derivatives ? Pass::kNormal : Pass::kChi2);
}

bool HeterodyneKernel::ChunkPartials(std::span<const double> params, bool with_derivatives,
                                     std::span<double> out,
                                     const std::function<bool()>& stop) const {
  const std::size_t need = static_cast<std::size_t>(num_chunks()) * partial_size(with_derivatives);
  if (out.size() != need) {
    ThrowBadInput(fmt::format("chunk partials need {} entries, found {}", need, out.size()));
  }
  return impl_->Partials(params, with_derivatives ? Pass::kNormal : Pass::kChi2, out.data(), stop);
}

double HeterodyneKernel::Chi2(std::span<const double> params) const {
  return impl_->Reduce(params, Pass::kChi2)[0];
}

NormalEquations HeterodyneKernel::Accumulate(std::span<const double> params) const {
  return FromPartial(impl_->Reduce(params, Pass::kNormal));
}

double HeterodyneKernel::Gradient(std::span<const double> params, std::span<double> jtr) const {
  const ExpandedIndex& idx = impl_->index;
  if (static_cast<int>(jtr.size()) != idx.size()) {
    ThrowBadInput(fmt::format("the gradient needs {} entries, found {}", idx.size(), jtr.size()));
  }
  return GradientFromCompact(idx, impl_->Reduce(params, Pass::kGradient), jtr);
}

NormalEquations HeterodyneKernel::FromPartial(std::span<const double> total) const {
  return NormalEquationsFromCompact(impl_->index, total);
}

void HeterodyneKernel::EvaluateModel(std::span<const double> params, std::span<double> out) const {
  const Impl& im = *impl_;
  if (static_cast<std::int64_t>(out.size()) != im.n_points) {
    ThrowBadInput(fmt::format("the model needs {} entries, found {}", im.n_points, out.size()));
  }
  if (im.tiles.empty()) return;
  const Tables tab = im.MakeTables(params, false);
  const int n_chunks = num_chunks();
  im.pool->ParallelFor(n_chunks,
                       [&](int c) { im.RunChunk<Pass::kChi2>(tab, c, nullptr, out.data()); });
}

}  // namespace homodyne::model
