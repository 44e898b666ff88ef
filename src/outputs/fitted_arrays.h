// The arrays of fitted_data.{h5,npz} for one angle, from its data c and the model's g1²
// (physics spec §5.2–5.3). One definition for both files, so that they hold the same bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace homodyne::outputs {

// The post-hoc scaling of one angle: c ≈ a·(one + g) + b by least squares over all N² points
// (one = 1 for NLSQ, 0 for CMC), clipped for CMC to a ∈ [0.01, 1], b ∈ [0.5, 1.5].
struct PostHocScaling {
  double a = 0.0, b = 0.0;
  double a_unclipped = 0.0;
};

inline PostHocScaling FitPostHocScaling(std::span<const double> c, std::span<const double> g,
                                        double one, bool cmc) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t p = 0; p < c.size(); ++p) {
    const double x = one + g[p];
    sx += x;
    sy += c[p];
    sxx += x * x;
    sxy += x * c[p];
  }
  const double m = static_cast<double>(c.size());
  const double den = m * sxx - sx * sx;
  PostHocScaling s;
  s.a = den != 0.0 ? (m * sxy - sx * sy) / den : 0.0;
  s.b = (sy - s.a * sx) / m;
  s.a_unclipped = s.a;
  if (cmc) {
    s.a = std::clamp(s.a, 0.01, 1.0);
    s.b = std::clamp(s.b, 0.5, 1.5);
  }
  return s;
}

// The N×N arrays after c2_exp.
enum class FittedCube { kRaw, kScaled, kSolver, kResiduals, kNormalized };

// One point of one cube: c the data, g the model's g1², (contrast, offset) the solver's pair.
inline double FittedCubeValue(FittedCube cube, double c, double g, double one,
                              const PostHocScaling& s, double contrast, double offset, bool cmc) {
  const auto scaled = [&] { return s.a * (one + g) + s.b; };
  switch (cube) {
    case FittedCube::kRaw:
      return one + g;
    case FittedCube::kScaled:
      return scaled();
    case FittedCube::kSolver:
      return offset + contrast * g;
    case FittedCube::kResiduals:
      return c - scaled();
    case FittedCube::kNormalized:
      if (c != 0.0) return (c - scaled()) / (0.05 * c);
      return cmc ? (c - scaled()) / 0.05 : 0.0;
  }
  return 0.0;
}

}  // namespace homodyne::outputs
