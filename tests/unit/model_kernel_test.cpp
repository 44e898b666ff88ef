// The fast kernel against the literal reference model and the plain reference accumulation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "model/kernel.h"
#include "model/reference_accumulate.h"

namespace homodyne::model {
namespace {

// A synthetic local data set: every angle's upper triangle cut into row tiles.
struct Problem {
  AnalysisMode mode = AnalysisMode::kLaminarFlow;
  Geometry geometry;
  std::vector<double> t, phi;
  std::vector<double> data;     // measured c2 (model at "true" parameters + noise)
  std::vector<double> weights;  // per-point weights for the tiles that use them
  std::vector<RowTile> tiles;
};

// Random parameters over the full default bounds of physics spec §1.8 (scale parameters
// drawn log-uniformly half of the time so that small values are covered too).
std::vector<double> RandomParams(AnalysisMode mode, int n_angles, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto in = [&](double lo, double hi) { return lo + (hi - lo) * u(rng); };
  auto log_in = [&](double lo, double hi) {
    return u(rng) < 0.5 ? in(lo, hi) : std::exp(in(std::log(lo), std::log(hi)));
  };
  std::vector<double> p;
  for (int k = 0; k < n_angles; ++k) p.push_back(in(0.0, 1.0));
  for (int k = 0; k < n_angles; ++k) p.push_back(in(0.5, 1.5));
  p.push_back(log_in(1e2, 1e5));
  p.push_back(in(-2.0, 2.0));
  p.push_back(u(rng) < 0.5 ? in(-1e5, 1e5) : in(-1e3, 1e3));
  if (mode == AnalysisMode::kLaminarFlow) {
    p.push_back(log_in(1e-6, 0.5));
    p.push_back(in(-2.0, 2.0));
    p.push_back(u(rng) < 0.5 ? in(-0.1, 0.1) : in(-1e-3, 1e-3));
    p.push_back(in(-10.0, 10.0));
  }
  return p;
}

// n times starting at t0 with step dt; tiles of each row split into pieces of `piece`
// columns (same split for every angle, so angles share groups); every third angle uses
// per-point weights with some zeros.
Problem MakeProblem(AnalysisMode mode, Geometry geometry, int n, double t0, std::vector<double> phi,
                    int piece, std::mt19937_64& rng) {
  Problem pb;
  pb.mode = mode;
  pb.geometry = geometry;
  pb.phi = std::move(phi);
  for (int m = 0; m < n; ++m) pb.t.push_back(t0 + geometry.dt * m);
  const int n_angles = static_cast<int>(pb.phi.size());
  const auto truth = RandomParams(mode, n_angles, rng);
  // Count points first so that the data/weight buffers never reallocate.
  size_t total = 0;
  for (int k = 0; k < n_angles; ++k) total += static_cast<size_t>(n * (n - 1) / 2);
  pb.data.reserve(total);
  pb.weights.reserve(total);
  std::normal_distribution<double> noise(0.0, 0.01);
  for (int k = 0; k < n_angles; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j0 = i + 1; j0 < n; j0 += piece) {
        RowTile tile;
        tile.angle = k;
        tile.row = i;
        tile.col_begin = j0;
        tile.count = std::min(piece, n - j0);
        tile.data = pb.data.data() + pb.data.size();
        if (k % 3 == 2) {
          tile.weight = pb.weights.data() + pb.weights.size();
          for (int c = 0; c < tile.count; ++c) pb.weights.push_back((i + c) % 7 == 0 ? 0.0 : 2.0);
        }
        pb.data.resize(pb.data.size() + static_cast<size_t>(tile.count));
        pb.tiles.push_back(tile);
      }
    }
  }
  const auto model = reference::ModelAtTiles(mode, geometry, pb.t, pb.phi, pb.tiles, truth);
  for (size_t e = 0; e < model.size(); ++e) pb.data[e] = model[e] + noise(rng);
  return pb;
}

struct GridCase {
  AnalysisMode mode;
  Geometry geometry;
  int n;
  double t0;  // first time (0 exercises the dt/2 floor)
  std::vector<double> phi;
  int piece;
};

