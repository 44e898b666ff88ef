// The two-component kernel against the reference model and its analytic derivatives: c2 with
// the reference's bits, χ² and the normal equations equal to their point-by-point sums,
// the gradient pass with the normal pass's bits, and the same bits for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/heterodyne_kernel.h"
#include "model/heterodyne_reference.h"

namespace homodyne::model {
namespace {

namespace het = heterodyne::het;

struct Problem {
  HeterodyneGrid grid;
  std::vector<std::vector<double>> data;  // per angle, row-major n×n
  std::vector<RowTile> tiles;
  std::vector<double> x;  // expanded parameters
};

// Random parameters in the registry bounds and noisy data from the model at other
// parameters; tiles: every upper-triangle row of every angle, rows > 0 (frame 0 masked, as
// the fit does), split in two tiles per row, one with per-point weights.
Problem MakeProblem(std::uint64_t seed, int n, int n_angles) {
  std::mt19937_64 rng(seed);
  auto u = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  Problem pb;
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
  static std::vector<std::vector<double>> weights;  // kept alive for the tiles
  weights.clear();
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
      auto& w = weights.emplace_back();
      for (int c = 0; c < b.count; ++c) w.push_back(c % 3 == 0 ? 0.0 : 1.0 + 0.25 * (c % 2));
      b.weight = w.data();
      if (a.count > 0) pb.tiles.push_back(a);
      pb.tiles.push_back(b);
    }
  }
  return pb;
}

heterodyne::HeterodyneInput InputAt(const Problem& pb, const std::vector<double>& x) {
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

TEST(HeterodyneKernel, ModelHasTheReferenceBits) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    const Problem pb = MakeProblem(seed, 17, 3);
    const HeterodyneKernel kernel(pb.grid, pb.tiles);
    std::vector<double> model(static_cast<std::size_t>(kernel.num_points()));
    kernel.EvaluateModel(pb.x, model);
    const auto ev = heterodyne::Evaluate(InputAt(pb, pb.x));
    std::size_t e = 0;
    for (const RowTile& tile : pb.tiles) {
      for (int c = 0; c < tile.count; ++c, ++e) {
        ASSERT_EQ(model[e], ev.C2(tile.angle, tile.row, tile.col_begin + c))
            << "tile row " << tile.row << " column " << tile.col_begin + c;
      }
    }
  }
}

