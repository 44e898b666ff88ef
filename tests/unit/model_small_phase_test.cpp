// The small-phase shear factors (series in x², no sine) against long-double references and
// against the sine-based ShearFactors the kernel uses beyond kSmallPhase: the two paths
// must agree wherever the kernel may switch from one to the other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "model/shear_factors.h"

namespace homodyne::model {
namespace {

// sinc² and d(sinc²)/dx in long double (64-bit mantissa on x86-64), the series for tiny x.
void Reference(double xd, double* s, double* ds) {
  const long double x = xd;
  long double sinc, slope;
  if (std::fabs(xd) < 1e-4) {
    const long double z = x * x;
    sinc = 1.0L - z / 6.0L + z * z / 120.0L;
    slope = x * (-1.0L / 3.0L + z / 30.0L);
  } else {
    sinc = std::sin(x) / x;
    slope = (std::cos(x) - sinc) / x;
  }
  *s = static_cast<double>(sinc * sinc);
  *ds = static_cast<double>(2.0L * sinc * slope);
}

TEST(ModelSmallPhaseTest, SeriesMatchLongDoubleReferenceUpToTheBound) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-detail::kSmallPhase, detail::kSmallPhase);
  std::vector<double> x = {0.0,
                           -0.0,
                           1e-300,
                           -1e-12,
                           1e-5,
                           0.5,
                           1.0,
                           -2.0,
                           std::acos(-1.0),
                           3.99,
                           detail::kSmallPhase,
                           -detail::kSmallPhase};
  while (x.size() < 100003) x.push_back(u(rng));
  const int n = static_cast<int>(x.size());
  std::vector<double> s(n), ds(n), s_only(n);
  detail::SmallPhaseShearFactorsWithDerivative(x.data(), s.data(), ds.data(), n);
  detail::SmallPhaseShearFactors(x.data(), s_only.data(), n);
  double worst_s = 0.0, worst_ds = 0.0;
  for (int m = 0; m < n; ++m) {
    double rs, rds;
    Reference(x[m], &rs, &rds);
    // Absolute bounds: the alternating terms reach ~2.7 at |x| = 4, so a few ulp of that.
    ASSERT_LE(std::abs(s[m] - rs), 1e-15) << "x = " << x[m];
    ASSERT_LE(std::abs(ds[m] - rds), 2e-15) << "x = " << x[m];
    ASSERT_EQ(s[m], s_only[m]) << "x = " << x[m];  // the two entry points, same sinc²
    worst_s = std::max(worst_s, std::abs(s[m] - rs));
    worst_ds = std::max(worst_ds, std::abs(ds[m] - rds));
  }
  EXPECT_EQ(s[0], 1.0);  // x = 0: sinc² = 1, slope 0, exactly
  EXPECT_EQ(ds[0], 0.0);
  std::printf("worst |Δ sinc²| = %.3g, |Δ d sinc²/dx| = %.3g\n", worst_s, worst_ds);
}

TEST(ModelSmallPhaseTest, AgreesWithTheSineBasedFactorsWhereTheKernelSwitches) {
  // Around |x| = kSmallPhase the kernel moves from the series to sin(x)/x: the two agree
  // to rounding, so no step appears in c2 along a row.
  std::vector<double> x;
  for (int k = -200; k <= 200; ++k) {
    const double v = detail::kSmallPhase + k * 1e-3;
    x.push_back(v);
    x.push_back(-v);
  }
  const int n = static_cast<int>(x.size());
  std::vector<double> sn(n), cs(n), s_series(n), ds_series(n), s_sine(n), ds_sine(n);
  for (int m = 0; m < n; ++m) {
    sn[m] = std::sin(x[m]);
    cs[m] = std::cos(x[m]);
  }
  detail::SmallPhaseShearFactorsWithDerivative(x.data(), s_series.data(), ds_series.data(), n);
  detail::ShearFactorsWithDerivative(x.data(), sn.data(), cs.data(), s_sine.data(), ds_sine.data(),
                                     n);
  for (int m = 0; m < n; ++m) {
    EXPECT_NEAR(s_series[m], s_sine[m], 2e-15) << "x = " << x[m];
    EXPECT_NEAR(ds_series[m], ds_sine[m], 4e-15) << "x = " << x[m];
  }
}

}  // namespace
}  // namespace homodyne::model