std::vector<GridCase> Cases() {
  const Geometry tmpl{0.0054, 2e6, 1e-3}, coarse{0.01, 2e6, 0.1};
  return {
      {AnalysisMode::kLaminarFlow, tmpl, 120, 1e-3, {-20.0, 0.0, 35.0, 90.0, 170.0}, 200},
      {AnalysisMode::kLaminarFlow, coarse, 70, 0.1, {-175.0, -45.0, 10.0, 88.0}, 17},
      {AnalysisMode::kLaminarFlow, coarse, 50, 0.0, {0.0, 60.0, 120.0}, 1000},
      {AnalysisMode::kStatic, tmpl, 150, 1e-3, {0.0, 45.0}, 64},
      {AnalysisMode::kStatic, coarse, 60, 0.0, {10.0}, 9},
      {AnalysisMode::kLaminarFlow, coarse, 200, 0.1, {-90.0, 3.0}, 50},
  };
}

TEST(ModelKernelTest, FastC2EqualsReferenceAtEveryPointOverRandomParameters) {
  std::mt19937_64 rng(20261122);
  double worst = 0.0;
  std::int64_t total = 0, decorrelating = 0;  // points with 1e-6 < contrast·g1² < contrast
  for (const auto& gc : Cases()) {
    const auto pb = MakeProblem(gc.mode, gc.geometry, gc.n, gc.t0, gc.phi, gc.piece, rng);
    ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, {.threads = 2});
    std::vector<double> fast(static_cast<size_t>(kernel.num_points()));
    for (int draw = 0; draw < 12; ++draw) {
      const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
      kernel.EvaluateModel(params, fast);
      const auto ref =
          reference::ModelAtTiles(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, params);
      ASSERT_EQ(ref.size(), fast.size());
      for (size_t e = 0; e < ref.size(); ++e) {
        ASSERT_LE(std::abs(fast[e] - ref[e]), 1e-13) << "point " << e;
        worst = std::max(worst, std::abs(fast[e] - ref[e]));
      }
      // Points whose g1 is neither floored nor ≈ 1 (contrast·g1² away from both ends).
      const int n_angles = static_cast<int>(pb.phi.size());
      size_t e = 0;
      for (const auto& tile : pb.tiles) {
        const double contrast = params[static_cast<size_t>(tile.angle)];
        const double offset = params[static_cast<size_t>(n_angles + tile.angle)];
        for (int c = 0; c < tile.count; ++c, ++e) {
          const double g1sq = (ref[e] - offset) / contrast;
          ++total;
          decorrelating += g1sq > 1e-6 && g1sq < 0.999;
        }
      }
    }
  }
  RecordProperty("worst_abs_c2_difference", std::to_string(worst));
  std::printf("worst |fast - reference| = %.3g over %lld points, %lld decorrelating\n", worst,
              static_cast<long long>(total), static_cast<long long>(decorrelating));
  // The random draws must exercise the model, not only its floors.
  EXPECT_GT(decorrelating, total / 5);
}

TEST(ModelKernelTest, ExactTranscendentalsGiveBitIdenticalC2) {
  std::mt19937_64 rng(515);
  for (const auto& gc : Cases()) {
    const auto pb =
        MakeProblem(gc.mode, gc.geometry, std::min(gc.n, 80), gc.t0, gc.phi, gc.piece, rng);
    ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                       {.threads = 2, .exact_transcendentals = true});
    std::vector<double> fast(static_cast<size_t>(kernel.num_points()));
    for (int draw = 0; draw < 5; ++draw) {
      const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
      kernel.EvaluateModel(params, fast);
      const auto ref =
          reference::ModelAtTiles(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, params);
      EXPECT_TRUE(fast == ref);
    }
  }
}

