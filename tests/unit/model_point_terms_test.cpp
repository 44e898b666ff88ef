// The compiled copies of the kernel's point loops (src/model/point_terms_impl.h): the AVX-512
// copy (a native 8-lane vector), the AVX2 + FMA copy and the baseline copy (the lanes as two
// 4-lane halves; fma() per lane) must give the same bits on the same block, so that a result
// does not depend on which CPU of a cluster computed it. Random blocks with partial vectors, masked
// points, non-uniform weights and a separable range inside the block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "model/point_terms.h"
#include "model/robust_loss.h"

namespace homodyne::model::detail {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// Storage of one random block and its column sums.
struct Block {
  static constexpr int kArrays = 9;
  std::vector<double> g1d, fac, ig, e[3], f[3], s, ds, data, weight, tab_sin, tab_cos, shift,
      inv_ig, g1d_inv_ig2;
  std::vector<double> sums[kArrays];
  PointBlock in;

  Block(std::mt19937_64& rng, int n, bool laminar, bool weighted) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const int padded = (n + kLanes - 1) / kLanes * kLanes;
    const auto fill = [&](std::vector<double>& v, double lo, double hi) {
      v.assign(static_cast<size_t>(padded), 0.0);
      for (int c = 0; c < n; ++c) v[static_cast<size_t>(c)] = lo + (hi - lo) * u(rng);
    };
    fill(g1d, 1e-12, 1.0);  // some below the g1 floor
    fill(fac, -2.0, 2.0);
    fill(ig, 0.5, 50.0);
    for (auto& v : e) fill(v, -1.0, 1.0);
    for (auto& v : f) fill(v, -1.0, 1.0);
    fill(s, 0.0, 1.0);
    fill(ds, -1.0, 1.0);
    fill(data, 0.9, 1.3);
    fill(weight, 0.0, 2.0);
    for (int c = 0; c < n; c += 7) weight[static_cast<size_t>(c)] = 0.0;  // masked points
    fill(tab_sin, -1.0, 1.0);
    fill(tab_cos, -1.0, 1.0);
    fill(shift, 0.0, 1e-9);
    fill(inv_ig, 0.02, 2.0);
    fill(g1d_inv_ig2, 1e-12, 4.0);
    for (auto& v : sums) fill(v, -1.0, 1.0);
    in.n = n;
    in.g1d = g1d.data();
    in.fac = fac.data();
    in.ig = ig.data();
    for (int q = 0; q < 3; ++q) {
      in.e[q] = e[q].data();
      in.f[q] = f[q].data();
    }
    if (laminar) {
      in.s = s.data();
      in.ds = ds.data();
      const int whole = n / kLanes * kLanes;
      in.sep_lo = std::min(2 * kLanes, whole);
      in.sep_hi = std::max(in.sep_lo, whole - kLanes);
      in.sep =
          SeparableRow{tab_sin.data(), tab_cos.data(),    0.3, -0.7, 37.0, 1.0 / 37.0, shift.data(),
                       inv_ig.data(),  g1d_inv_ig2.data()};
    }
    in.data = data.data();
    in.weight = weighted ? weight.data() : nullptr;
    in.uniform_weight = 1.0;  // what the kernel passes under a common power-of-two weight
    in.contrast = 0.3;
    in.offset = 1.01;
    in.inv_sigma = 1.7;
    in.a = 37.0;
    in.b = -0.4;
    double* p[kArrays];
    for (int k = 0; k < kArrays; ++k) p[k] = sums[k].data();
    in.saa = p[0];
    in.sab = p[1];
    in.sbb = p[2];
    in.sag = p[3];
    in.sbg = p[4];
    in.sgg = p[5];
    in.sar = p[6];
    in.sbr = p[7];
    in.sgr = p[8];
  }
};

