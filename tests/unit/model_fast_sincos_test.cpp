#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "model/fast_sincos.h"

namespace homodyne::model {
namespace {

// Worst error in units of the spacing of doubles near max(|value|, tiny): relative accuracy
// for sin near 0, absolute ~ulp(1) elsewhere.
void CheckRange(double lo, double hi, int n, std::mt19937_64& rng, double* worst_rel,
                double* worst_abs) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> x(static_cast<size_t>(n)), s(x.size()), c(x.size()), s2(x.size());
  for (auto& v : x) v = u(rng);
  FastSinCos(x.data(), s.data(), c.data(), n);
  FastSin(x.data(), s2.data(), n);
  for (size_t m = 0; m < x.size(); ++m) {
    const double es = std::sin(x[m]), ec = std::cos(x[m]);
    ASSERT_EQ(s[m], s2[m]);
    *worst_abs = std::max({*worst_abs, std::abs(s[m] - es), std::abs(c[m] - ec)});
    if (std::abs(x[m]) < 0.7) {
      *worst_rel = std::max(*worst_rel, std::abs(s[m] - es) / std::abs(es));
    }
  }
}

TEST(FastSinCosTest, AccurateOverTheKernelRange) {
  std::mt19937_64 rng(11);
  double worst_rel = 0.0, worst_abs = 0.0;
  CheckRange(-1e-6, 1e-6, 20000, rng, &worst_rel, &worst_abs);
  CheckRange(-1.0, 1.0, 20000, rng, &worst_rel, &worst_abs);
  CheckRange(-10.0, 10.0, 20000, rng, &worst_rel, &worst_abs);
  CheckRange(-1e3, 1e3, 20000, rng, &worst_rel, &worst_abs);
  CheckRange(1e5, 1.6e6, 20000, rng, &worst_rel, &worst_abs);
  EXPECT_LT(worst_rel, 4.5e-16);  // ≤ 2 ulp relative near 0
  EXPECT_LT(worst_abs, 4.5e-16);  // ≤ 2 ulp(1) absolute
  std::printf("fast sin/cos: worst relative (|x|<0.7) %.3g, worst absolute %.3g\n", worst_rel,
              worst_abs);
}

TEST(FastSinCosTest, MultiplesOfHalfPiAndSpecialValues) {
  std::vector<double> x;
  for (int k = -2000; k <= 2000; ++k) x.push_back(k * 1.5707963267948966);
  x.push_back(0.0);
  x.push_back(-0.0);
  x.push_back(5e6);  // beyond the fast range → libm
  x.push_back(std::numeric_limits<double>::quiet_NaN());
  x.push_back(std::numeric_limits<double>::infinity());
  const int n = static_cast<int>(x.size());
  std::vector<double> s(x.size()), c(x.size());
  FastSinCos(x.data(), s.data(), c.data(), n);
  for (int m = 0; m < n - 5; ++m) {
    EXPECT_NEAR(s[static_cast<size_t>(m)], std::sin(x[static_cast<size_t>(m)]), 4.5e-16);
    EXPECT_NEAR(c[static_cast<size_t>(m)], std::cos(x[static_cast<size_t>(m)]), 4.5e-16);
  }
  EXPECT_EQ(s[static_cast<size_t>(n - 5)], 0.0);
  EXPECT_EQ(c[static_cast<size_t>(n - 5)], 1.0);
  EXPECT_EQ(s[static_cast<size_t>(n - 3)], std::sin(5e6));
  EXPECT_TRUE(std::isnan(s[static_cast<size_t>(n - 2)]));
  EXPECT_TRUE(std::isnan(s[static_cast<size_t>(n - 1)]));
}

// The libm fall-back runs whenever any one argument is out of the fast range, wherever it sits
// in the array (the range check is a vectorised reduction over the whole array).
TEST(FastSinCosTest, OneArgumentOutOfRangeAnywhereTakesLibm) {
  const double specials[] = {5e6, -3e7, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity()};
  for (const int n : {1, 3, 8, 13, 130}) {
    for (int at = 0; at < n; at += std::max(1, n / 4)) {
      for (const double special : specials) {
        std::vector<double> x(static_cast<size_t>(n)), s(x.size()), s2(x.size()), c(x.size());
        for (int m = 0; m < n; ++m) x[static_cast<size_t>(m)] = 0.37 * m - 2.0;
        x[static_cast<size_t>(at)] = special;
        FastSin(x.data(), s.data(), n);
        FastSinCos(x.data(), s2.data(), c.data(), n);
        for (int m = 0; m < n; ++m) {
          const double xm = x[static_cast<size_t>(m)];
          const double sm = s[static_cast<size_t>(m)], cm = c[static_cast<size_t>(m)];
          if (m == at && std::isnan(std::sin(xm))) {
            EXPECT_TRUE(std::isnan(sm) && std::isnan(cm)) << "n " << n << " at " << at;
          } else if (m == at) {
            EXPECT_EQ(sm, std::sin(xm)) << "n " << n << " at " << at << " x " << xm;
            EXPECT_EQ(cm, std::cos(xm)) << "n " << n << " at " << at << " x " << xm;
          } else {
            EXPECT_NEAR(sm, std::sin(xm), 4.5e-16);
            EXPECT_NEAR(cm, std::cos(xm), 4.5e-16);
          }
          EXPECT_TRUE(sm == s2[static_cast<size_t>(m)] ||
                      (std::isnan(sm) && std::isnan(s2[static_cast<size_t>(m)])));
        }
      }
    }
  }
}

}  // namespace
}  // namespace homodyne::model
