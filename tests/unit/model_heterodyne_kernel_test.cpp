// The two-component kernel against the reference model and its analytic derivatives: c2 with
// the reference's bits, χ² and the normal equations equal to their point-by-point sums,
// the gradient pass with the normal pass's bits, the same bits for 1, 2 and 3 threads, and
// masked points ignored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <tuple>
#include <vector>

#include "core/errors.h"
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
  // No transport (P_r = P_s = 0, h_r = h_s = exp(−½q²·1e-6), evaluated directly: the
  // decays are the direct kernel's, so that the phase alone can change c2's bits) and a
  // constant fraction 0.4, so that the phase's cross term shows in c2's bits everywhere.
  const std::size_t phys = 2 * pc.pb.grid.phi_deg.size();
  for (std::size_t r : {phys, phys + 3}) {
    pc.pb.x[r] = 0.0;
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
  EXPECT_EQ(direct.CountSeparableDecay(pc.pb.x).factorised, 0);
  EXPECT_EQ(direct.CountSeparableDecay(pc.pb.x).clipped, 0);
  KernelOptions exact;
  exact.exact_transcendentals = true;
  const HeterodyneKernel exact_kernel(pc.pb.grid, pc.pb.tiles, exact);
  EXPECT_EQ(exact_kernel.CountSeparable(pc.pb.x), 0);
  EXPECT_EQ(exact_kernel.CountSeparableDecay(pc.pb.x).factorised, 0);
  EXPECT_EQ(exact_kernel.CountSeparableDecay(pc.pb.x).clipped, 0);
  EXPECT_EQ(fast.CountSeparableDecay(pc.pb.x).factorised, 0);
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
// With a robust loss the point sums take SciPy's row scaling (robust_loss.h): the objective
// C²·Σ w·ρ, Jᵀr = Σ w·ρ′·r·J, JᵀJ = Σ w·s²·J Jᵀ.
void ExpectPointSums(const HeterodyneProblem& pb, const RobustLoss& loss = {}) {
  KernelOptions opt;
  opt.sigma = 0.02;
  opt.loss = loss;
  const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
  const NormalEquations ne = kernel.Accumulate(pb.x);
  const heterodyne::HeterodyneGradient ref(InputAt(pb, pb.x), pb.x);
  const int np = ref.num_parameters();
  ASSERT_EQ(kernel.index().size(), np);
  std::vector<double> g(static_cast<std::size_t>(np));
  NormalEquations brute(np);
  // Σ |term| of each Jᵀr entry: the rounding scale of a robust sum (its ρ′ is not bounded by
  // the s² of JᵀJ, so the Cauchy–Schwarz scale below can be far too small).
  std::vector<double> abs_jtr(static_cast<std::size_t>(np), 0.0);
  for (const RowTile& tile : pb.tiles) {
    for (int c = 0; c < tile.count; ++c) {
      const double w = tile.weight != nullptr ? tile.weight[c] : tile.uniform_weight;
      if (w == 0.0) continue;
      const double c2 = ref.C2(tile.angle, tile.row, tile.col_begin + c, g);
      const double r = (tile.data[c] - c2) / opt.sigma;
      double d1 = 1.0, s2 = 1.0;
      if (loss.robust()) {
        const double u = r / loss.f_scale;
        const LossTerms lt = EvaluateLoss(loss.kind, u * u);
        brute.chi2 += w * loss.f_scale * loss.f_scale * lt.rho;
        d1 = lt.d1;
        s2 = std::max(lt.curvature, kLossCurvatureFloor);
      } else {
        brute.chi2 += w * r * r;
      }
      for (int a = 0; a < np; ++a) {
        const double term = w * d1 * r * g[static_cast<std::size_t>(a)] / opt.sigma;
        brute.jtr[static_cast<std::size_t>(a)] -= term;
        abs_jtr[static_cast<std::size_t>(a)] += std::abs(term);
        for (int b = 0; b < np; ++b) {
          brute.JtJ(a, b) += w * s2 * g[static_cast<std::size_t>(a)] *
                             g[static_cast<std::size_t>(b)] / (opt.sigma * opt.sigma);
        }
      }
    }
  }
  EXPECT_NEAR(ne.chi2, brute.chi2, 1e-12 * brute.chi2);
  for (int a = 0; a < np; ++a) {
    const double scale = std::sqrt(brute.JtJ(a, a)) * std::sqrt(brute.chi2) + 1e-300;
    EXPECT_NEAR(
        ne.jtr[static_cast<std::size_t>(a)], brute.jtr[static_cast<std::size_t>(a)],
        1e-11 * scale + (loss.robust() ? 1e-13 * abs_jtr[static_cast<std::size_t>(a)] : 0.0))
        << a;
    for (int b = 0; b < np; ++b) {
      const double s2 = std::sqrt(brute.JtJ(a, a) * brute.JtJ(b, b)) + 1e-300;
      EXPECT_NEAR(ne.JtJ(a, b), brute.JtJ(a, b), 1e-11 * s2) << a << "," << b;
    }
  }
}

// The separable half decays (heterodyne_kernel.cpp): exp(−½q²ΔP) from per-time,
// per-(anchor span pair) and per-row factors, direct next to the diagonal and at the clip's
// edge, the clip's constant beyond it.
struct DecayCase {
  HeterodyneProblem pb;
  heterodyne::HeterodyneEvaluation ev;
  HeterodyneKernel::DecayCounts counts;
  std::int64_t points = 0;
  double worst = 0.0;  // max |c2 − c2_ref|/|c2_ref| over the tiles' points
};

// Sets the grid (n frames of dt, q) and the physical parameters of pb (the data stay: only
// the model is compared), and compares the kernel's c2 with the reference's.
DecayCase MakeDecayCase(HeterodyneProblem problem, double dt, double q,
                        const std::vector<double>& physical) {
  DecayCase dc{std::move(problem), {}, {}, 0, 0.0};
  HeterodyneProblem& pb = dc.pb;
  pb.grid.dt = dt;
  pb.grid.q = q;
  for (std::size_t m = 0; m < pb.grid.t.size(); ++m) {
    pb.grid.t[m] = static_cast<double>(m + 1) * dt;
  }
  const std::size_t phys = 2 * pb.grid.phi_deg.size();
  std::copy(physical.begin(), physical.end(), pb.x.begin() + static_cast<std::ptrdiff_t>(phys));
  dc.ev = heterodyne::Evaluate(InputAt(pb, pb.x));
  const HeterodyneKernel kernel(pb.grid, pb.tiles);
  std::vector<double> model(static_cast<std::size_t>(kernel.num_points()));
  kernel.EvaluateModel(pb.x, model);
  dc.points = kernel.num_points();
  dc.counts = kernel.CountSeparableDecay(pb.x);
  std::size_t e = 0;
  for (const RowTile& tile : pb.tiles) {
    for (int c = 0; c < tile.count; ++c, ++e) {
      const double ref = dc.ev.C2(tile.angle, tile.row, tile.col_begin + c);
      dc.worst = std::max(dc.worst, std::abs(model[e] - ref) / std::abs(ref));
    }
  }
  // One χ² in the three passes.
  const NormalEquations ne = kernel.Accumulate(pb.x);
  std::vector<double> jtr(static_cast<std::size_t>(kernel.index().size()));
  const double chi2_grad = kernel.Gradient(pb.x, jtr);
  const double chi2 = kernel.Chi2(pb.x);
  EXPECT_EQ(std::memcmp(&chi2, &ne.chi2, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&chi2_grad, &ne.chi2, sizeof(double)), 0);
  return dc;
}

// Random parameters in the registry bounds (D0 0…1e6, alpha ±2, D_offset ±1e4, q 1e-3…0.1,
// dt 1e-3…1 s): slow and fast decays, rates at the 0 floor (a negative offset), decays that
// reach the −700 clip. c2 within 1e-13 of the reference everywhere, with the factorised
// decay on most of the points × {h_r, h_s}.
TEST(HeterodyneKernel, DecayIsSeparableWithinOneEMinus13OverRandomParameters) {
  std::int64_t factorised = 0, clipped = 0, total = 0;
  int with_floor = 0, with_clip = 0, slow = 0, fast = 0;
  for (std::uint64_t seed = 201; seed <= 260; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    auto u = [&](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    const int frames = 40 + 40 * static_cast<int>(seed % 4);
    const double dt = std::pow(10.0, u(-3, 0));
    const double q = std::pow(10.0, u(-3, -1));
    std::vector<double> phys;
    for (int r = 0; r < 2; ++r) {
      phys.push_back(u(0, 1) < 0.1 ? 0.0 : std::pow(10.0, u(-2, 6)));  // D0
      phys.push_back(u(-2, 2));                                        // alpha
      const double kind = u(0, 1), scale = std::pow(10.0, u(-3, 4));
      phys.push_back(kind < 0.3 ? 0.0 : kind < 0.6 ? scale : -scale);  // D_offset
    }
    const std::vector<double> rest = {std::pow(10.0, u(0, 3)),
                                      u(0, 2),
                                      u(-100, 100),
                                      u(0, 1),
                                      u(-1, 1),
                                      u(-1, 1),
                                      u(-1, 1),
                                      u(-10, 10)};
    phys.insert(phys.end(), rest.begin(), rest.end());
    const DecayCase dc = MakeDecayCase(MakeHeterodyneProblem(seed, frames, 2), dt, q, phys);
    EXPECT_LE(dc.worst, 1e-13);
    factorised += dc.counts.factorised;
    clipped += dc.counts.clipped;
    total += 2 * dc.points;
    const auto& ev = dc.ev;
    auto has_zero = [](const std::vector<double>& v) {
      return std::find(v.begin(), v.end(), 0.0) != v.end();
    };
    with_floor += has_zero(ev.rate_ref) || has_zero(ev.rate_sample) ? 1 : 0;
    with_clip += dc.counts.clipped > 0 ? 1 : 0;
    const double c = 0.5 * q * q;
    const double reach = c * std::max(ev.p_ref.back(), ev.p_sample.back());
    slow += reach < 1.0 ? 1 : 0;
    fast += reach > 50.0 ? 1 : 0;
  }
  EXPECT_GT(static_cast<double>(factorised), 0.5 * static_cast<double>(total));
  EXPECT_GT(clipped, 0);
  EXPECT_GE(with_floor, 5);
  EXPECT_GE(with_clip, 5);
  EXPECT_GE(slow, 5);
  EXPECT_GE(fast, 5);
}

// The fallback where the smooth-abs shift shows: the reference rate at the 0 floor over a
// stretch longer than an anchor span (ΔP_r = 0 there, h_r = exp(−½q²·1e-6) ≠ 1) and a very
// slow sample rate (ΔP_s ~ 1e-4). exp(−½q²ΔP), the factorised form's value, puts c2 far
// outside 1e-13 of the reference at points beyond the row's span; the kernel stays within
// it. The reference rate's later growth reaches the clip. The normal equations are the point
// sums of the analytic derivatives.
TEST(HeterodyneKernel, DecayFallsBackWhereTheFactorisedFormMissesTheBudget) {
  const int frames = 160;
  const double dt = 0.1, q = 0.05;
  // J_r = max(1e4·t − 5e4, 0): 0 up to t = 5 s, then fast enough that ½q²ΔP_r reaches 756
  // (the clip) over the grid; J_s = 3e-5 Å²/s (ΔP_s = 1e-4 over 32 frames: a shift of
  // 6e-12 relative). No flow, a constant fraction 0.5.
  const std::vector<double> phys = {1e4, 1.0, -5e4, 0.0, 0.0, 3e-5, 0.0,
                                    0.0, 0.0, 0.5,  0.0, 0.0, 0.0,  0.0};
  const DecayCase dc = MakeDecayCase(MakeHeterodyneProblem(91, frames, 2), dt, q, phys);
  EXPECT_LE(dc.worst, 1e-13);
  EXPECT_GT(dc.counts.factorised, dc.points / 4);
  EXPECT_GT(dc.counts.clipped, 0);
  EXPECT_LT(dc.counts.factorised + dc.counts.clipped, 2 * dc.points);
  // exp(−½q²ΔP) for both decays, from the reference's own tables, at the points j ≥ i + 32
  // (beyond any row's anchor span): far from the reference where ΔP is tiny.
  const auto& ev = dc.ev;
  const double half_q2 = -0.5 * q * q;
  double worst_plain = 0.0;
  int tiny = 0;
  for (const RowTile& tile : dc.pb.tiles) {
    const auto i = static_cast<std::size_t>(tile.row);
    for (int c = 0; c < tile.count; ++c) {
      const auto j = static_cast<std::size_t>(tile.col_begin + c);
      if (j < i + 32) continue;
      const double dr = ev.p_ref[j] - ev.p_ref[i], ds = ev.p_sample[j] - ev.p_sample[i];
      tiny += dr == 0.0 ? 1 : 0;
      const double hr = std::exp(std::max(half_q2 * dr, -heterodyne::kExpClip));
      const double hs = std::exp(std::max(half_q2 * ds, -heterodyne::kExpClip));
      const double bi = ev.fraction_sample[i], ai = 1.0 - bi;
      const double bj = ev.fraction_sample[j], aj = 1.0 - bj;
      const double sum = (ai * aj) * (ai * aj) * (hr * hr) + (bi * bj) * (bi * bj) * (hs * hs) +
                         2.0 * ((ai * bi) * (aj * bj)) * hr * hs;  // θ = 0: no flow
      const double norm = (bi * bi + ai * ai) * (bj * bj + aj * aj);
      const double k = static_cast<double>(tile.angle);
      const double contrast = dc.pb.x[static_cast<std::size_t>(k)];
      const double offset = dc.pb.x[dc.pb.grid.phi_deg.size() + static_cast<std::size_t>(k)];
      const double plain = offset + (contrast * sum) / norm;
      const double ref = ev.C2(tile.angle, tile.row, tile.col_begin + c);
      worst_plain = std::max(worst_plain, std::abs(plain - ref) / std::abs(ref));
    }
  }
  EXPECT_GT(tiny, 100);
  EXPECT_GT(worst_plain, 1e-11);
  ExpectPointSums(dc.pb);
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

// Every robust loss, at a scale where the residuals straddle its knee; its three passes agree
// bit for bit and do not depend on the thread count.
TEST(HeterodyneKernel, RobustLossesArePointSumsOfTheScaledRows) {
  for (const LossKind kind :
       {LossKind::kSoftL1, LossKind::kHuber, LossKind::kCauchy, LossKind::kArctan}) {
    for (std::uint64_t seed = 11; seed <= 14; ++seed) {
      SCOPED_TRACE(seed);
      ExpectPointSums(MakeHeterodyneProblem(seed, 15, 2), {kind, 3.0});
    }
    const HeterodyneProblem pb = MakeHeterodyneProblem(21, 300, 2);
    std::vector<NormalEquations> runs;
    for (int threads : {1, 2}) {
      KernelOptions opt{.threads = threads, .chunk_points = 97};
      opt.loss = {kind, 3.0};
      const HeterodyneKernel kernel(pb.grid, pb.tiles, opt);
      runs.push_back(kernel.Accumulate(pb.x));
      std::vector<double> jtr(runs.back().jtr.size());
      EXPECT_EQ(kernel.Chi2(pb.x), runs.back().chi2);
      EXPECT_EQ(kernel.Gradient(pb.x, jtr), runs.back().chi2);
      EXPECT_TRUE(jtr == runs.back().jtr);
    }
    EXPECT_EQ(runs[0].chi2, runs[1].chi2);
    EXPECT_TRUE(runs[0].jtj == runs[1].jtj);
    const double plain = HeterodyneKernel(pb.grid, pb.tiles, {}).Chi2(pb.x);
    EXPECT_LT(runs[0].chi2, 0.9 * plain) << "the loss must bite in this test";
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
    // Factorised decays on the fast path, none with libm's.
    const HeterodyneKernel::DecayCounts dc = kernel.CountSeparableDecay(pb.x);
    if (exact) {
      EXPECT_EQ(dc.factorised, 0);
    } else {
      EXPECT_GT(dc.factorised, 0);
    }
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