// Whole rows of 400 frames, longer than a block (the χ² and model passes take blocks of
// kMaxBlock columns, the gradient and normal passes half of that), 2 threads: the χ², gradient
// and normal passes give the same χ² bits (the other cases' tiles are at most 200 columns). It
// fails when a point's c2 depends on the block width (e.g. a diffusion span decided per block)
// or when the χ² lanes are not carried across blocks.
TEST(ModelKernelTest, LongRowsKeepTheChi2OfThePassesIdentical) {
  std::mt19937_64 rng(4242);
  const Geometry tmpl{0.0054, 2e6, 1e-3}, coarse{0.01, 2e6, 0.1};
  struct Case {
    AnalysisMode mode;
    Geometry geometry;
    double t0;
  };
  int compared = 0;
  for (const Case& c :
       {Case{AnalysisMode::kLaminarFlow, tmpl, 1e-3}, Case{AnalysisMode::kLaminarFlow, coarse, 0.0},
        Case{AnalysisMode::kStatic, tmpl, 1e-3}}) {
    const int n = 400;
    const auto pb = MakeProblem(c.mode, c.geometry, n, c.t0, {-30.0, 10.0, 75.0}, n, rng);
    const ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, {.threads = 2});
    for (int draw = 0; draw < 8; ++draw) {
      const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
      const auto full = kernel.Accumulate(params);
      std::vector<double> gradient(full.jtr.size());
      EXPECT_EQ(kernel.Chi2(params), full.chi2) << "draw " << draw;
      EXPECT_EQ(kernel.Gradient(params, gradient), full.chi2) << "draw " << draw;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 24);
}

// A point's c2 does not depend on where its blocks start: rows cut into tiles of 72 or 136
// columns give every point the bits it has with whole-row tiles, on the separable paths as well
// — the blocks (of 128 or 256 columns from a tile's start) begin at other columns, so a choice
// between the series, the sine and the separable forms made per block rather than per column
// would show here. (The diffusion span test is made over the whole span for the same reason;
// the draws here rarely bring a span's bound close enough to its threshold for a per-block
// test to differ. The cuts are multiples of 8 columns:
// which separable columns the point loop takes as whole vectors, and which the scalar edge
// code, follows the tile's start modulo 8, and the two differ by a few ulp.)
TEST(ModelKernelTest, C2DoesNotDependOnWhereBlocksStart) {
  std::mt19937_64 rng(1234);
  const Geometry tmpl{0.0054, 2e6, 1e-3};
  const int n = 300;
  const std::vector<double> phi{-30.0, 10.0, 75.0};
  const auto whole = MakeProblem(AnalysisMode::kLaminarFlow, tmpl, n, 1e-3, phi, n, rng);
  const ModelKernel kw(whole.mode, whole.geometry, whole.t, whole.phi, whole.tiles, {.threads = 2});
  // c2 of every (angle, row, column) from a kernel's output in tile order.
  const auto by_point = [n](const std::vector<RowTile>& tiles, const std::vector<double>& out) {
    std::vector<double> grid(static_cast<size_t>(3 * n * n), -1.0);
    size_t e = 0;
    for (const RowTile& tile : tiles) {
      for (int c = 0; c < tile.count; ++c) {
        grid[static_cast<size_t>((tile.angle * n + tile.row) * n + tile.col_begin + c)] = out[e++];
      }
    }
    return grid;
  };
  std::vector<double> out_w(static_cast<size_t>(kw.num_points()));
  int compared = 0;
  for (int piece : {72, 136}) {
    const auto cut = MakeProblem(AnalysisMode::kLaminarFlow, tmpl, n, 1e-3, phi, piece, rng);
    const ModelKernel kc(cut.mode, cut.geometry, cut.t, cut.phi, cut.tiles, {.threads = 2});
    std::vector<double> out_c(static_cast<size_t>(kc.num_points()));
    for (int draw = 0; draw < 8; ++draw) {
      const auto params = RandomParams(AnalysisMode::kLaminarFlow, 3, rng);
      kw.EvaluateModel(params, out_w);
      kc.EvaluateModel(params, out_c);
      const auto gw = by_point(whole.tiles, out_w), gc = by_point(cut.tiles, out_c);
      size_t differing = 0;
      for (size_t p = 0; p < gw.size(); ++p) differing += gw[p] != gc[p];
      EXPECT_EQ(differing, 0u) << "tiles of " << piece << ", draw " << draw;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 16);
}

// Rows that start left of the diagonal (the lower triangle and the diagonal itself are
// evaluated directly, the columns right of it may take the separable paths): the passes' block
// widths differ, yet each cuts its blocks at the diagonal, so the χ² bits still agree; the
// fast χ² stays close to the reference's.
TEST(ModelKernelTest, RowsAcrossTheDiagonalKeepTheChi2OfThePassesIdentical) {
  std::mt19937_64 rng(99);
  const int n = 400;
  Problem pb;
  pb.geometry = Geometry{0.0054, 2e6, 1e-3};
  pb.phi = {-30.0, 10.0, 75.0};
  for (int m = 0; m < n; ++m) pb.t.push_back(1e-3 + pb.geometry.dt * m);
  std::uniform_int_distribution<int> left(0, 300);
  std::vector<std::pair<int, int>> spans;  // (col_begin, count) per row
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    const int begin = i % 5 == 0 ? 0 : std::max(0, i - left(rng));
    spans.emplace_back(begin, n - begin);
    total += static_cast<size_t>(n - begin);
  }
  pb.data.reserve(total * pb.phi.size());
  std::normal_distribution<double> noise(1.1, 0.05);
  for (int k = 0; k < static_cast<int>(pb.phi.size()); ++k) {
    for (int i = 0; i < n; ++i) {
      RowTile tile;
      tile.angle = k;
      tile.row = i;
      tile.col_begin = spans[static_cast<size_t>(i)].first;
      tile.count = spans[static_cast<size_t>(i)].second;
      tile.data = pb.data.data() + pb.data.size();
      for (int c = 0; c < tile.count; ++c) pb.data.push_back(noise(rng));
      pb.tiles.push_back(tile);
    }
  }
  const ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, {.threads = 2});
  int compared = 0;
  for (int draw = 0; draw < 6; ++draw) {
    const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
    const auto full = kernel.Accumulate(params);
    std::vector<double> gradient(full.jtr.size());
    EXPECT_EQ(kernel.Chi2(params), full.chi2) << "draw " << draw;
    EXPECT_EQ(kernel.Gradient(params, gradient), full.chi2) << "draw " << draw;
    const auto ref = reference::AccumulateNormalEquations(pb.mode, pb.geometry, pb.t, pb.phi,
                                                          pb.tiles, params, kDefaultSigma);
    EXPECT_NEAR(full.chi2, ref.chi2, 1e-10 * ref.chi2) << "draw " << draw;
    ++compared;
  }
  EXPECT_EQ(compared, 6);
  // The exact mode's c2 are the reference's bits on both sides of the diagonal as well.
  const ModelKernel exact(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                          {.threads = 2, .exact_transcendentals = true});
  std::vector<double> fast(static_cast<size_t>(exact.num_points()));
  for (int draw = 0; draw < 3; ++draw) {
    const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
    exact.EvaluateModel(params, fast);
    EXPECT_TRUE(fast ==
                reference::ModelAtTiles(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles, params))
        << "draw " << draw;
  }
}

