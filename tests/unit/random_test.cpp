#include "core/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace homodyne {
namespace {

TEST(CounterRng, SameIdentityGivesSameStream) {
  CounterRng a(42, 3, 1);
  CounterRng b(42, 3, 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
}

TEST(CounterRng, DifferentIdentitiesGiveDifferentStreams) {
  CounterRng base(42, 3, 1);
  CounterRng other_seed(43, 3, 1);
  CounterRng other_a(42, 4, 1);
  CounterRng other_b(42, 3, 2);
  const auto x = base.NextU64();
  EXPECT_NE(x, other_seed.NextU64());
  EXPECT_NE(x, other_a.NextU64());
  EXPECT_NE(x, other_b.NextU64());
}

TEST(CounterRng, ResumesExactlyFromItsState) {
  CounterRng rng(7, 0, 9);
  for (int i = 0; i < 13; ++i) rng.NextU64();  // stop in the middle of a block
  CounterRng resumed(rng.state());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(rng.NextU64(), resumed.NextU64());
}

TEST(CounterRng, UniformAndNormalMomentsMatch) {
  CounterRng rng(2024, 1, 0);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    su += u;
    const double z = rng.Normal();
    sn += z;
    sn2 += z * z;
  }
  // Means within 5 standard errors.
  EXPECT_NEAR(su / n, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
  EXPECT_NEAR(sn / n, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(sn2 / n, 1.0, 5.0 * std::sqrt(2.0 / n));
}

}  // namespace
}  // namespace homodyne
