// A random two-component fit problem for the kernel tests: parameters in the registry
// bounds, noisy data from the reference model at other parameters, row tiles of every angle
// (rows > 0, two tiles per row, one with per-point weights, some of them 0).
#pragma once

#include <cstdint>
#include <list>
#include <random>
#include <vector>

#include "model/heterodyne_kernel.h"
#include "model/heterodyne_reference.h"

namespace homodyne::model::testing {

// Move-only: the tiles point into data and weights.
struct HeterodyneProblem {
  HeterodyneProblem() = default;
  HeterodyneProblem(HeterodyneProblem&&) = default;
  HeterodyneProblem(const HeterodyneProblem&) = delete;
  HeterodyneProblem& operator=(const HeterodyneProblem&) = delete;

  HeterodyneGrid grid;
  std::vector<std::vector<double>> data;  // per angle, row-major n×n
  std::vector<RowTile> tiles;
  std::vector<double> x;                   // expanded parameters
  std::list<std::vector<double>> weights;  // per-point weights of some tiles (stable addresses)
};

// Random parameters in the registry bounds and noisy data from the model at other
// parameters; tiles: every upper-triangle row of every angle, rows > 0 (frame 0 masked, as
// the fit does), split in two tiles per row, one with per-point weights.
inline HeterodyneProblem MakeHeterodyneProblem(std::uint64_t seed, int n, int n_angles) {
  std::mt19937_64 rng(seed);
  auto u = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  HeterodyneProblem pb;
  pb.grid.dt = u(0.01, 0.2);
  for (int m = 0; m < n; ++m) pb.grid.t.push_back((m + 1) * pb.grid.dt);
  pb.grid.q = u(0.003, 0.02);
  for (int k = 0; k < n_angles; ++k) pb.grid.phi_deg.push_back(u(-180, 180));
  auto params = [&] {
    std::vector<double> x;
    for (int k = 0; k < n_angles; ++k) x.push_back(u(0.1, 0.8));
    for (int k = 0; k < n_angles; ++k) x.push_back(u(0.9, 1.1));
    const std::vector<double> phys = {u(1e3, 5e4),  u(-1.5, 1.5), u(-50, 100), u(1e3, 5e4),
                                      u(-1.5, 1.5), u(-50, 100),  u(10, 500),  u(0, 2),
                                      u(-20, 20),   u(0.1, 0.8),  u(-1, 1),    u(-1, 1),
                                      u(-0.2, 0.2), u(-10, 10)};
    x.insert(x.end(), phys.begin(), phys.end());
    return x;
  };
  const std::vector<double> truth = params();
  pb.x = params();
  heterodyne::HeterodyneInput in;
  in.t = pb.grid.t;
  in.dt = pb.grid.dt;
  in.q = pb.grid.q;
  in.phi_deg = pb.grid.phi_deg;
  in.contrast.assign(truth.begin(), truth.begin() + n_angles);
  in.offset.assign(truth.begin() + n_angles, truth.begin() + 2 * n_angles);
  in.physical.assign(truth.begin() + 2 * n_angles, truth.end());
  const auto ev = heterodyne::Evaluate(in);
  std::normal_distribution<double> noise(0.0, 0.01);
  for (int k = 0; k < n_angles; ++k) {
    auto& d = pb.data.emplace_back(ev.c2[static_cast<std::size_t>(k)]);
    for (double& v : d) v += noise(rng);
  }
  for (int i = 1; i < n - 1; ++i) {
    for (int k = 0; k < n_angles; ++k) {
      const double* row = pb.data[static_cast<std::size_t>(k)].data() + i * n;
      const int mid = i + 1 + (n - i - 1) / 2;
      RowTile a;
      a.angle = k;
      a.row = i;
      a.col_begin = i + 1;
      a.count = mid - (i + 1);
      a.data = row + a.col_begin;
      RowTile b = a;
      b.col_begin = mid;
      b.count = n - mid;
      b.data = row + mid;
      auto& w = pb.weights.emplace_back();
      for (int c = 0; c < b.count; ++c) w.push_back(c % 3 == 0 ? 0.0 : 1.0 + 0.25 * (c % 2));
      b.weight = w.data();
      if (a.count > 0) pb.tiles.push_back(a);
      pb.tiles.push_back(b);
    }
  }
  return pb;
}

inline heterodyne::HeterodyneInput InputAt(const HeterodyneProblem& pb,
                                           const std::vector<double>& x) {
  const auto na = pb.grid.phi_deg.size();
  heterodyne::HeterodyneInput in;
  in.t = pb.grid.t;
  in.dt = pb.grid.dt;
  in.q = pb.grid.q;
  in.phi_deg = pb.grid.phi_deg;
  in.contrast.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(na));
  in.offset.assign(x.begin() + static_cast<std::ptrdiff_t>(na),
                   x.begin() + static_cast<std::ptrdiff_t>(2 * na));
  in.physical.assign(x.begin() + static_cast<std::ptrdiff_t>(2 * na), x.end());
  return in;
}

}  // namespace homodyne::model::testing