TEST(ModelKernelTest, NormalEquationsMatchPlainReferenceAccumulation) {
  std::mt19937_64 rng(7);
  for (const auto& gc : Cases()) {
    const auto pb = MakeProblem(gc.mode, gc.geometry, gc.n, gc.t0, gc.phi, gc.piece, rng);
    ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                       {.threads = 2, .chunk_points = 500});
    for (int draw = 0; draw < 5; ++draw) {
      const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
      const auto fast = kernel.Accumulate(params);
      const auto ref = reference::AccumulateNormalEquations(pb.mode, pb.geometry, pb.t, pb.phi,
                                                            pb.tiles, params, kDefaultSigma);
      ASSERT_EQ(fast.size, ref.size);
      EXPECT_NEAR(fast.chi2, ref.chi2, 1e-10 * ref.chi2);
      EXPECT_EQ(kernel.Chi2(params), fast.chi2);
      for (int a = 0; a < ref.size; ++a) {
        const double da = std::sqrt(ref.JtJ(a, a));
        EXPECT_NEAR(fast.jtr[static_cast<size_t>(a)], ref.jtr[static_cast<size_t>(a)],
                    1e-10 * da * std::sqrt(ref.chi2) + 1e-300)
            << "Jtr " << a;
        for (int b = 0; b < ref.size; ++b) {
          const double scale = da * std::sqrt(ref.JtJ(b, b));
          EXPECT_NEAR(fast.JtJ(a, b), ref.JtJ(a, b), 1e-10 * scale + 1e-300)
              << "JtJ " << a << "," << b;
          EXPECT_EQ(fast.JtJ(a, b), fast.JtJ(b, a));
        }
      }
    }
  }
}

