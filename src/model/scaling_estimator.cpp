#include "model/scaling_estimator.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace homodyne::model {

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
                                const ScalingBounds& bounds) {
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
  ScalingEstimate est;
  if (values.size() < 100) {
    est.contrast = 0.5 * (bounds.contrast_lower + bounds.contrast_upper);
    est.offset = 0.5 * (bounds.offset_lower + bounds.offset_upper);
    return est;
  }
  const double hi = Percentile(dt, 80.0);
  const double lo = Percentile(dt, 20.0);
  std::vector<double> far, near;
  for (size_t e = 0; e < values.size(); ++e) {
    if (dt[e] >= hi) far.push_back(values[e]);
    if (dt[e] <= lo) near.push_back(values[e]);
  }
  const double offset = Percentile(far.size() >= 10 ? far : values, 10.0);
  est.offset = std::clamp(offset, bounds.offset_lower, bounds.offset_upper);
  const double ceiling = Percentile(near.size() >= 10 ? near : values, 90.0);
  est.contrast = std::clamp(ceiling - est.offset, bounds.contrast_lower, bounds.contrast_upper);
  return est;
}

}  // namespace homodyne::model
