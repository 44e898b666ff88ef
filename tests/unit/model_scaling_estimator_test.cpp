#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "model/scaling_estimator.h"

namespace homodyne::model {
namespace {

TEST(PercentileTest, NumpyLinearInterpolation) {
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({5, 4, 3, 2, 1}, 10), 1.4);  // h = 0.4
  EXPECT_DOUBLE_EQ(Percentile({10, 0, 5}, 80), 8.0);       // h = 1.6 → 5 + 0.6·5
  EXPECT_DOUBLE_EQ(Percentile({7}, 90), 7.0);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2}, 100), 3.0);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2}, 0), 1.0);
  EXPECT_THROW(Percentile({}, 50), Error);
}

TEST(ScalingEstimatorTest, FewerThan100PointsGiveBoundMidpoints) {
  std::vector<double> dt(99, 1.0), c2(99, 1.2);
  const auto est = EstimateScaling(dt, c2, {0.0, 1.0, 0.5, 1.5});
  EXPECT_DOUBLE_EQ(est.contrast, 0.5);
  EXPECT_DOUBLE_EQ(est.offset, 1.0);
  // Non-finite c2 values are dropped before counting.
  std::vector<double> dt2(100, 1.0), c22(100, 1.2);
  c22[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_DOUBLE_EQ(EstimateScaling(dt2, c22).offset, 1.0);
}

TEST(ScalingEstimatorTest, HandCheckedQuantiles) {
  // Δ = 0…199. hi = P80 = 159.2 → far points Δ = 160…199, c2 = 1 + Δ/1000;
  // P10 of those 40 values: h = 3.9 → 1.163 + 0.9·0.001 = 1.1639.
  // lo = P20 = 39.8 → near points Δ = 0…39, c2 = 2 − Δ/100 (1.61…2.00);
  // P90: h = 35.1 → 1.96 + 0.1·0.01 = 1.961; contrast = 1.961 − 1.1639 = 0.7971.
  std::vector<double> dt, c2;
  for (int m = 0; m < 200; ++m) {
    dt.push_back(m);
    if (m >= 160) {
      c2.push_back(1.0 + m / 1000.0);
    } else if (m < 40) {
      c2.push_back(2.0 - m / 100.0);
    } else {
      c2.push_back(1.5);
    }
  }
  const auto est = EstimateScaling(dt, c2);
  EXPECT_NEAR(est.offset, 1.1639, 1e-12);
  EXPECT_NEAR(est.contrast, 0.7971, 1e-12);
}

TEST(ScalingEstimatorTest, ResultsAreClippedToBounds) {
  std::vector<double> dt, c2;
  for (int m = 0; m < 150; ++m) {
    dt.push_back(m);
    c2.push_back(m < 75 ? 3.0 : 0.1);  // offset 0.1 → 0.5; contrast 2.5 → 1
  }
  const auto est = EstimateScaling(dt, c2, {0.0, 1.0, 0.5, 1.5});
  EXPECT_DOUBLE_EQ(est.offset, 0.5);
  EXPECT_DOUBLE_EQ(est.contrast, 1.0);
  EXPECT_THROW(EstimateScaling(std::vector<double>{1.0}, std::vector<double>{}), Error);
}

}  // namespace
}  // namespace homodyne::model
