#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "model/scaling_estimator.h"
#include "scaling_oracle.h"

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

// A deterministic pool of 400 points: lags 0…19.9 s in a scrambled order, c2 a decay with a
// ripple, so the percentiles fall between samples.
void RipplePool(std::vector<double>& dt, std::vector<double>& c2) {
  for (int i = 0; i < 400; ++i) {
    dt.push_back(((i * 37) % 200) * 0.1);
    c2.push_back(1.1 + 0.3 * std::exp(-dt.back() / 3.0) + 0.05 * std::sin(1.3 * i));
  }
}

TEST(ScalingEstimatorTest, Q95MatchesTheOracleAndDiffersFromQ90) {
  std::vector<double> dt, c2;
  RipplePool(dt, c2);
  const ScalingBounds wide{-10.0, 10.0, -10.0, 10.0};
  const auto q95 = EstimateScaling(dt, c2, wide, ScalingQuantiles::kQ95);
  const auto q90 = EstimateScaling(dt, c2, wide, ScalingQuantiles::kQ90);
  const auto o95 = testing::OracleEstimate(dt, c2, true, -10.0, 10.0, -10.0, 10.0);
  const auto o90 = testing::OracleEstimate(dt, c2, false, -10.0, 10.0, -10.0, 10.0);
  EXPECT_NEAR(q95.offset, o95.offset, 1e-14);
  EXPECT_NEAR(q95.contrast, o95.contrast, 1e-14);
  EXPECT_NEAR(q90.offset, o90.offset, 1e-14);
  EXPECT_NEAR(q90.contrast, o90.contrast, 1e-14);
  // xpcsjax's estimate_contrast_offset_from_quantiles on the same pool (numpy 2, unbounded,
  // value quantiles 1 − 0.95 and 0.95; and its defaults 0.1 / 0.9 with bounds [0, 1] and
  // [0.5, 1.5]): an oracle from outside this code base.
  EXPECT_NEAR(q95.contrast, 0.34433891795583027, 1e-12);
  EXPECT_NEAR(q95.offset, 1.0514471680990225, 1e-12);
  const auto q90_registry = EstimateScaling(dt, c2);
  EXPECT_NEAR(q90_registry.contrast, 0.3177210014033267, 1e-12);
  EXPECT_NEAR(q90_registry.offset, 1.0543685382734993, 1e-12);
  EXPECT_GT(std::abs(q95.contrast - q90.contrast), 1e-3);
  EXPECT_GT(std::abs(q95.offset - q90.offset), 1e-4);
}

TEST(ScalingEstimatorTest, Q95ContrastIsAboveTheUnclippedFloor) {
  // Floor 0.3 (below the offset bound 0.5), ceiling 1.0: Q95 clips the offset to 0.5 but
  // takes the contrast above the floor, 0.7; Q90 takes it above the clipped offset, 0.5.
  std::vector<double> dt, c2;
  for (int m = 0; m < 200; ++m) {
    dt.push_back(m);
    c2.push_back(m < 100 ? 1.0 : 0.3);
  }
  const ScalingBounds registry;
  const auto q95 = EstimateScaling(dt, c2, registry, ScalingQuantiles::kQ95);
  const auto q90 = EstimateScaling(dt, c2, registry, ScalingQuantiles::kQ90);
  EXPECT_DOUBLE_EQ(q95.offset, 0.5);
  EXPECT_NEAR(q95.contrast, 0.7, 1e-15);
  EXPECT_DOUBLE_EQ(q90.offset, 0.5);
  EXPECT_NEAR(q90.contrast, 0.5, 1e-15);
  const auto oracle = testing::OracleEstimate(dt, c2, true);
  EXPECT_DOUBLE_EQ(q95.offset, oracle.offset);
  EXPECT_DOUBLE_EQ(q95.contrast, oracle.contrast);
  // Both are clipped afterwards: a contrast above the upper bound becomes the bound.
  for (int m = 0; m < 100; ++m) c2[static_cast<std::size_t>(m)] = 2.0;
  const auto high = EstimateScaling(dt, c2, registry, ScalingQuantiles::kQ95);
  EXPECT_DOUBLE_EQ(high.contrast, 1.0);
  EXPECT_DOUBLE_EQ(high.offset, 0.5);
}

TEST(ScalingEstimatorTest, Q95NeedsAHundredFinitePoints) {
  std::vector<double> dt(99, 1.0), c2(99, 1.2);
  try {
    EstimateScaling(dt, c2, {}, ScalingQuantiles::kQ95, "angle 3 (phi = 40 deg)");
    ADD_FAILURE() << "no error for 99 points";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(e.message().find("angle 3 (phi = 40 deg): 99 finite point(s)"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("at least 100"), std::string::npos) << e.message();
  }
  // Non-finite values do not count; exactly 100 finite points are enough.
  std::vector<double> dt2(100, 1.0), c22(100, 1.2);
  c22[7] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(EstimateScaling(dt2, c22, {}, ScalingQuantiles::kQ95), Error);
  c22[7] = 1.2;
  EXPECT_NO_THROW(EstimateScaling(dt2, c22, {}, ScalingQuantiles::kQ95));
  // Q90 keeps the midpoints.
  EXPECT_DOUBLE_EQ(EstimateScaling(dt, c2, {}, ScalingQuantiles::kQ90).contrast, 0.5);
}

// two_component's lag grid is xpcsjax's arange(n)·dt + dt, two roundings, at dt and n
// where the loader's linspace step dt·(n−1)/(n−1) is not dt.
TEST(ScalingEstimatorTest, TwoComponentLagTimesAreArangeTimesDtPlusDt) {
  for (const auto& [n, dt] : {std::pair{50, 0.0033}, std::pair{49, 0.1}, std::pair{13, 0.1}}) {
    const std::vector<double> t = TwoComponentLagTimes(n, dt);
    ASSERT_EQ(t.size(), static_cast<std::size_t>(n));
    for (int m = 0; m < n; ++m) {
      const volatile double product = static_cast<double>(m) * dt;  // rounded, no FMA
      EXPECT_EQ(t[static_cast<std::size_t>(m)], product + dt) << n << " " << dt << " " << m;
    }
    EXPECT_EQ(t[0], dt);
  }
  EXPECT_TRUE(TwoComponentLagTimes(0, 0.1).empty());
}

}  // namespace
}  // namespace homodyne::model