TEST(ModelKernelTest, GradientEqualsFiniteDifferenceOfChi2) {
  // ∂χ²/∂θ = 2·JᵀWr, checked on the kernel alone (Richardson central differences of Chi2).
  std::mt19937_64 rng(42);
  for (AnalysisMode mode : {AnalysisMode::kLaminarFlow, AnalysisMode::kStatic}) {
    auto pb =
        MakeProblem(mode, Geometry{0.0054, 2e6, 1e-3}, 60, 1e-3, {-10.0, 40.0, 95.0}, 25, rng);
    ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles);
    std::vector<double> params = {0.3, 0.2, 0.25, 1.0, 1.01, 0.99, 3e4, -0.6, 40.0};
    if (mode == AnalysisMode::kLaminarFlow) {
      params.insert(params.end(), {0.02, 0.4, 1e-3, 4.0});
    }
    const auto ne = kernel.Accumulate(params);
    const double gnorm =
        std::sqrt(std::inner_product(ne.jtr.begin(), ne.jtr.end(), ne.jtr.begin(), 0.0));
    const std::vector<double> scales = {0.1, 0.1,  0.1,  0.1, 0.1,  0.1, 1e3,
                                        0.1, 10.0, 1e-3, 0.1, 1e-4, 1.0};
    for (size_t p = 0; p < params.size(); ++p) {
      const double h = 1e-5 * std::max(std::abs(params[p]), scales[p]);
      auto central = [&](double step) {
        auto plus = params, minus = params;
        plus[p] += step;
        minus[p] -= step;
        return (kernel.Chi2(plus) - kernel.Chi2(minus)) / (2.0 * step);
      };
      const double fd = (4.0 * central(0.5 * h) - central(h)) / 3.0;
      const double scale = std::sqrt(ne.JtJ(static_cast<int>(p), static_cast<int>(p)) * ne.chi2);
      EXPECT_NEAR(2.0 * ne.jtr[p], fd, 1e-6 * std::abs(fd) + 1e-7 * scale + 1e-9 * gnorm)
          << "parameter " << p;
    }
  }
}

TEST(ModelKernelTest, ResultsAreBitwiseIndependentOfThreadCount) {
  std::mt19937_64 rng(99);
  for (const auto& gc : Cases()) {
    const auto pb = MakeProblem(gc.mode, gc.geometry, gc.n, gc.t0, gc.phi, gc.piece, rng);
    const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
    std::vector<NormalEquations> results;
    std::vector<double> chi2;
    std::vector<std::vector<double>> models;
    for (int threads : {1, 2, 3}) {
      ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                         {.threads = threads, .chunk_points = 700});
      results.push_back(kernel.Accumulate(params));
      chi2.push_back(kernel.Chi2(params));
      models.emplace_back(static_cast<size_t>(kernel.num_points()));
      kernel.EvaluateModel(params, models.back());
    }
    for (size_t r = 1; r < results.size(); ++r) {
      EXPECT_EQ(results[r].chi2, results[0].chi2);
      EXPECT_EQ(chi2[r], chi2[0]);
      EXPECT_TRUE(results[r].jtj == results[0].jtj);
      EXPECT_TRUE(results[r].jtr == results[0].jtr);
      EXPECT_TRUE(models[r] == models[0]);
    }
  }
}

