// The copies of the two-component kernel's element-wise loops (src/model/heterodyne_block.cpp):
// the AVX-512 copy (8 lanes) and the 4-lane clones must give the same bits on the same block,
// so that a result does not depend on which CPU of a cluster computed it. Random blocks with
// partial vectors, masked points (with NaN data) and one or two tiles per call.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "model/heterodyne_block.h"
#include "model/point_terms.h"

namespace homodyne::model::detail {
namespace {

bool SameBits(const double* a, const double* b, int n) {
  return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(double)) == 0;
}

struct Tile {
  HetTileInput in;
  alignas(64) double cos_theta[kHetBlock] = {}, sin_theta[kHetBlock] = {};
  double chi2_lanes[4] = {0.0, 0.0, 0.0, 0.0};
};

void FillBlock(std::mt19937_64& rng, int n, HetBlockColumns& col) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto fill = [&](double* v, double lo, double hi) {
    for (int e = 0; e < kHetBlock; ++e) v[e] = e < n ? lo + (hi - lo) * u(rng) : 0.0;
  };
  col.n = n;
  fill(col.hr, 0.0, 1.0);
  fill(col.hs, 0.0, 1.0);
  fill(col.rr, 0.0, 1.0);
  fill(col.ss, 0.0, 1.0);
  fill(col.m2, 0.0, 0.5);
  fill(col.norm, 0.3, 1.0);
  for (int e = 0; e < kHetBlock; ++e) col.inv_norm[e] = e < n ? 1.0 / col.norm[e] : 0.0;
  for (double* v : {col.v, col.dhr, col.dhs, col.kr, col.ks, col.dni, col.dnj, col.dsi0, col.dsi1,
                    col.dsi2, col.dsj0, col.dsj1, col.dsj2}) {
    fill(v, -2.0, 2.0);
  }
  for (auto& v : col.dp) fill(v, -3.0, 3.0);
  for (auto& v : col.fj) fill(v, -1.0, 1.0);
}

// The tile's data and weights as HetTileDerivatives stages them, masked points with NaN data.
void FillTile(std::mt19937_64& rng, int n, Tile& t, HetTileScratch& sc) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int e = 0; e < kHetBlock; ++e) {
    const bool live = e < n;
    t.cos_theta[e] = live ? 2.0 * u(rng) - 1.0 : 0.0;
    t.sin_theta[e] = live ? 2.0 * u(rng) - 1.0 : 0.0;
    sc.w[e] = live && e % 5 != 0 ? 0.5 + u(rng) : 0.0;
    sc.data[e] = !live            ? 0.0
                 : sc.w[e] != 0.0 ? 1.0 + 0.3 * u(rng)
                                  : std::numeric_limits<double>::quiet_NaN();
  }
  t.in.contrast = 0.1 + 0.7 * u(rng);
  t.in.offset = 0.9 + 0.2 * u(rng);
  t.in.inv_sigma = 1.0 / (0.01 + u(rng));
  t.in.a = u(rng);
  t.in.da = -u(rng);
  t.in.cos_theta = t.cos_theta;
  t.in.sin_theta = t.sin_theta;
  t.in.chi2_lanes = t.chi2_lanes;
}

void ExpectSameScratch(const HetTileScratch& a, const HetTileScratch& b, int n) {
  EXPECT_TRUE(SameBits(a.w, b.w, n));
  EXPECT_TRUE(SameBits(a.wr, b.wr, n));
  EXPECT_TRUE(SameBits(a.uc, b.uc, n));
  EXPECT_TRUE(SameBits(a.term, b.term, n));
  for (int k = 0; k < kHetCoefs; ++k) EXPECT_TRUE(SameBits(a.c[k], b.c[k], n)) << k;
}

TEST(ModelHeterodyneBlock, Avx512CopyGivesTheBitsOfTheFourLaneCopy) {
  if (!HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(5);
  for (int n : {kHetBlock, 37, 5, 1}) {
    SCOPED_TRACE(n);
    auto col = std::make_unique<HetBlockColumns>();
    FillBlock(rng, n, *col);
    Tile tiles[2];
    auto narrow = std::make_unique<HetTileScratch[]>(2);
    auto wide = std::make_unique<HetTileScratch[]>(2);
    for (int k = 0; k < 2; ++k) {
      FillTile(rng, n, tiles[k], narrow[k]);
      wide[k] = narrow[k];
      HetCoefficientsV4(*col, tiles[k].in, narrow[k], n);
      HetCoefficientsAvx512(*col, tiles[k].in, wide[k], n);
      ExpectSameScratch(narrow[k], wide[k], n);
      for (int e = 0; e < n; ++e) {  // masked points give zeros, not NaN
        if (narrow[k].w[e] == 0.0) {
          EXPECT_EQ(narrow[k].wr[e], 0.0);
          EXPECT_EQ(narrow[k].term[e], 0.0);
        }
      }
    }
    for (int count : {1, 2}) {
      for (bool normal : {false, true}) {
        auto a = std::make_unique<HetBlockSums>();
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        for (auto& s : a->s) {
          for (double& x : s) x = u(rng);
        }
        for (auto& t : a->t) {
          for (double& x : t) x = u(rng);
        }
        auto b = std::make_unique<HetBlockSums>(*a);
        const HetTileScratch* pn[2] = {&narrow[0], &narrow[1]};
        const HetTileScratch* pw[2] = {&wide[0], &wide[1]};
        HetAddTilesV4(n, pn, count, *a, normal);
        HetAddTilesAvx512(n, pw, count, *b, normal);
        for (int k = 0; k < kHetPairs; ++k) EXPECT_TRUE(SameBits(a->s[k], b->s[k], n)) << k;
        for (int k = 0; k < kHetCoefs; ++k) EXPECT_TRUE(SameBits(a->t[k], b->t[k], n)) << k;
      }
    }
  }
}

}  // namespace
}  // namespace homodyne::model::detail
