// The kernel's separable shear path (angle-addition sin/cos from per-time tables, used where
// its error bound holds) against the literal reference model and the direct fast path, in
// the regimes where a factorised evaluation is most fragile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/kernel.h"
#include "model/reference_accumulate.h"

namespace homodyne::model {
namespace {

struct Grid {
  Geometry geometry;
  std::vector<double> t, phi, data;
  std::vector<RowTile> tiles;
};

// n times from t0 with step dt, the upper triangle of every angle cut into row tiles of at
// most `piece` columns (data are a constant; only the model values matter here).
Grid MakeGrid(Geometry geometry, int n, double t0, std::vector<double> phi, int piece) {
  Grid g;
  g.geometry = geometry;
  g.phi = std::move(phi);
  for (int m = 0; m < n; ++m) g.t.push_back(t0 + geometry.dt * m);
  g.data.assign(g.phi.size() * static_cast<size_t>(n) * static_cast<size_t>(n), 1.1);
  size_t used = 0;
  for (int k = 0; k < static_cast<int>(g.phi.size()); ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j0 = i + 1; j0 < n; j0 += piece) {
        RowTile tile;
        tile.angle = k;
        tile.row = i;
        tile.col_begin = j0;
        tile.count = std::min(piece, n - j0);
        tile.data = g.data.data() + used;
        used += static_cast<size_t>(tile.count);
        g.tiles.push_back(tile);
      }
    }
  }
  return g;
}

// Expanded parameters: per-angle contrast and offset, then the 7 laminar physics values.
std::vector<double> Params(const Grid& g, double contrast, std::vector<double> phys) {
  std::vector<double> p(g.phi.size(), contrast);
  p.insert(p.end(), g.phi.size(), 1.0);
  p.insert(p.end(), phys.begin(), phys.end());
  return p;
}

struct Outcome {
  double worst_vs_reference = 0.0;
  double worst_vs_direct = 0.0;
  SeparableCounts counts;
};

Outcome Compare(const Grid& g, const std::vector<double>& params,
                AnalysisMode mode = AnalysisMode::kLaminarFlow) {
  ModelKernel fast(mode, g.geometry, g.t, g.phi, g.tiles, {.threads = 2});
  ModelKernel direct(mode, g.geometry, g.t, g.phi, g.tiles, {.threads = 1, .separable = false});
  std::vector<double> a(static_cast<size_t>(fast.num_points())), b(a.size());
  fast.EvaluateModel(params, a);
  direct.EvaluateModel(params, b);
  const auto ref = reference::ModelAtTiles(mode, g.geometry, g.t, g.phi, g.tiles, params);
  Outcome out;
  for (size_t e = 0; e < a.size(); ++e) {
    out.worst_vs_reference = std::max(out.worst_vs_reference, std::abs(a[e] - ref[e]));
    out.worst_vs_direct = std::max(out.worst_vs_direct, std::abs(a[e] - b[e]));
  }
  out.counts = fast.CountSeparable(params);
  EXPECT_EQ(out.counts.points, fast.num_points());
  const SeparableCounts none = direct.CountSeparable(params);
  EXPECT_EQ(none.shear, 0);
  EXPECT_EQ(none.diffusion, 0);
  // χ² and the normal equations of both paths agree too.
  const auto na = fast.Accumulate(params), nb = direct.Accumulate(params);
  EXPECT_NEAR(na.chi2, nb.chi2, 1e-12 * std::abs(nb.chi2) + 1e-300);
  const int np = fast.index().size();
  for (int r = 0; r < np; ++r) {
    for (int c = 0; c < np; ++c) {
      const double scale = std::sqrt(nb.JtJ(r, r) * nb.JtJ(c, c));
      EXPECT_LE(std::abs(na.JtJ(r, c) - nb.JtJ(r, c)), 1e-10 * scale + 1e-300) << r << "," << c;
    }
    const double scale = std::sqrt(nb.JtJ(r, r) * nb.chi2);
    EXPECT_LE(std::abs(na.jtr[static_cast<size_t>(r)] - nb.jtr[static_cast<size_t>(r)]),
              1e-10 * scale + 1e-300);
  }
  std::printf(
      "  worst |sep - ref| %.3g, |sep - direct| %.3g; of %lld points separable: %lld shear, "
      "%lld diffusion\n",
      out.worst_vs_reference, out.worst_vs_direct, static_cast<long long>(out.counts.points),
      static_cast<long long>(out.counts.shear), static_cast<long long>(out.counts.diffusion));
  return out;
}