TEST(HeterodyneKernel, NormalEquationsAreThePointSumsOfTheAnalyticDerivatives) {
  for (std::uint64_t seed = 11; seed <= 14; ++seed) {
    SCOPED_TRACE(seed);
    const Problem pb = MakeProblem(seed, 15, 2);
    KernelOptions opt;
    opt.sigma = 0.02;
    const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
    const NormalEquations ne = kernel.Accumulate(pb.x);
    const heterodyne::HeterodyneGradient ref(InputAt(pb, pb.x), pb.x);
    const int np = ref.num_parameters();
    ASSERT_EQ(kernel.index().size(), np);
    std::vector<double> g(static_cast<std::size_t>(np));
    NormalEquations brute(np);
    for (const RowTile& tile : pb.tiles) {
      for (int c = 0; c < tile.count; ++c) {
        const double w = tile.weight != nullptr ? tile.weight[c] : tile.uniform_weight;
        if (w == 0.0) continue;
        const double c2 = ref.C2(tile.angle, tile.row, tile.col_begin + c, g);
        const double r = (tile.data[c] - c2) / opt.sigma;
        brute.chi2 += w * r * r;
        for (int a = 0; a < np; ++a) {
          brute.jtr[static_cast<std::size_t>(a)] -=
              w * r * g[static_cast<std::size_t>(a)] / opt.sigma;
          for (int b = 0; b < np; ++b) {
            brute.JtJ(a, b) += w * g[static_cast<std::size_t>(a)] * g[static_cast<std::size_t>(b)] /
                               (opt.sigma * opt.sigma);
          }
        }
      }
    }
    EXPECT_NEAR(ne.chi2, brute.chi2, 1e-12 * brute.chi2);
    for (int a = 0; a < np; ++a) {
      const double scale = std::sqrt(brute.JtJ(a, a)) * std::sqrt(brute.chi2) + 1e-300;
      EXPECT_NEAR(ne.jtr[static_cast<std::size_t>(a)], brute.jtr[static_cast<std::size_t>(a)],
                  1e-11 * scale)
          << a;
      for (int b = 0; b < np; ++b) {
        const double s2 = std::sqrt(brute.JtJ(a, a) * brute.JtJ(b, b)) + 1e-300;
        EXPECT_NEAR(ne.JtJ(a, b), brute.JtJ(a, b), 1e-11 * s2) << a << "," << b;
      }
    }
  }
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(HeterodyneKernel, SameBitsForEveryThreadCountAndBetweenPasses) {
  const Problem pb = MakeProblem(21, 40, 3);
  std::vector<double> chi2s;
  std::vector<std::vector<double>> jtjs, jtrs;
  for (int threads : {1, 2, 3}) {
    KernelOptions opt;
    opt.threads = threads;
    opt.chunk_points = 97;  // many chunks
    const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
    ASSERT_GT(kernel.num_chunks(), 3);
    const NormalEquations ne = kernel.Accumulate(pb.x);
    std::vector<double> jtr(static_cast<std::size_t>(kernel.index().size()));
    const double chi2_grad = kernel.Gradient(pb.x, jtr);
    const double chi2 = kernel.Chi2(pb.x);
    // The three passes agree bit for bit.
    EXPECT_EQ(std::memcmp(&chi2, &ne.chi2, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&chi2_grad, &ne.chi2, sizeof(double)), 0);
    EXPECT_TRUE(SameBits(jtr, ne.jtr));
    chi2s.push_back(ne.chi2);
    jtjs.push_back(ne.jtj);
    jtrs.push_back(ne.jtr);
  }
  for (std::size_t t = 1; t < chi2s.size(); ++t) {
    EXPECT_EQ(std::memcmp(&chi2s[t], &chi2s[0], sizeof(double)), 0);
    EXPECT_TRUE(SameBits(jtjs[t], jtjs[0]));
    EXPECT_TRUE(SameBits(jtrs[t], jtrs[0]));
  }
}

TEST(HeterodyneKernel, ChunkPartialsAddUpToTheWholePassAndStopOnRequest) {
  const Problem pb = MakeProblem(31, 30, 2);
  KernelOptions opt;
  opt.chunk_points = 50;
  const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
  const std::size_t w = kernel.partial_size(true);
  std::vector<double> parts(static_cast<std::size_t>(kernel.num_chunks()) * w);
  ASSERT_TRUE(kernel.ChunkPartials(pb.x, true, parts));
  std::vector<double> total(w, 0.0);
  for (int c = 0; c < kernel.num_chunks(); ++c) {
    for (std::size_t e = 0; e < w; ++e) total[e] += parts[static_cast<std::size_t>(c) * w + e];
  }
  const NormalEquations a = kernel.FromPartial(total), b = kernel.Accumulate(pb.x);
  EXPECT_TRUE(SameBits(a.jtj, b.jtj));
  EXPECT_TRUE(SameBits(a.jtr, b.jtr));
  EXPECT_FALSE(kernel.ChunkPartials(pb.x, true, parts, [] { return true; }));
}

TEST(HeterodyneKernel, BadShapesAreBadInput) {
  const Problem pb = MakeProblem(41, 10, 2);
  const HeterodyneKernel kernel(pb.grid, pb.tiles);
  std::vector<double> short_x(pb.x.begin(), pb.x.end() - 1);
  EXPECT_THROW(kernel.Chi2(short_x), Error);
  auto tiles = pb.tiles;
  tiles[0].angle = 5;
  EXPECT_THROW(HeterodyneKernel(pb.grid, tiles), Error);
}

}  // namespace
}  // namespace homodyne::model
