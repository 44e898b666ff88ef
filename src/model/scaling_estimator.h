// Quantile estimate of one angle's contrast and offset from its data (physics spec §1.9;
// heterodyne spec §3 for the Q95 variant), used by the per-angle modes that start from or
// hold the data's scaling.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne::model {

struct ScalingBounds {
  double contrast_lower = 0.0;
  double contrast_upper = 1.0;
  double offset_lower = 0.5;
  double offset_upper = 1.5;
};

struct ScalingEstimate {
  double contrast = 0.0;
  double offset = 0.0;
};

// The two variants of the estimator. Both take, over the points (|t1 − t2|, c2) of one
// angle with non-finite c2 dropped: hi = P80(Δ), lo = P20(Δ);
// floor = P_low(c2[Δ ≥ hi]) (≥ 10 points, else over all c2);
// ceiling = P_high(c2[Δ ≤ lo]) (≥ 10 points, else over all c2).
//   kQ90 (homodyne; two_component's averaged mode): P_low = P10, P_high = P90;
//        offset = clip(floor), contrast = clip(ceiling − offset);
//        fewer than 100 points → the bounds' midpoints.
//   kQ95 (two_component's constant mode and its two-stage path's stage 1, as xpcsjax's
//        estimate_per_angle_scaling_from_quantile at quantile 0.95): P_low = P(100·(1 − 0.95))
//        (numpy's 5.000000000000004, as xpcsjax computes it), P_high = P95;
//        contrast = clip(ceiling − floor) (from the unclipped floor), offset = clip(floor);
//        fewer than 100 points → bad input (ScalingFromFewPoints).
enum class ScalingQuantiles { kQ90, kQ95 };
std::string_view ToString(ScalingQuantiles rule);  // "Q90" | "Q95"

// Fewer points than this and the estimate is not made from the data.
inline constexpr std::int64_t kMinScalingPoints = 100;

struct ValuePercentiles {
  double low = 10.0;   // of the far points: the floor
  double high = 90.0;  // of the near points: the ceiling
};
ValuePercentiles ValuePercentilesOf(ScalingQuantiles rule);

// The estimate from the floor and ceiling percentiles, clipped as `rule` says.
ScalingEstimate CombineScaling(ScalingQuantiles rule, double floor, double ceiling,
                               const ScalingBounds& bounds);

// An angle with `count` < kMinScalingPoints points: kQ90's midpoints; kQ95 throws a
// bad-input Error with FewScalingPointsMessage.
ScalingEstimate ScalingFromFewPoints(ScalingQuantiles rule, std::int64_t count,
                                     std::string_view angle, const ScalingBounds& bounds);
// kQ95's message: `angle` (e.g. "angle 2 (phi = 40 deg)"), the count and the minimum.
std::string FewScalingPointsMessage(std::int64_t count, std::string_view angle);

// numpy.percentile(values, p) with the default "linear" method: sorted x, h = (n−1)·p/100,
// x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) (numpy's two-sided lerp). Throws on empty input.
double Percentile(std::vector<double> values, double p);

// The frame times from which two_component's estimates take their lags, as xpcsjax's
// model holds them: t_m = m·dt + dt, m = 0..n−1 (the product rounded, then the sum). The
// lags of equal nominal size decide by their last bit whether they reach the P80/P20
// thresholds, so the grid is xpcsjax's arange, not the loader's linspace plus dt
// (TwoComponentTimes), whose step dt·(n−1)/(n−1) can differ from dt in the last bit.
std::vector<double> TwoComponentLagTimes(std::int64_t n, double dt);

// The estimator (the rule above) over the points of one angle; `angle` names it in
// kQ95's error.
ScalingEstimate EstimateScaling(std::span<const double> abs_dt, std::span<const double> c2,
                                const ScalingBounds& bounds = {},
                                ScalingQuantiles rule = ScalingQuantiles::kQ90,
                                std::string_view angle = "the angle");

}  // namespace homodyne::model
