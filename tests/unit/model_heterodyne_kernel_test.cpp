// The two-component kernel against the reference model and its analytic derivatives: c2 with
// the reference's bits, χ² and the normal equations equal to their point-by-point sums,
// the gradient pass with the normal pass's bits, the same bits for 1, 2 and 3 threads, and
// masked points ignored.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "heterodyne_problem.h"
#include "model/heterodyne_kernel.h"
#include "model/heterodyne_reference.h"

namespace homodyne::model {
namespace {

using testing::HeterodyneProblem;
using testing::InputAt;
using testing::MakeHeterodyneProblem;

TEST(HeterodyneKernel, ModelIsTheReferenceWithinOneEMinus13AndItsBitsWhenExact) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    const HeterodyneProblem pb = MakeHeterodyneProblem(seed, 17, 3);
    const auto ev = heterodyne::Evaluate(InputAt(pb, pb.x));
    for (bool exact : {false, true}) {
      KernelOptions opt;
      opt.exact_transcendentals = exact;
      const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
      std::vector<double> model(static_cast<std::size_t>(kernel.num_points()));
      kernel.EvaluateModel(pb.x, model);
      std::size_t e = 0;
      double worst = 0.0;
      for (const RowTile& tile : pb.tiles) {
        for (int c = 0; c < tile.count; ++c, ++e) {
          const double ref = ev.C2(tile.angle, tile.row, tile.col_begin + c);
          if (exact) {
            ASSERT_EQ(model[e], ref) << "tile row " << tile.row << " column " << tile.col_begin + c;
          }
          worst = std::max(worst, std::abs(model[e] - ref) / std::abs(ref));
        }
      }
      EXPECT_LE(worst, 1e-13) << (exact ? "exact" : "fast");
    }
  }
}

// The phase by angle addition (separable) where its error bound holds, directly beyond. A
// problem with slow flow (|a_k·P_v| ≤ 0.01·10.5·30 ≈ 3.2, well inside the bound) takes the
// separable phase at every point; one with fast, accelerating flow (P_v growing like t³,
// |a_k·P_v| up to ~4e4) takes it only near the start of the time grid, and its points with
// large phases must have the direct kernel's bits (the angle addition everywhere would put
// c2 ~6e-13 from the reference there). Both stay within 1e-13 of the reference, and the
// three passes keep one χ².
struct PhaseCase {
  HeterodyneProblem pb;
  heterodyne::HeterodyneEvaluation ev;
  std::vector<double> fast, direct;  // c2 per point: default options, separable = false
  std::int64_t separable = 0;
};

PhaseCase MakePhaseCase(std::uint64_t seed, int frames, double v0, double beta, double v_off) {
  PhaseCase pc{MakeHeterodyneProblem(seed, frames, 3), {}, {}, {}, 0};
  // A grid of 30 s at q = 0.01 (the data stay the problem's: only the model is compared).
  pc.pb.grid.dt = 0.2;
  pc.pb.grid.q = 0.01;
  for (int m = 0; m < frames; ++m) pc.pb.grid.t[static_cast<std::size_t>(m)] = (m + 1) * 0.2;
  // Slow transport (h_r, h_s ≥ e^-1.5) and a constant fraction 0.4, so that the phase's cross
  // term shows in c2's bits everywhere.
  const std::size_t phys = 2 * pc.pb.grid.phi_deg.size();
  for (std::size_t r : {phys, phys + 3}) {
    pc.pb.x[r] = 1e3;
    pc.pb.x[r + 1] = 0.0;
    pc.pb.x[r + 2] = 0.0;
  }
  pc.pb.x[phys + 9] = 0.4;
  pc.pb.x[phys + 10] = 0.0;
  pc.pb.x[phys + 11] = 0.0;
  pc.pb.x[phys + 12] = 0.0;
  const std::size_t vel = phys + 6;
  pc.pb.x[vel] = v0;
  pc.pb.x[vel + 1] = beta;
  pc.pb.x[vel + 2] = v_off;
  pc.ev = heterodyne::Evaluate(InputAt(pc.pb, pc.pb.x));
  const HeterodyneKernel fast(pc.pb.grid, pc.pb.tiles);
  KernelOptions opt;
  opt.separable = false;
  const HeterodyneKernel direct(pc.pb.grid, pc.pb.tiles, opt);
  pc.fast.resize(static_cast<std::size_t>(fast.num_points()));
  pc.direct.resize(pc.fast.size());
  fast.EvaluateModel(pc.pb.x, pc.fast);
  direct.EvaluateModel(pc.pb.x, pc.direct);
  pc.separable = fast.CountSeparable(pc.pb.x);
  EXPECT_EQ(direct.CountSeparable(pc.pb.x), 0);
  KernelOptions exact;
  exact.exact_transcendentals = true;
  EXPECT_EQ(HeterodyneKernel(pc.pb.grid, pc.pb.tiles, exact).CountSeparable(pc.pb.x), 0);
  // One χ² in the three passes, with rows of several derivative blocks.
  const NormalEquations ne = fast.Accumulate(pc.pb.x);
  std::vector<double> jtr(static_cast<std::size_t>(fast.index().size()));
  const double chi2_grad = fast.Gradient(pc.pb.x, jtr);
  const double chi2 = fast.Chi2(pc.pb.x);
  EXPECT_EQ(std::memcmp(&chi2, &ne.chi2, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&chi2_grad, &ne.chi2, sizeof(double)), 0);
  return pc;
}

