#include "model/scaling_estimator.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::model {

std::string_view ToString(ScalingQuantiles rule) {
  return rule == ScalingQuantiles::kQ95 ? "Q95" : "Q90";
}

ValuePercentiles ValuePercentilesOf(ScalingQuantiles rule) {
  if (rule == ScalingQuantiles::kQ90) return {10.0, 90.0};
  // xpcsjax passes value_quantile_low = 1 − quantile and multiplies by 100: the same
  // doubles here (5.000000000000004, 95), so the interpolation weights are numpy's.
  constexpr double kQuantile = 0.95;
  return {(1.0 - kQuantile) * 100.0, kQuantile * 100.0};
}

ScalingEstimate CombineScaling(ScalingQuantiles rule, double floor, double ceiling,
                               const ScalingBounds& bounds) {
  ScalingEstimate est;
  est.offset = std::clamp(floor, bounds.offset_lower, bounds.offset_upper);
  // Q90 takes the contrast above the clipped offset; Q95 estimates both without bounds and
  // clips afterwards, so its contrast is above the unclipped floor.
  const double base = rule == ScalingQuantiles::kQ90 ? est.offset : floor;
  est.contrast = std::clamp(ceiling - base, bounds.contrast_lower, bounds.contrast_upper);
  return est;
}

std::string FewScalingPointsMessage(std::int64_t count, std::string_view angle) {
  return fmt::format(
      "{}: {} finite point(s) for the Q95 quantile estimate of its contrast and offset; at "
      "least {} are needed",
      angle, count, kMinScalingPoints);
}

ScalingEstimate ScalingFromFewPoints(ScalingQuantiles rule, std::int64_t count,
                                     std::string_view angle, const ScalingBounds& bounds) {
  if (rule == ScalingQuantiles::kQ95) ThrowBadInput(FewScalingPointsMessage(count, angle));
  return {0.5 * (bounds.contrast_lower + bounds.contrast_upper),
          0.5 * (bounds.offset_lower + bounds.offset_upper)};
}

std::vector<double> TwoComponentLagTimes(std::int64_t n, double dt) {
  std::vector<double> t(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  // Compiled without FMA contraction (homodyne_model): two roundings, as numpy's.
  for (std::size_t m = 0; m < t.size(); ++m) t[m] = static_cast<double>(m) * dt + dt;
  return t;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) ThrowBadInput("percentile of an empty sample");
  // Two order statistics by selection (O(n)) instead of a full sort: the same values.
  const double q = p / 100.0;
  const double h = static_cast<double>(values.size() - 1) * q;
  const double floor_h = std::floor(h);
  auto lo = static_cast<size_t>(floor_h);
  if (lo >= values.size() - 1) return *std::max_element(values.begin(), values.end());
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(values.begin(), nth, values.end());
  const double g = h - floor_h;
  const double a = *nth;
  const double b = *std::min_element(nth + 1, values.end());
  const double diff = b - a;
  // numpy's _lerp: a + diff·g, computed from the upper end when g ≥ 0.5.
  return g >= 0.5 ? b - diff * (1.0 - g) : a + diff * g;
}

ScalingEstimate EstimateScaling(std::span<const double> abs_dt, std::span<const double> c2,
                                const ScalingBounds& bounds, ScalingQuantiles rule,
                                std::string_view angle) {
  if (abs_dt.size() != c2.size()) {
    ThrowBadInput(
        fmt::format("scaling estimator: {} time lags but {} c2 values", abs_dt.size(), c2.size()));
  }
  std::vector<double> dt, values;
  for (size_t e = 0; e < c2.size(); ++e) {
    if (!std::isfinite(c2[e])) continue;
    dt.push_back(abs_dt[e]);
    values.push_back(c2[e]);
  }
  const auto n = static_cast<std::int64_t>(values.size());
  if (n < kMinScalingPoints) return ScalingFromFewPoints(rule, n, angle, bounds);
  const double hi = Percentile(dt, 80.0);
  const double lo = Percentile(dt, 20.0);
  std::vector<double> far, near;
  for (size_t e = 0; e < values.size(); ++e) {
    if (dt[e] >= hi) far.push_back(values[e]);
    if (dt[e] <= lo) near.push_back(values[e]);
  }
  const ValuePercentiles p = ValuePercentilesOf(rule);
  const double floor = Percentile(far.size() >= 10 ? far : values, p.low);
  const double ceiling = Percentile(near.size() >= 10 ? near : values, p.high);
  return CombineScaling(rule, floor, ceiling, bounds);
}

}  // namespace homodyne::model