struct Regime {
  std::string name;
  Geometry geometry;
  int n;
  double t0;
  double contrast;
  std::vector<double> phys;  // D0, α, D_off, γ̇0, β, γ̇_off, φ0
};

std::vector<Regime> Regimes() {
  const Geometry tmpl{0.0054, 2e6, 1e-3}, big{0.01, 2e6, 0.1};
  return {
      // wq·C_D in the thousands next to the diagonal, shear on.
      {"large wq*C near the diagonal", big, 200, 0.1, 1.0, {1e5, 2.0, 1e5, 1e-3, 0.0, 0.0, 5.0}},
      {"large wq*C, template grid", tmpl, 400, 1e-3, 1.0, {1e5, 2.0, 1e5, 0.5, 1.0, 0.0, 0.0}},
      // Shear prefactor 318: phases up to ~1e7 (tables beyond FastSinCos's reduction range).
      {"big shear prefactor, strong shear",
       big,
       200,
       0.1,
       1.0,
       {1e2, 0.0, 0.0, 0.5, 2.0, 0.1, 1.0}},
      {"big shear prefactor, weak shear",
       big,
       200,
       0.1,
       1.0,
       {1e2, -1.0, 0.0, 1e-4, 0.5, 1e-4, -3.0}},
      {"big shear prefactor, slow diffusion",
       big,
       250,
       0.1,
       0.7,
       {1e2, -2.0, -99.0, 1e-2, 0.0, 0.0, 20.0}},
      // Both rates at the 1e-10 floor (tiny phases everywhere) and partly floored.
      {"rates at the floor", big, 120, 0.1, 1.0, {1e2, 0.5, -1e5, 1e-6, 0.0, -0.1, 0.0}},
      {"shear rate floored after t=5", big, 150, 0.1, 1.0, {1e3, 0.0, 0.0, 0.5, -1.0, -0.1, 0.0}},
      // −wq·I below −700: the log clip and the g1 floor are active over most of the matrix.
      {"log clip active", big, 200, 0.1, 1.0, {1e5, 2.0, 1e5, 2e-2, 1.0, 0.0, 10.0}},
      {"g1 floor via sinc zeros", big, 200, 0.1, 1.0, {1e2, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0}},
      // t = 0 evaluated at dt/2 with strongly negative exponents (huge first rates).
      {"negative exponents with the t=0 floor",
       big,
       150,
       0.0,
       1.0,
       {1e4, -2.0, 0.0, 0.3, -2.0, 0.0, 0.0}},
      {"negative exponents, template grid",
       tmpl,
       300,
       0.0,
       1.0,
       {5e4, -1.5, 10.0, 0.3, -1.5, 1e-3, 30.0}},
  };
}

TEST(ModelSeparableTest, StaysWithin1e13OfTheReferenceInFragileRegimes) {
  const std::vector<double> phi = {-170.0, -90.0, -30.0, 0.0, 45.0, 89.0, 135.0};
  SeparableCounts total;
  for (const auto& rg : Regimes()) {
    SCOPED_TRACE(rg.name);
    std::printf("%s\n", rg.name.c_str());
    const Grid g = MakeGrid(rg.geometry, rg.n, rg.t0, phi, 64);
    const Outcome out = Compare(g, Params(g, rg.contrast, rg.phys));
    EXPECT_LE(out.worst_vs_reference, 1e-13);
    // The bounds allow 1e-15 (shear) + 5e-15 (diffusion) on top of the direct path's error.
    EXPECT_LE(out.worst_vs_direct, 8e-15);
    total.shear += out.counts.shear;
    total.diffusion += out.counts.diffusion;
  }
  EXPECT_GT(total.shear, 0);
  EXPECT_GT(total.diffusion, 0);
}