// |a_k|·(|P_v[i]| + |P_v[j]|) of a point, from the reference's tables.
double PhaseScale(const PhaseCase& pc, const RowTile& tile, int j) {
  const double angle = (pc.pb.grid.phi_deg[static_cast<std::size_t>(tile.angle)] + pc.pb.x.back()) *
                       std::numbers::pi / 180.0;
  const double a = std::abs(pc.pb.grid.q * std::cos(angle));
  const auto& v = pc.ev.p_velocity;
  return a * (std::abs(v[static_cast<std::size_t>(tile.row)]) +
              std::abs(v[static_cast<std::size_t>(j)]));
}

TEST(HeterodyneKernel, PhaseIsSeparableWithinItsBoundAndDirectBeyond) {
  {
    SCOPED_TRACE("slow flow: every point separable");
    const PhaseCase pc = MakePhaseCase(61, 150, 10.0, 0.0, 0.5);
    EXPECT_EQ(pc.separable, static_cast<std::int64_t>(pc.fast.size()));
    std::size_t e = 0, differ = 0;
    double worst = 0.0;
    for (const RowTile& tile : pc.pb.tiles) {
      for (int c = 0; c < tile.count; ++c, ++e) {
        const double ref = pc.ev.C2(tile.angle, tile.row, tile.col_begin + c);
        worst = std::max(worst, std::abs(pc.fast[e] - ref) / std::abs(ref));
        differ += pc.fast[e] != pc.direct[e] ? 1 : 0;
      }
    }
    EXPECT_LE(worst, 1e-13);
    EXPECT_GT(differ, 0u);  // the angle addition was taken
  }
  {
    SCOPED_TRACE("fast accelerating flow: direct beyond the bound");
    const PhaseCase pc = MakePhaseCase(62, 150, 500.0, 2.0, 20.0);
    EXPECT_GT(pc.separable, 0);
    EXPECT_LT(pc.separable, static_cast<std::int64_t>(pc.fast.size()));
    std::size_t e = 0, large = 0;
    double worst = 0.0;
    for (const RowTile& tile : pc.pb.tiles) {
      for (int c = 0; c < tile.count; ++c, ++e) {
        const double ref = pc.ev.C2(tile.angle, tile.row, tile.col_begin + c);
        worst = std::max(worst, std::abs(pc.fast[e] - ref) / std::abs(ref));
        // Beyond the bound's reach (|x_i| + |x_j| ≈ 39): the direct kernel's bits.
        if (PhaseScale(pc, tile, tile.col_begin + c) > 100.0) {
          ++large;
          ASSERT_EQ(pc.fast[e], pc.direct[e])
              << "angle " << tile.angle << " row " << tile.row << " column " << tile.col_begin + c;
        }
      }
    }
    EXPECT_GT(large, pc.fast.size() / 2);
    EXPECT_LE(worst, 1e-13);
  }
}

