#include "model/kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernel_impl.h"
#include "model/compact_partial.h"
#include "model/fast_sincos.h"
#include "separable.h"

namespace homodyne::model {
namespace {

using kernel_internal::Pass;
using kernel_internal::Tables;

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
  loss.Validate();
}

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
    if (options.separable && !options.exact_transcendentals) {
      // Per-(angle, time) sin/cos of a_k·C_Γ[m] for the separable shear path (O(n_φ·n_t)).
      const size_t n_t = ts.size();
      tab.shear_sin.resize(phi.size() * n_t);
      tab.shear_cos.resize(phi.size() * n_t);
      std::vector<double> phase(n_t);
      for (size_t k = 0; k < phi.size(); ++k) {
        for (size_t m = 0; m < n_t; ++m) phase[m] = tab.shear_a[k] * tab.cg[m];
        FastSinCos(phase.data(), tab.shear_sin.data() + k * n_t, tab.shear_cos.data() + k * n_t,
                   static_cast<int>(n_t));
      }
    }
  }
  tab.contrast = params.data() + index.contrast(0);
  tab.offset = params.data() + index.offset(0);
  tab.wq = geometry.DiffusionPrefactor();
  if (options.separable && !options.exact_transcendentals) {
    const size_t n_t = ts.size();
    tab.diff_pivot.resize(n_t);
    for (size_t m = 0; m < n_t; ++m) {
      const size_t pivot = m - m % static_cast<size_t>(detail::kDiffusionPivotSpan);
      tab.diff_pivot[m] = std::exp(-tab.wq * (tab.cd[m] - tab.cd[pivot]));
    }
    for (int k = 0; k < index.n_angles; ++k) {
      tab.contrast_scale = std::max(tab.contrast_scale, std::abs(tab.contrast[k]));
    }
  }
  return tab;
}

std::vector<double> ModelKernel::Impl::Reduce(std::span<const double> params, Pass pass) const {
  const int n_chunks = static_cast<int>(chunk_begin.size()) - 1;
  const auto psize = static_cast<size_t>(partial_size(pass));
  std::vector<double> partials(static_cast<size_t>(std::max(n_chunks, 0)) * psize, 0.0);
  Partials(params, pass, partials.data());
  std::vector<double> total(psize, 0.0);
  for (int chunk = 0; chunk < n_chunks; ++chunk) {
    const double* part = partials.data() + static_cast<size_t>(chunk) * psize;
    for (size_t e = 0; e < psize; ++e) total[e] += part[e];
  }
  return total;
}

bool ModelKernel::Impl::Partials(std::span<const double> params, Pass pass, double* partials,
                                 const std::function<bool()>& stop) const {
  const Tables tab = MakeTables(params, pass == Pass::kNormal || pass == Pass::kGradient);
  const int n_chunks = static_cast<int>(chunk_begin.size()) - 1;
  const auto psize = static_cast<size_t>(partial_size(pass));
  const bool laminar = mode == AnalysisMode::kLaminarFlow;
  std::atomic<bool> stopped{false};
  pool->ParallelFor(n_chunks, [&](int chunk) {
    if (stop && (stopped.load(std::memory_order_relaxed) || stop())) {
      stopped.store(true, std::memory_order_relaxed);
      return;
    }
    // Zeroed by the thread that accumulates into it (its cache, its core).
    double* part = partials + static_cast<size_t>(chunk) * psize;
    std::fill(part, part + psize, 0.0);
    if (pass == Pass::kNormal) {
      laminar ? RunChunk<Pass::kNormal, true>(tab, chunk, part, nullptr)
              : RunChunk<Pass::kNormal, false>(tab, chunk, part, nullptr);
    } else if (pass == Pass::kGradient) {
      laminar ? RunChunk<Pass::kGradient, true>(tab, chunk, part, nullptr)
              : RunChunk<Pass::kGradient, false>(tab, chunk, part, nullptr);
    } else {
      laminar ? RunChunk<Pass::kChi2, true>(tab, chunk, part, nullptr)
              : RunChunk<Pass::kChi2, false>(tab, chunk, part, nullptr);
    }
    if (weight_scale != 1.0) {
      for (size_t e = 0; e < psize; ++e) part[e] *= weight_scale;
    }
  });
  return !stopped.load();
}

