// An independent oracle of the per-angle quantile estimators (heterodyne spec §3, physics
// spec §1.9), written from the spec rather than from src/model/scaling_estimator.cpp: numpy's
// linear percentile from a fully sorted copy, then the lag regions and the clipping rules.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace homodyne::testing {

// numpy.percentile(values, p), method "linear": virtual index h = (n − 1)·p/100 into the
// sorted values, linear interpolation between its neighbours.
inline double NumpyPercentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double h = static_cast<double>(values.size() - 1) * (p / 100.0);
  const auto below = static_cast<std::size_t>(std::floor(h));
  if (below + 1 >= values.size()) return values.back();
  const double g = h - std::floor(h);
  return values[below] + g * (values[below + 1] - values[below]);
}

struct OracleScaling {
  double contrast = 0.0;
  double offset = 0.0;
};

// q95 true: xpcsjax's constant-mode estimator (P5/P95, the contrast above the unclipped
// floor, both clipped afterwards); false: homodyne's Q90 (P10/P90, the offset clipped before
// the contrast). Non-finite c2 dropped; needs ≥ 100 finite points (the caller checks).
inline OracleScaling OracleEstimate(const std::vector<double>& abs_dt,
                                    const std::vector<double>& c2, bool q95,
                                    double contrast_lower = 0.0, double contrast_upper = 1.0,
                                    double offset_lower = 0.5, double offset_upper = 1.5) {
  std::vector<double> dt, v;
  for (std::size_t i = 0; i < c2.size(); ++i) {
    if (std::isfinite(c2[i])) {
      dt.push_back(abs_dt[i]);
      v.push_back(c2[i]);
    }
  }
  const double hi = NumpyPercentile(dt, 80.0);
  const double lo = NumpyPercentile(dt, 20.0);
  std::vector<double> far, near;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dt[i] >= hi) far.push_back(v[i]);
    if (dt[i] <= lo) near.push_back(v[i]);
  }
  const double p_low = q95 ? (1.0 - 0.95) * 100.0 : 10.0;
  const double p_high = q95 ? 95.0 : 90.0;
  const double floor = NumpyPercentile(far.size() >= 10 ? far : v, p_low);
  const double ceiling = NumpyPercentile(near.size() >= 10 ? near : v, p_high);
  OracleScaling out;
  out.offset = std::clamp(floor, offset_lower, offset_upper);
  out.contrast = std::clamp(ceiling - (q95 ? floor : out.offset), contrast_lower, contrast_upper);
  return out;
}

}  // namespace homodyne::testing