void ExpectSameBits(const Block& a, const Block& b, const double* sa, const double* sb, int n_sums,
                    const char* what) {
  for (int k = 0; k < n_sums; ++k) EXPECT_TRUE(SameBits(sa[k], sb[k])) << what << " sum " << k;
  for (int k = 0; k < Block::kArrays; ++k) {
    EXPECT_TRUE(a.sums[k] == b.sums[k]) << what << " column sums " << k;
  }
}

// The entry points of one compiled copy.
struct Copy {
  const char* name;
  void (*normal_laminar)(const PointBlock&, double*);
  void (*normal_static)(const PointBlock&, double*);
  void (*gradient_laminar)(const PointBlock&, double*);
  void (*gradient_static)(const PointBlock&, double*);
  double (*chi2)(const PointBlock&);
  void (*model)(const PointBlock&, double*);
  void (*fold_laminar)(const PointBlock&, int, double*, double*);
  void (*fold_static)(const PointBlock&, int, double*, double*);
};
#define HOMODYNE_COPY(ns)                                                               \
  Copy {                                                                                \
#ns, ns::NormalLaminarBlock, ns::NormalStaticBlock, ns::GradientLaminarBlock,       \
        ns::GradientStaticBlock, ns::Chi2Block, ns::ModelBlock, ns::FoldLaminarColumns, \
        ns::FoldStaticColumns                                                           \
  }
const Copy kBaseline = HOMODYNE_COPY(halves);
const Copy kAvx2 = HOMODYNE_COPY(avx2);
const Copy kAvx512 = HOMODYNE_COPY(avx512);
#undef HOMODYNE_COPY

