// Quantile estimate of one angle's contrast and offset from its data (physics spec §1.9),
// used by the "constant", "auto" (averaged) and "constant_averaged" per-angle modes.
#pragma once

#include <span>
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

// numpy.percentile(values, p) with the default "linear" method: sorted x, h = (n−1)·p/100,
// x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) (numpy's two-sided lerp). Throws on empty input.
double Percentile(std::vector<double> values, double p);

// Per-angle estimator over the points (|t1 − t2|, c2) of one angle:
//   drop non-finite c2; fewer than 100 left → bound midpoints;
//   hi = P80(Δ), lo = P20(Δ);
//   offset   = P10(c2[Δ ≥ hi]) (≥ 10 points, else P10(all c2)), clipped to the offset bounds;
//   ceiling  = P90(c2[Δ ≤ lo]) (≥ 10 points, else P90(all c2));
//   contrast = clip(ceiling − offset, contrast bounds).
ScalingEstimate EstimateScaling(std::span<const double> abs_dt, std::span<const double> c2,
                                const ScalingBounds& bounds = {});

}  // namespace homodyne::model