TEST(ModelKernelTest, GradientPassMatchesReferenceAndNormalPass) {
  // The gradient-only pass against the reference accumulation (normalised by the
  // Cauchy–Schwarz scale √(JᵀJ_aa·χ²)), and bit-identical to the normal pass at 1–3 threads.
  std::mt19937_64 rng(1234);
  double worst = 0.0;
  for (const auto& gc : Cases()) {
    const auto pb = MakeProblem(gc.mode, gc.geometry, gc.n, gc.t0, gc.phi, gc.piece, rng);
    for (int draw = 0; draw < 4; ++draw) {
      const auto params = RandomParams(pb.mode, static_cast<int>(pb.phi.size()), rng);
      const auto ref = reference::AccumulateNormalEquations(pb.mode, pb.geometry, pb.t, pb.phi,
                                                            pb.tiles, params, kDefaultSigma);
      for (int threads : {1, 2, 3}) {
        ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles,
                           {.threads = threads, .chunk_points = 600});
        std::vector<double> jtr(static_cast<size_t>(kernel.index().size()));
        const double chi2 = kernel.Gradient(params, jtr);
        const auto ne = kernel.Accumulate(params);
        EXPECT_EQ(chi2, ne.chi2);
        EXPECT_TRUE(jtr == ne.jtr);
        EXPECT_NEAR(chi2, ref.chi2, 1e-12 * ref.chi2);
        for (int a = 0; a < ref.size; ++a) {
          const double scale = std::sqrt(ref.JtJ(a, a) * ref.chi2);
          const double err =
              std::abs(jtr[static_cast<size_t>(a)] - ref.jtr[static_cast<size_t>(a)]);
          EXPECT_LE(err, 1e-12 * scale + 1e-300) << "Jtr " << a;
          if (scale > 0) worst = std::max(worst, err / scale);
        }
      }
    }
  }
  std::printf("gradient pass: worst |Jtr - reference| / sqrt(JtJ_aa chi2) = %.3g\n", worst);
}

TEST(ModelKernelTest, PerAngleColumnsOnlySeeTheirOwnAngle) {
  std::mt19937_64 rng(3);
  // Only angle 1 of three has data: contrast_0/2 and offset_0/2 rows of JᵀJ must vanish.
  auto pb = MakeProblem(AnalysisMode::kLaminarFlow, Geometry{0.01, 2e6, 0.1}, 30, 0.1,
                        {0.0, 45.0, 90.0}, 30, rng);
  std::vector<RowTile> only;
  for (const auto& tile : pb.tiles) {
    if (tile.angle == 1) only.push_back(tile);
  }
  ModelKernel kernel(pb.mode, pb.geometry, pb.t, pb.phi, only);
  const auto params = RandomParams(pb.mode, 3, rng);
  const auto ne = kernel.Accumulate(params);
  const ExpandedIndex& idx = kernel.index();
  for (int b = 0; b < idx.size(); ++b) {
    for (int k : {0, 2}) {
      EXPECT_EQ(ne.JtJ(idx.contrast(k), b), 0.0);
      EXPECT_EQ(ne.JtJ(idx.offset(k), b), 0.0);
    }
  }
  EXPECT_GT(ne.JtJ(idx.offset(1), idx.offset(1)), 0.0);
}

// Tiles sharing one uniform weight that is a power of two are summed by the unit-weight
// loops (no weight products) and the chunk partials scaled by the weight afterwards; any other
// weight by the weighted loops. Either way the bits must be those of the same weights given
// per point (weighted loops, scale 1): powers of two scale exactly.
TEST(ModelKernelTest, UniformWeightsGiveTheBitsOfTheSameWeightsPerPoint) {
  std::mt19937_64 rng(31);
  for (AnalysisMode mode : {AnalysisMode::kLaminarFlow, AnalysisMode::kStatic}) {
    const auto pb =
        MakeProblem(mode, Geometry{0.01, 2e6, 0.1}, 45, 0.1, {0.0, 30.0, 60.0, 95.0}, 19, rng);
    const auto params = RandomParams(pb.mode, 4, rng);
    for (double w : {2.0, 1.0, 0.25, 3.0}) {
      std::vector<RowTile> uniform, per_point;
      std::vector<double> weights;
      weights.reserve(pb.data.size());
      for (RowTile tile : pb.tiles) {
        tile.weight = nullptr;
        tile.uniform_weight = w;
        uniform.push_back(tile);
        tile.weight = weights.data() + weights.size();
        weights.insert(weights.end(), static_cast<size_t>(tile.count), w);
        per_point.push_back(tile);
      }
      const ModelKernel a(pb.mode, pb.geometry, pb.t, pb.phi, uniform, {.chunk_points = 500});
      const ModelKernel b(pb.mode, pb.geometry, pb.t, pb.phi, per_point, {.chunk_points = 500});
      const auto na = a.Accumulate(params), nb = b.Accumulate(params);
      EXPECT_GT(na.chi2, 0.0);
      EXPECT_EQ(na.chi2, nb.chi2) << "w " << w;
      EXPECT_TRUE(na.jtj == nb.jtj) << "w " << w;
      EXPECT_TRUE(na.jtr == nb.jtr) << "w " << w;
      EXPECT_EQ(a.Chi2(params), nb.chi2) << "w " << w;
      std::vector<double> ga(na.jtr.size()), gb(na.jtr.size());
      EXPECT_EQ(a.Gradient(params, ga), b.Gradient(params, gb));
      EXPECT_TRUE(ga == gb && ga == na.jtr) << "w " << w;
    }
  }
}

