#include "homodyne/nlsq/initial_scaling.h"

#include <cmath>

namespace homodyne::nlsq {

std::vector<model::ScalingEstimate> EstimateInitialScaling(const Comm& comm,
                                                           const io::LocalData& local,
                                                           const model::ScalingBounds& bounds) {
  const auto n_angles = static_cast<int>(local.meta.n_angles());
  const std::vector<double>& t = local.meta.t;
  // Local samples per angle, packed as (Δ, c2) pairs.
  std::vector<std::vector<double>> mine(static_cast<std::size_t>(n_angles));
  for (const auto& lt : local.tiles) {
    auto& out = mine[static_cast<std::size_t>(lt.tile.angle)];
    const auto i = static_cast<std::size_t>(lt.tile.row);
    for (std::int64_t c = 0; c < lt.tile.count; ++c) {
      const auto j = static_cast<std::size_t>(lt.tile.col_begin + c);
      const double d = std::abs(t[i] - t[j]);
      const double v = local.values[lt.offset + static_cast<std::size_t>(c)];
      for (int twice = 0; twice < 2; ++twice) {  // (i, j) and (j, i)
        out.push_back(d);
        out.push_back(v);
      }
    }
  }
  if (comm.is_root()) {  // the diagonal of the fit grid, once per angle
    for (int k = 0; k < n_angles; ++k) {
      const auto& diag = local.diagonal[static_cast<std::size_t>(k)];
      for (std::size_t m = 1; m < diag.size(); ++m) {
        mine[static_cast<std::size_t>(k)].push_back(0.0);
        mine[static_cast<std::size_t>(k)].push_back(diag[m]);
      }
    }
  }

  std::vector<double> flat(2 * static_cast<std::size_t>(n_angles), 0.0);
  for (int k = 0; k < n_angles; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const int count = static_cast<int>(mine[kk].size());
    std::vector<int> counts(static_cast<std::size_t>(comm.size()));
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.get());
    std::vector<int> displs;
    int total = 0;
    if (comm.is_root()) {
      for (int c : counts) {
        displs.push_back(total);
        total += c;
      }
    }
    std::vector<double> all(static_cast<std::size_t>(total));
    MPI_Gatherv(mine[kk].data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                MPI_DOUBLE, 0, comm.get());
    mine[kk].clear();
    mine[kk].shrink_to_fit();
    if (comm.is_root()) {
      std::vector<double> dts, c2;
      dts.reserve(all.size() / 2);
      c2.reserve(all.size() / 2);
      for (std::size_t p = 0; p + 1 < all.size(); p += 2) {
        dts.push_back(all[p]);
        c2.push_back(all[p + 1]);
      }
      const model::ScalingEstimate e = model::EstimateScaling(dts, c2, bounds);
      flat[2 * kk] = e.contrast;
      flat[2 * kk + 1] = e.offset;
    }
  }
  MPI_Bcast(flat.data(), static_cast<int>(flat.size()), MPI_DOUBLE, 0, comm.get());
  std::vector<model::ScalingEstimate> out;
  for (int k = 0; k < n_angles; ++k) {
    out.push_back(
        {flat[2 * static_cast<std::size_t>(k)], flat[2 * static_cast<std::size_t>(k) + 1]});
  }
  return out;
}

}  // namespace homodyne::nlsq
