#include "model/heterodyne_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numbers>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/simd_clones.h"
#include "model/compact_partial.h"
#include "model/fast_sincos.h"
#include "model/heterodyne_block.h"
#include "model/heterodyne_kernel_impl.h"
#include "model/heterodyne_reference.h"
#include "model/thread_pool.h"

namespace homodyne::model {

using namespace het_kernel;  // NOLINT(build/namespaces): the kernel's own internals

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
        RunChunk(tab, c, local.data(), nullptr);
        break;
      case Pass::kGradient:
        RunDerivChunk<Pass::kGradient>(tab, c, local.data());
        break;
      case Pass::kNormal:
        RunDerivChunk<Pass::kNormal>(tab, c, local.data());
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
void HeterodyneKernel::SetLoss(const RobustLoss& loss) {
  loss.Validate();
  impl_->options.loss = loss;
}
const RobustLoss& HeterodyneKernel::loss() const { return impl_->options.loss; }

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
  im.pool->ParallelFor(n_chunks, [&](int c) { im.RunChunk(tab, c, nullptr, out.data()); });
}

std::int64_t HeterodyneKernel::CountSeparable(std::span<const double> params) const {
  const Impl& im = *impl_;
  const Tables tab = im.MakeTables(params, false);
  std::int64_t count = 0;
  for (const Group& grp : im.groups) {
    for (int ti : grp.tiles) {
      const auto k = static_cast<std::size_t>(im.tiles[static_cast<std::size_t>(ti)].angle);
      count += SeparablePhaseEnd(tab, k, grp.row, grp.col_begin, grp.count);
    }
  }
  return count;
}

HeterodyneKernel::DecayCounts HeterodyneKernel::CountSeparableDecay(
    std::span<const double> params) const {
  const Impl& im = *impl_;
  const Tables tab = im.MakeTables(params, false);
  DecayCounts counts;
  for (const Group& grp : im.groups) {
    const auto tiles = static_cast<std::int64_t>(grp.tiles.size());
    for (const Tables::DecayFactors& d : tab.decay) {
      const DecaySegments sg =
          SegmentsOf(d, static_cast<std::size_t>(grp.row), grp.col_begin, grp.count);
      counts.factorised += tiles * (sg.fb - sg.fa);
      counts.clipped += tiles * (grp.col_begin + grp.count - sg.clip);
    }
  }
  return counts;
}

}  // namespace homodyne::model
