#include "homodyne/nlsq/initial_scaling.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "homodyne/parallel/order_statistics.h"

namespace homodyne::nlsq {
namespace {

// One angle's samples of the full fit-grid matrix on this rank, as weighted sorted runs:
// every fitted pair stands for (i, j) and (j, i) (weight 2); rank 0 adds the diagonal of
// the fit grid (weight 1). Values are selected by their lag |t_i − t_j|.
struct Selection {
  std::vector<double> pairs;     // off-diagonal values, sorted
  std::vector<double> diagonal;  // diagonal values (lag 0), sorted
  std::array<WeightedRun, 2> Runs() const { return {{{pairs, 2}, {diagonal, 1}}}; }
  std::int64_t Count(const Comm& comm) const {
    std::int64_t mine =
        2 * static_cast<std::int64_t>(pairs.size()) + static_cast<std::int64_t>(diagonal.size());
    std::int64_t all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, comm.get());
    return all;
  }
};

template <typename Keep>
Selection Select(const Comm& comm, const io::LocalData& local, int angle, Keep keep) {
  const std::vector<double>& t = local.meta.t;
  Selection s;
  for (const auto& lt : local.tiles) {
    if (lt.tile.angle != angle) continue;
    const auto i = static_cast<std::size_t>(lt.tile.row);
    for (std::int64_t c = 0; c < lt.tile.count; ++c) {
      const double lag = std::abs(t[i] - t[static_cast<std::size_t>(lt.tile.col_begin + c)]);
      if (keep(lag)) s.pairs.push_back(local.values[lt.offset + static_cast<std::size_t>(c)]);
    }
  }
  if (comm.is_root() && keep(0.0)) {
    const auto& diag = local.diagonal[static_cast<std::size_t>(angle)];
    s.diagonal.assign(diag.begin() + 1, diag.end());  // t = 0 excluded
  }
  std::sort(s.pairs.begin(), s.pairs.end());
  std::sort(s.diagonal.begin(), s.diagonal.end());
  return s;
}

// Percentiles of the lags of the fit grid (the same for every angle and every rank
// layout): the rank's rows of angle 0, both orders, plus the diagonal on rank 0.
double LagPercentile(const Comm& comm, const io::LocalData& local, double p) {
  const std::vector<double>& t = local.meta.t;
  std::vector<double> lags;
  for (const auto& lt : local.tiles) {
    if (lt.tile.angle != 0) continue;
    const auto i = static_cast<std::size_t>(lt.tile.row);
    for (std::int64_t c = 0; c < lt.tile.count; ++c) {
      lags.push_back(std::abs(t[i] - t[static_cast<std::size_t>(lt.tile.col_begin + c)]));
    }
  }
  std::sort(lags.begin(), lags.end());
  const std::vector<double> zeros(comm.is_root() ? t.size() - 1 : 0, 0.0);
  const std::array<WeightedRun, 2> runs{{{lags, 2}, {zeros, 1}}};
  return DistributedPercentile(comm, runs, p);
}

}  // namespace

std::vector<model::ScalingEstimate> EstimateInitialScaling(const Comm& comm,
                                                           const io::LocalData& local,
                                                           const model::ScalingBounds& bounds) {
  const int n_angles = static_cast<int>(local.meta.n_angles());
  std::vector<model::ScalingEstimate> out;
  if (n_angles == 0) return out;
  // The rules of model::EstimateScaling on the distributed multiset (data are validated
  // finite at load, so no sample is dropped).
  const double hi = LagPercentile(comm, local, 80.0);
  const double lo = LagPercentile(comm, local, 20.0);
  for (int k = 0; k < n_angles; ++k) {
    model::ScalingEstimate e;
    const Selection all = Select(comm, local, k, [](double) { return true; });
    if (all.Count(comm) < 100) {
      e.contrast = 0.5 * (bounds.contrast_lower + bounds.contrast_upper);
      e.offset = 0.5 * (bounds.offset_lower + bounds.offset_upper);
      out.push_back(e);
      continue;
    }
    double offset = 0.0;
    {
      const Selection far = Select(comm, local, k, [&](double lag) { return lag >= hi; });
      const auto runs = far.Count(comm) >= 10 ? far.Runs() : all.Runs();
      offset = DistributedPercentile(comm, runs, 10.0);
    }
    e.offset = std::clamp(offset, bounds.offset_lower, bounds.offset_upper);
    const Selection near = Select(comm, local, k, [&](double lag) { return lag <= lo; });
    const auto runs = near.Count(comm) >= 10 ? near.Runs() : all.Runs();
    const double ceiling = DistributedPercentile(comm, runs, 90.0);
    e.contrast = std::clamp(ceiling - e.offset, bounds.contrast_lower, bounds.contrast_upper);
    out.push_back(e);
  }
  return out;
}

}  // namespace homodyne::nlsq