// The kernel's normal equations against the point-by-point sums of the reference's analytic
// derivatives, within 1e-11 of the Cauchy-Schwarz scale of each entry.
void ExpectPointSums(const HeterodyneProblem& pb) {
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

// Many random parameter sets: some saturate the fraction (seed 71), where ∂c2/∂f_s nearly
// cancels and its rounding must follow the reference's.
TEST(HeterodyneKernel, NormalEquationsAreThePointSumsOfTheAnalyticDerivatives) {
  for (std::uint64_t seed = 11; seed <= 110; ++seed) {
    SCOPED_TRACE(seed);
    ExpectPointSums(MakeHeterodyneProblem(seed, 15, 2));
  }
}

// Rows longer than one column block of the derivative passes (several blocks per row).
TEST(HeterodyneKernel, NormalEquationsOfLongRowsAreThePointSums) {
  for (std::uint64_t seed = 111; seed <= 113; ++seed) {
    SCOPED_TRACE(seed);
    ExpectPointSums(MakeHeterodyneProblem(seed, 300, 2));
  }
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Rows of one column block (40 frames) and of several (300 frames: the derivative passes
// carry each tile's χ² lanes over the blocks); the array sine/cosine and libm's.
class HeterodyneKernelBits : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(HeterodyneKernelBits, SameBitsForEveryThreadCountAndBetweenPasses) {
  const auto [frames, exact] = GetParam();
  const HeterodyneProblem pb = MakeHeterodyneProblem(21, frames, 3);
  std::vector<double> chi2s;
  std::vector<std::vector<double>> jtjs, jtrs;
  for (int threads : {1, 2, 3}) {
    KernelOptions opt;
    opt.threads = threads;
    opt.exact_transcendentals = exact;
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

INSTANTIATE_TEST_SUITE_P(FramesAndSines, HeterodyneKernelBits,
                         ::testing::Combine(::testing::Values(40, 300), ::testing::Bool()));

// Masked points (weight 0) are skipped whatever their data: NaN there changes no bit.
TEST(HeterodyneKernel, MaskedPointsAreIgnoredEvenWithNonFiniteData) {
  HeterodyneProblem pb = MakeHeterodyneProblem(51, 150, 2);
  const HeterodyneKernel kernel(pb.grid, pb.tiles);
  const NormalEquations before = kernel.Accumulate(pb.x);
  std::vector<double> jtr_before(static_cast<std::size_t>(kernel.index().size()));
  kernel.Gradient(pb.x, jtr_before);
  int poisoned = 0;
  for (const RowTile& tile : pb.tiles) {
    if (tile.weight == nullptr) continue;
    for (int c = 0; c < tile.count; ++c) {
      if (tile.weight[c] != 0.0) continue;
      const_cast<double*>(tile.data)[c] = std::numeric_limits<double>::quiet_NaN();
      ++poisoned;
    }
  }
  ASSERT_GT(poisoned, 100);
  const NormalEquations after = kernel.Accumulate(pb.x);
  std::vector<double> jtr_after(jtr_before.size());
  const double chi2_grad = kernel.Gradient(pb.x, jtr_after);
  EXPECT_TRUE(std::isfinite(after.chi2));
  EXPECT_EQ(std::memcmp(&after.chi2, &before.chi2, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&chi2_grad, &before.chi2, sizeof(double)), 0);
  EXPECT_TRUE(SameBits(after.jtj, before.jtj));
  EXPECT_TRUE(SameBits(after.jtr, before.jtr));
  EXPECT_TRUE(SameBits(jtr_after, jtr_before));
  const double chi2 = kernel.Chi2(pb.x);
  EXPECT_EQ(std::memcmp(&chi2, &before.chi2, sizeof(double)), 0);
}

TEST(HeterodyneKernel, ChunkPartialsAddUpToTheWholePassAndStopOnRequest) {
  const HeterodyneProblem pb = MakeHeterodyneProblem(31, 30, 2);
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
  const HeterodyneProblem pb = MakeHeterodyneProblem(41, 10, 2);
  const HeterodyneKernel kernel(pb.grid, pb.tiles);
  std::vector<double> short_x(pb.x.begin(), pb.x.end() - 1);
  EXPECT_THROW(kernel.Chi2(short_x), Error);
  auto tiles = pb.tiles;
  tiles[0].angle = 5;
  EXPECT_THROW(HeterodyneKernel(pb.grid, tiles), Error);
}

}  // namespace
}  // namespace homodyne::model