TEST(ModelSeparableTest, StaticModeDiffusionStaysWithin1e13OfTheReference) {
  const Geometry tmpl{0.0054, 2e6, 1e-3}, big{0.01, 2e6, 0.1};
  const std::vector<std::pair<Geometry, std::vector<double>>> cases = {
      {big, {1e5, 2.0, 1e5}},       // wq·C_D up to ~1e4 (clip over most of the matrix)
      {big, {3e2, 0.0, 0.0}},       // slow decay: factorised almost everywhere
      {big, {1e4, -2.0, 0.0}},      // t = 0 floor with α = −2
      {big, {1e2, 0.5, -1e5}},      // rate at the floor
      {tmpl, {1e5, 1.0, 5e4}},      // template grid, moderate decay
      {tmpl, {2e4, -1.2, 150.0}}};  // template static values
  for (const auto& [geometry, phys] : cases) {
    for (double t0 : {0.0, geometry.dt}) {
      const Grid g = MakeGrid(geometry, 300, t0, {0.0, 40.0}, 100);
      std::vector<double> p = {0.9, 0.4, 1.0, 1.0};
      p.insert(p.end(), phys.begin(), phys.end());
      const Outcome out = Compare(g, p, AnalysisMode::kStatic);
      EXPECT_LE(out.worst_vs_reference, 1e-13);
      EXPECT_LE(out.worst_vs_direct, 8e-15);
      EXPECT_EQ(out.counts.shear, 0);
    }
  }
}

TEST(ModelSeparableTest, TakenForMostPointsInATypicalCase) {
  // The benchmark's configuration on a shorter grid (template geometry, 11 angles).
  std::vector<double> phi;
  for (int k = 0; k < 11; ++k) phi.push_back(-180.0 + 360.0 * k / 11);
  const Grid g = MakeGrid({0.0054, 2e6, 1e-3}, 400, 1e-3, phi, 128);
  const auto params = Params(g, 0.2, {5e4, 0.5, -50.0, 0.25, 0.1, 1e-3, -2.0});
  const Outcome out = Compare(g, params);
  EXPECT_LE(out.worst_vs_reference, 1e-13);
  EXPECT_GT(out.counts.shear, out.counts.points / 2);
  EXPECT_GT(out.counts.diffusion, out.counts.points / 2);
  // Off for exact transcendentals.
  ModelKernel exact(AnalysisMode::kLaminarFlow, g.geometry, g.t, g.phi, g.tiles,
                    {.exact_transcendentals = true});
  const SeparableCounts none = exact.CountSeparable(params);
  EXPECT_EQ(none.shear + none.diffusion, 0);
}

TEST(ModelSeparableTest, CountsIndependentOfThreadsAndChunks) {
  std::vector<double> phi = {-10.0, 20.0, 70.0};
  const Grid g = MakeGrid({0.0054, 2e6, 1e-3}, 300, 1e-3, phi, 50);
  const auto params = Params(g, 0.5, {2e4, 0.3, 0.0, 0.2, 0.0, 0.0, 0.0});
  ModelKernel one(AnalysisMode::kLaminarFlow, g.geometry, g.t, g.phi, g.tiles, {.threads = 1});
  ModelKernel three(AnalysisMode::kLaminarFlow, g.geometry, g.t, g.phi, g.tiles,
                    {.threads = 3, .chunk_points = 777});
  const SeparableCounts a = one.CountSeparable(params), b = three.CountSeparable(params);
  EXPECT_GT(a.shear, 0);
  EXPECT_GT(a.diffusion, 0);
  EXPECT_EQ(a.shear, b.shear);
  EXPECT_EQ(a.diffusion, b.diffusion);
}

}  // namespace
}  // namespace homodyne::model