ModelKernel::ModelKernel(AnalysisMode mode, const Geometry& geometry, std::vector<double> t,
                         std::vector<double> phi_deg, std::vector<RowTile> tiles,
                         KernelOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (mode == AnalysisMode::kTwoComponent) {
    ThrowInternal("the homodyne kernel has no two_component mode (MakePassKernel chooses)");
  }
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
  // Explicit chunks: the chunk of every tile (groups never span two chunks).
  const auto& starts = options.chunk_tile_starts;
  if (!starts.empty()) {
    if (starts.front() != 0 || !std::is_sorted(starts.begin(), starts.end()) ||
        starts.back() > static_cast<int>(im.tiles.size())) {
      ThrowBadInput("chunk_tile_starts must start at 0, increase, and stay within the tiles");
    }
  }
  std::vector<int> chunk_of(im.tiles.size(), 0);
  for (size_t c = 0; c < starts.size(); ++c) {
    const int end = c + 1 < starts.size() ? starts[c + 1] : static_cast<int>(im.tiles.size());
    for (int ti = starts[c]; ti < end; ++ti)
      chunk_of[static_cast<size_t>(ti)] = static_cast<int>(c);
  }
  std::map<std::tuple<int, int, int, int>, int> group_of;
  std::vector<int> group_chunk;
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
    const auto key = std::make_tuple(chunk_of[ti], tile.row, tile.col_begin, tile.count);
    auto [it, inserted] = group_of.emplace(key, static_cast<int>(im.groups.size()));
    if (inserted) {
      im.groups.push_back({tile.row, tile.col_begin, tile.count, {}});
      group_chunk.push_back(chunk_of[ti]);
    }
    im.groups[static_cast<size_t>(it->second)].tiles.push_back(static_cast<int>(ti));
  }
  for (auto& group : im.groups) {
    group.first = im.group_tiles.size();
    for (int ti : group.tiles) im.group_tiles.push_back(im.tiles[static_cast<size_t>(ti)]);
  }
  // The common uniform weight, if a power of two (see Impl::weight_scale).
  double common = 0.0;
  bool one_weight = true;
  for (const RowTile& tile : im.tiles) {
    if (tile.count == 0 || tile.weight != nullptr) continue;
    if (common == 0.0) common = tile.uniform_weight;
    one_weight = one_weight && tile.uniform_weight == common;
  }
  int exponent = 0;
  if (one_weight && std::isfinite(common) && common > 0.0 && std::frexp(common, &exponent) == 0.5) {
    im.weight_scale = common;
  }
  im.chunk_begin.push_back(0);
  if (!starts.empty()) {
    // One chunk per explicit range (possibly empty); groups of a chunk are contiguous.
    size_t g = 0;
    for (size_t c = 0; c < starts.size(); ++c) {
      while (g < im.groups.size() && group_chunk[g] == static_cast<int>(c)) ++g;
      im.chunk_begin.push_back(static_cast<int>(g));
    }
  }
  // Fixed chunks of whole groups, each ≈ chunk_points points.
  std::int64_t in_chunk = 0;
  for (size_t g = 0; starts.empty() && g < im.groups.size(); ++g) {
    in_chunk += static_cast<std::int64_t>(im.groups[g].count) *
                static_cast<std::int64_t>(im.groups[g].tiles.size());
    if (in_chunk >= options.chunk_points) {
      im.chunk_begin.push_back(static_cast<int>(g + 1));
      in_chunk = 0;
    }
  }
  if (starts.empty() && im.chunk_begin.back() != static_cast<int>(im.groups.size())) {
    im.chunk_begin.push_back(static_cast<int>(im.groups.size()));
  }
  im.pool = std::make_unique<ThreadPool>(options.threads, options.worker_start);
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
  return FromPartial(impl_->Reduce(params, Pass::kNormal));
}

double ModelKernel::Gradient(std::span<const double> params, std::span<double> jtr) const {
  const Impl& im = *impl_;
  const ExpandedIndex& idx = im.index;
  if (static_cast<int>(jtr.size()) != idx.size()) {
    ThrowBadInput(fmt::format("the gradient needs {} entries, found {}", idx.size(), jtr.size()));
  }
  return GradientFromCompact(idx, im.Reduce(params, Pass::kGradient), jtr);
}

void ModelKernel::OnEachThread(const std::function<void(int)>& fn) const {
  impl_->pool->OnEachThread(fn);
}

void ModelKernel::SetLoss(const RobustLoss& loss) {
  loss.Validate();
  impl_->options.loss = loss;
}
const RobustLoss& ModelKernel::loss() const { return impl_->options.loss; }

int ModelKernel::num_chunks() const { return static_cast<int>(impl_->chunk_begin.size()) - 1; }

std::size_t ModelKernel::partial_size(bool with_derivatives) const {
  return with_derivatives ? static_cast<std::size_t>(impl_->partial_size()) : 1;
}

bool ModelKernel::ChunkPartials(std::span<const double> params, bool with_derivatives,
                                std::span<double> out, const std::function<bool()>& stop) const {
  if (out.size() != static_cast<std::size_t>(num_chunks()) * partial_size(with_derivatives)) {
    ThrowBadInput(fmt::format(
        "chunk partials need {} entries, found {}",
        static_cast<std::size_t>(num_chunks()) * partial_size(with_derivatives), out.size()));
  }
  return impl_->Partials(params, with_derivatives ? Pass::kNormal : Pass::kChi2, out.data(), stop);
}

NormalEquations ModelKernel::FromPartial(std::span<const double> total) const {
  return NormalEquationsFromCompact(impl_->index, total);
}

SeparableCounts ModelKernel::CountSeparable(std::span<const double> params) const {
  const Impl& im = *impl_;
  const Tables tab = im.MakeTables(params, false);
  const int n_chunks = static_cast<int>(im.chunk_begin.size()) - 1;
  std::vector<double> out(static_cast<size_t>(im.n_points));
  std::vector<SeparableCounts> counts(static_cast<size_t>(std::max(n_chunks, 0)));
  const bool laminar = im.mode == AnalysisMode::kLaminarFlow;
  im.pool->ParallelFor(n_chunks, [&](int chunk) {
    SeparableCounts* mine = &counts[static_cast<size_t>(chunk)];
    laminar ? im.RunChunk<Pass::kModel, true>(tab, chunk, nullptr, out.data(), mine)
            : im.RunChunk<Pass::kModel, false>(tab, chunk, nullptr, out.data(), mine);
  });
  SeparableCounts total;
  total.points = im.n_points;
  for (const auto& c : counts) {
    total.shear += c.shear;
    total.diffusion += c.diffusion;
  }
  return total;
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