// Every entry point of copy x against the baseline copy (fma() per lane) on random blocks.
void ExpectCopyGivesTheBaselineBits(const Copy& x) {
  const Copy& y = kBaseline;
  std::mt19937_64 rng(2026);
  int checked = 0;
  for (int n : {1, 7, 8, 61, 64, 100, kMaxBlock}) {
    for (bool laminar : {true, false}) {
      for (bool weighted : {false, true}) {
        // Every loss: linear (0) and the robust ones (robust_loss.h), with a scale at which
        // the residuals straddle the losses' knees; soft_l1 (1) also at scales where they
        // straddle the ends of its series (kSoftL1SeriesBelow, kSoftL1LongSeriesBelow), lanes
        // of two or three forms in a vector.
        const std::pair<int, double> losses[] = {{0, 0.0}, {1, 8.0}, {2, 8.0}, {3, 8.0},
                                                 {4, 8.0}, {1, 0.5}, {1, 0.1}};
        for (const auto& [loss, inv_scale] : losses) {
          const std::uint64_t seed = rng();
          std::mt19937_64 r1(seed), r2(seed);
          Block a(r1, n, laminar, weighted), b(r2, n, laminar, weighted);
          for (PointBlock* in : {&a.in, &b.in}) {
            in->loss = loss;
            in->loss_inv_scale = inv_scale;
            in->loss_scale_sq = loss != 0 ? 0.25 * 0.25 / (1.7 * 1.7) : 0.0;
          }
          double sa[kNumTileSums] = {}, sb[kNumTileSums] = {};
          (laminar ? x.normal_laminar : x.normal_static)(a.in, sa);
          (laminar ? y.normal_laminar : y.normal_static)(b.in, sb);
          ExpectSameBits(a, b, sa, sb, kNumTileSums, "normal");
          double ga[kNumTileSums] = {}, gb[kNumTileSums] = {};
          (laminar ? x.gradient_laminar : x.gradient_static)(a.in, ga);
          (laminar ? y.gradient_laminar : y.gradient_static)(b.in, gb);
          ExpectSameBits(a, b, ga, gb, kNumTileSums, "gradient");
          EXPECT_TRUE(SameBits(x.chi2(a.in), y.chi2(b.in))) << x.name << " " << n;
          EXPECT_TRUE(SameBits(x.chi2(a.in), sa[kSumChi2])) << "χ² pass vs normal";
          std::vector<double> ma(static_cast<size_t>(n)), mb(ma.size());
          x.model(a.in, ma.data());
          y.model(b.in, mb.data());
          EXPECT_TRUE(ma == mb) << "model " << n;
          const int padded = (n + kLanes - 1) / kLanes * kLanes;
          double ja[49] = {}, jb[49] = {}, ra[7] = {}, rb[7] = {};
          (laminar ? x.fold_laminar : x.fold_static)(a.in, padded, ja, ra);
          (laminar ? y.fold_laminar : y.fold_static)(a.in, padded, jb, rb);
          for (int k = 0; k < 49; ++k) EXPECT_TRUE(SameBits(ja[k], jb[k])) << "fold JᵀJ " << k;
          for (int k = 0; k < 7; ++k) EXPECT_TRUE(SameBits(ra[k], rb[k])) << "fold Jᵀr " << k;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 28 * 7);
}

// soft_l1's terms in every copy's passes have the bits of EvaluateLoss (robust_loss.cpp), at z
// on the short series, the long one and beyond: a one-point block whose model is its offset
// (contrast 0), so its χ² is ρ·C² and its Σ w the weight s², and Σ r the weight times the
// factor ρ′/s² times the residual (times 1/σ).
void ExpectSoftL1TermsOfEvaluateLoss(const Copy& x) {
  std::mt19937_64 rng(12);
  int forms[3] = {0, 0, 0};
  for (double z = 1e-7; z < 0.2; z *= 1.003) {
    Block b(rng, 1, false, false);
    b.in.contrast = 0.0;
    b.in.loss = static_cast<int>(LossKind::kSoftL1);
    b.in.loss_inv_scale = 1.0;
    b.in.loss_scale_sq = 0.75;
    b.data[0] = b.in.offset + std::sqrt(z);
    const double r0 = b.data[0] - b.in.offset;
    const LossTerms lt = EvaluateLoss(LossKind::kSoftL1, r0 * r0);
    ASSERT_TRUE(SameBits(x.chi2(b.in), lt.rho * 0.75)) << x.name << " rho at z " << z;
    double sums[kNumTileSums] = {};
    x.normal_static(b.in, sums);
    ASSERT_TRUE(SameBits(sums[kSumChi2], lt.rho * 0.75)) << x.name << " normal pass, z " << z;
    ASSERT_TRUE(SameBits(sums[kSumW], lt.weight)) << x.name << " weight at z " << z;
    ASSERT_TRUE(SameBits(sums[kSumR], (lt.weight * (lt.factor * r0)) * b.in.inv_sigma))
        << x.name << " factor at z " << z;
    ++forms[r0 * r0 <= kSoftL1SeriesBelow ? 0 : r0 * r0 <= kSoftL1LongSeriesBelow ? 1 : 2];
  }
  EXPECT_GT(forms[0], 500);
  EXPECT_GT(forms[1], 1000);
  EXPECT_GT(forms[2], 100);
}

TEST(ModelPointTermsTest, EveryCopyGivesSoftL1TheBitsOfEvaluateLoss) {
  ExpectSoftL1TermsOfEvaluateLoss(kBaseline);
  if (HasAvx2Fma()) ExpectSoftL1TermsOfEvaluateLoss(kAvx2);
  if (HasAvx512()) ExpectSoftL1TermsOfEvaluateLoss(kAvx512);
}

TEST(ModelPointTermsTest, Avx2CopyGivesTheBaselineBits) {
  if (!HasAvx2Fma()) GTEST_SKIP() << "this CPU has no AVX2 + FMA: only the baseline copy runs";
  ExpectCopyGivesTheBaselineBits(kAvx2);
}

TEST(ModelPointTermsTest, Avx512CopyGivesTheBaselineBits) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  ExpectCopyGivesTheBaselineBits(kAvx512);
}

// A block of unit weights (no weight array, uniform weight 1) goes through the loops without
// weight products, whose masked last-vector lanes rely on Terms zeroing them (and, under a
// robust loss, on the loss step weighting only the last vector's lanes); the same block with a
// weight array of ones goes through the weighted loops. Same bits in every sum, for every loss
// (soft_l1 also across the end of its series).
TEST(ModelPointTermsTest, UnitWeightLoopsGiveTheBitsOfTheWeightedLoops) {
  std::mt19937_64 rng(11);
  const std::pair<int, double> losses[] = {{0, 0.0}, {1, 8.0}, {2, 8.0},
                                           {3, 8.0}, {4, 8.0}, {1, 0.5}};
  for (int n : {1, 7, 8, 61, 100, kMaxBlock}) {
    for (int variant = 0; variant < 4; ++variant) {
      for (const auto& [loss, inv_scale] : losses) {
        const bool laminar = variant % 2 == 0;
        // Variants 2, 3: every g1 at the floor, so the padded lanes' floor values (which the
        // unit-weight loops must mask) are as large as the real ones.
        const bool at_floor = variant >= 2;
        const std::uint64_t seed = rng();
        std::mt19937_64 r1(seed), r2(seed);
        Block a(r1, n, laminar, /*weighted=*/false), b(r2, n, laminar, /*weighted=*/true);
        std::fill(b.weight.begin(), b.weight.end(), 1.0);
        for (Block* x : {&a, &b}) {
          if (at_floor) {
            std::fill(x->g1d.begin(), x->g1d.begin() + n, 1e-13);
            std::fill(x->g1d_inv_ig2.begin(), x->g1d_inv_ig2.begin() + n, 1e-13);
          }
          x->in.loss = loss;
          x->in.loss_inv_scale = inv_scale;
          x->in.loss_scale_sq = loss != 0 ? 0.25 * 0.25 / (1.7 * 1.7) : 0.0;
        }
        ASSERT_EQ(a.in.uniform_weight, 1.0);
        double sa[kNumTileSums] = {}, sb[kNumTileSums] = {};
        laminar ? NormalLaminarBlock(a.in, sa) : NormalStaticBlock(a.in, sa);
        laminar ? NormalLaminarBlock(b.in, sb) : NormalStaticBlock(b.in, sb);
        ExpectSameBits(a, b, sa, sb, kNumTileSums, "normal");
        if (loss == 0) {
          EXPECT_EQ(sa[kSumW], static_cast<double>(n));
        }
        double ga[kNumTileSums] = {}, gb[kNumTileSums] = {};
        laminar ? GradientLaminarBlock(a.in, ga) : GradientStaticBlock(a.in, ga);
        laminar ? GradientLaminarBlock(b.in, gb) : GradientStaticBlock(b.in, gb);
        ExpectSameBits(a, b, ga, gb, kNumTileSums, "gradient");
        EXPECT_TRUE(SameBits(Chi2Block(a.in), Chi2Block(b.in))) << n << " loss " << loss;
        EXPECT_TRUE(SameBits(Chi2Block(a.in), sa[kSumChi2])) << n << " loss " << loss;
      }
    }
  }
}

// The model pass writes the c2 whose residuals the χ² pass sums: from ModelBlock's values, the
// χ² summed in the point loops' lanes and order (per vector, column l + 4's square added to
// column l's, fused, then into lane l of 4, folded as (l0 + l1) + (l2 + l3), times w/σ² once) is
// Chi2Block's to the bit, on separable and array columns and a partial last vector. Runs on the
// copy this CPU takes.
TEST(ModelPointTermsTest, ModelBlockValuesAreTheOnesTheChi2PassSums) {
  std::mt19937_64 rng(7);
  for (int n : {5, 64, 99, kMaxBlock}) {
    for (bool laminar : {true, false}) {
      Block b(rng, n, laminar, /*weighted=*/false);
      std::vector<double> model(static_cast<size_t>(n));
      ModelBlock(b.in, model.data());
      // Per vector of kLanes columns, the squares of lanes l and l + 4 are added first, fused
      // (fma(r_l, r_l, r_{l+4}²)), then into lane l.
      double lane[kLanes / 2] = {};
      for (int v = 0; v < n; v += kLanes) {
        for (int l = 0; l < kLanes / 2; ++l) {
          double r0[2] = {0.0, 0.0};
          for (int h = 0; h < 2; ++h) {
            const int c = v + l + h * kLanes / 2;
            if (c >= n) continue;
            r0[h] = b.data[static_cast<size_t>(c)] - model[static_cast<size_t>(c)];
          }
          lane[l] += std::fma(r0[0], r0[0], r0[1] * r0[1]);
        }
      }
      const double folded = (lane[0] + lane[1]) + (lane[2] + lane[3]);
      const double chi2 = folded * (b.in.uniform_weight * (b.in.inv_sigma * b.in.inv_sigma));
      EXPECT_TRUE(SameBits(chi2, Chi2Block(b.in))) << n << " laminar " << laminar;
      for (double m : model) EXPECT_GE(m, b.in.offset);  // c2 = offset + contrast·g1², contrast > 0
    }
  }
}

// The fold of the per-column angle sums against a scalar mirror of its documented order:
// per product, lane l (columns ≡ l mod 8) accumulates fma(sw·u_p, u_q, acc) (Jᵀr:
// fma(sr, u_p, acc)) over the vectors in column order, the lanes then combined as
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Bit for bit, in every copy that runs
// here, so a regrouping of the products (the fold runs a few parameters per pass over the
// columns) cannot change a fit.
TEST(ModelPointTermsTest, FoldGivesTheBitsOfItsLaneOrder) {
  const auto group = [](int p) { return p < 3 ? 0 : p < 6 ? 1 : 2; };
  std::mt19937_64 rng(314);
  for (int n : {8, 64, kMaxBlock}) {
    for (bool laminar : {true, false}) {
      Block b(rng, n, laminar, false);
      const int np = laminar ? 7 : 3;
      const auto u = [&](int q, int c) {
        return q < 3   ? b.e[q][static_cast<size_t>(c)]
               : q < 6 ? b.f[q - 3][static_cast<size_t>(c)]
                       : 1.0;
      };
      // sums: saa, sab, sbb, sag, sbg, sgg, sar, sbr, sgr
      const auto sw = [&](int g, int h, int c) {
        if (g > h) std::swap(g, h);
        const int k = g == 0 ? (h == 0 ? 0 : h == 1 ? 1 : 3) : g == 1 ? (h == 1 ? 2 : 4) : 5;
        return b.sums[k][static_cast<size_t>(c)];
      };
      const auto fold = [](const double* l) {
        return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
      };
      double jtj_ref[49] = {}, jtr_ref[7] = {};
      for (int p = 0; p < np; ++p) {
        double lr[kLanes] = {};
        for (int c = 0; c < n; ++c) {
          lr[c % kLanes] =
              std::fma(b.sums[6 + group(p)][static_cast<size_t>(c)], u(p, c), lr[c % kLanes]);
        }
        jtr_ref[p] = fold(lr) * b.in.inv_sigma;
        for (int q = p; q < np; ++q) {
          double lm[kLanes] = {};
          for (int c = 0; c < n; ++c) {
            lm[c % kLanes] = std::fma(sw(group(p), group(q), c) * u(p, c), u(q, c), lm[c % kLanes]);
          }
          jtj_ref[p * np + q] = fold(lm);
        }
      }
      for (const Copy* x : {&kBaseline, &kAvx2, &kAvx512}) {
        if (x == &kAvx2 && !HasAvx2Fma()) continue;
        if (x == &kAvx512 && !HasAvx512()) continue;
        double jtj[49] = {}, jtr[7] = {};
        (laminar ? x->fold_laminar : x->fold_static)(b.in, n, jtj, jtr);
        for (int p = 0; p < np; ++p) {
          EXPECT_TRUE(SameBits(jtr[p], jtr_ref[p])) << x->name << " Jᵀr " << p;
          for (int q = p; q < np; ++q) {
            EXPECT_TRUE(SameBits(jtj[p * np + q], jtj_ref[p * np + q]))
                << x->name << " JᵀJ " << p << "," << q << " n " << n;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace homodyne::model::detail
