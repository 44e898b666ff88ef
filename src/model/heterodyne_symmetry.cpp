#include "model/heterodyne_symmetry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace homodyne::model::heterodyne {

MirrorFraction MirrorSampleFraction(std::span<const double> physical, std::span<const double> times,
                                    std::array<double, 2> f0_bounds,
                                    std::array<double, 2> f1_bounds,
                                    std::array<double, 2> f3_bounds) {
  const std::size_t n = times.size();
  std::vector<double> target(n), e(n);
  for (std::size_t m = 0; m < n; ++m) target[m] = 1.0 - SampleFraction(times[m], physical);
  // The soft clip is close to the identity inside (0.05, 0.95): fitting the raw form
  // f0·e + f3 to the target is linear in (f0, f3) for a given f1, so f1 is scanned.
  constexpr int kGrid = 400;
  // f2 stays (it enters only with f0, and may be held).
  const double f2 = physical[het::kF2];
  MirrorFraction best;
  best.rms = std::numeric_limits<double>::infinity();
  for (int g = 0; g <= kGrid; ++g) {
    const double f1 = f1_bounds[0] + (f1_bounds[1] - f1_bounds[0]) * g / kGrid;
    double se = 0, st = 0, see = 0, set = 0;
    for (std::size_t m = 0; m < n; ++m) {
      e[m] = std::exp(std::clamp(f1 * (times[m] - f2), -kExpClip, kExpClip));
      se += e[m];
      st += target[m];
      see += e[m] * e[m];
      set += e[m] * target[m];
    }
    const double dn = static_cast<double>(n);
    const double det = dn * see - se * se;
    double f0 = det > 1e-12 * dn * see ? (dn * set - se * st) / det : 0.0;
    f0 = std::clamp(f0, f0_bounds[0], f0_bounds[1]);
    const double f3 = std::clamp((st - f0 * se) / dn, f3_bounds[0], f3_bounds[1]);
    double ss = 0.0;
    for (std::size_t m = 0; m < n; ++m) {
      const double d = SoftClip(f0 * e[m] + f3) - target[m];
      ss += d * d;
    }
    const double rms = std::sqrt(ss / dn);
    if (rms < best.rms) best = {f0, f1, f2, f3, rms};
  }
  return best;
}

std::vector<double> MirrorParameters(std::span<const double> physical,
                                     const MirrorFraction& fraction) {
  std::vector<double> m(physical.begin(), physical.end());
  for (int k = 0; k < 3; ++k) std::swap(m[het::kD0Ref + k], m[het::kD0Sample + k]);
  m[het::kF0] = fraction.f0;
  m[het::kF1] = fraction.f1;
  m[het::kF2] = fraction.f2;
  m[het::kF3] = fraction.f3;
  return m;
}

}  // namespace homodyne::model::heterodyne