TEST(ModelKernelTest, MaskedPointsAreIgnoredEvenWithNonFiniteData) {
  std::mt19937_64 rng(8);
  auto pb = MakeProblem(AnalysisMode::kLaminarFlow, Geometry{0.01, 2e6, 0.1}, 40, 0.1,
                        {0.0, 30.0, 60.0}, 40, rng);
  const auto params = RandomParams(pb.mode, 3, rng);
  // Angle 2 uses per-point weights with zeros; poison exactly those points.
  ModelKernel clean(pb.mode, pb.geometry, pb.t, pb.phi, pb.tiles);
  const auto before = clean.Accumulate(params);
  int poisoned = 0;
  for (const auto& tile : pb.tiles) {
    if (tile.weight == nullptr) continue;
    for (int c = 0; c < tile.count; ++c) {
      if (tile.weight[c] == 0.0) {
        const auto at = static_cast<size_t>(tile.data - pb.data.data() + c);
        pb.data[at] = std::numeric_limits<double>::quiet_NaN();
        ++poisoned;
      }
    }
  }
  ASSERT_GT(poisoned, 10);
  const auto after = clean.Accumulate(params);
  EXPECT_EQ(after.chi2, before.chi2);
  EXPECT_TRUE(after.jtj == before.jtj);
  EXPECT_TRUE(after.jtr == before.jtr);
  EXPECT_EQ(clean.Chi2(params), before.chi2);
}

TEST(ModelKernelTest, RejectsInvalidInput) {
  std::vector<double> t = {0.1, 0.2, 0.3};
  std::vector<double> data = {1.0, 1.0};
  const Geometry geo{0.01, 2e6, 0.1};
  RowTile bad{0, 1, 2, 2, data.data()};  // columns 2..3 exceed the 3-point grid
  EXPECT_THROW(ModelKernel(AnalysisMode::kStatic, geo, t, {0.0}, {bad}), Error);
  RowTile angle{1, 0, 1, 2, data.data()};  // angle 1 of a 1-angle list
  EXPECT_THROW(ModelKernel(AnalysisMode::kStatic, geo, t, {0.0}, {angle}), Error);
  EXPECT_THROW(ModelKernel(AnalysisMode::kStatic, geo, t, {0.0}, {}, {.threads = 0}), Error);
  RowTile good{0, 0, 1, 2, data.data()};
  ModelKernel built(AnalysisMode::kStatic, geo, t, {0.0}, {good});
  ModelKernel kernel = std::move(built);  // movable (the solver may own it by value)
  EXPECT_THROW(kernel.Chi2(std::vector<double>{0.5, 1.0, 100.0}), Error);  // 3 of 5
  EXPECT_EQ(kernel.num_points(), 2);
  // A rank may own no data at all: everything is zero, nothing throws.
  ModelKernel empty(AnalysisMode::kStatic, geo, t, {0.0}, {}, {.threads = 2});
  const std::vector<double> p5 = {0.5, 1.0, 100.0, 0.0, 10.0};
  EXPECT_EQ(empty.Chi2(p5), 0.0);
  const auto ne = empty.Accumulate(p5);
  EXPECT_EQ(ne.size, 5);
  for (double v : ne.jtj) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(empty.num_points(), 0);
}

}  // namespace
}  // namespace homodyne::model
