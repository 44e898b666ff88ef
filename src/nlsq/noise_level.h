// The noise level of each angle's data, measured without a model, so that a reduced χ² in its
// units is ≈ 1 at the minimum of a correctly specified model and ≫ 1 where the model does not
// describe the data.
//
// Along the lag-preserving direction (i, j) → (i+1, j+1) the two-time surface changes only
// through ageing, slowly for stationary or slowly ageing dynamics, while the noise of
// neighbouring points is independent. The third difference along that direction,
//     d = c2[i,j] − 3·c2[i+1,j+1] + 3·c2[i+2,j+2] − c2[i+3,j+3]        (i < j, fit grid),
// cancels the surface up to its quadratic trend and has variance 20·σ². First differences
// are not enough: at strong ageing (alpha = −1.2, D0 = 2·10⁴, 60 frames) their spread
// overstates σ 3–7×, second differences by up to 25 %; third differences stay within 4 %
// (docs/robustness.md). Points next to the diagonal are used as any other (the loader's
// corrected diagonal itself is not a fitted point).
//
// The scale of d is robust: σ₀ from the median of |d| (MAD-like, exact for Gaussian noise),
// then σ² from the mean of d² over |d| ≤ 3·σ₀·√20, corrected for that truncation. Both come
// from one histogram of |d| per angle on a fixed binary grid (64 bins per octave, from 2⁻⁵⁰ to
// 2¹⁷; the median and the truncated moment interpolate within a bin, well below 1 % of σ),
// so the whole estimate is one data pass, integer counts summed over the ranks (the same
// bits for any rank or thread count and in core or streamed), and a small exchange: a
// rank's last three rows of each angle need the next three rows, which the following ranks
// send it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "io/distributed_loader.h"
#include "nlsq/block_stream.h"
#include "nlsq/streaming_scaling.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

struct AngleNoise {
  double sigma = 0.0;            // the estimate; 0 when not measurable
  std::int64_t differences = 0;  // third differences it rests on
  bool measurable = false;       // enough differences and a level above round-off
  std::string reason;            // why not measurable (empty when it is)
};

struct NoiseLevel {
  std::vector<AngleNoise> angles;  // one per kept angle
  bool all_measurable() const;
};

// Fewer third differences than this (an angle of fewer than ~17 frames) leave the level
// unmeasured.
inline constexpr std::int64_t kMinNoiseDifferences = 100;
// A level below this fraction of the angle's largest |c2| is round-off (noise-free data).
inline constexpr double kNoiseRoundOffFraction = 1e-9;

// Collective. The estimate from data visited window by window (the same visitor as the
// streaming scaling estimate: tiles in loader indices, whole rows, in plan order).
NoiseLevel EstimateNoiseOverWindows(const Comm& comm, const io::LocalData& layout,
                                    const std::function<void(const ScalingWindowVisit&)>& windows);
// Collective: in core (the rank's loaded values).
NoiseLevel EstimateNoise(const Comm& comm, const io::LocalData& local);
// Collective: streamed (one pass over the rank's windows).
NoiseLevel EstimateNoiseStreaming(const Comm& comm, const io::LocalData& layout,
                                  BlockStream& stream);

// The robust scale from a histogram of |d| (exposed for tests): `counts` has
// NoiseHistogramBins() entries (below the grid, the grid's bins, above it); `norm` is the
// standard deviation of d in units of σ (√20 for third differences). Returns σ, or 0 when the
// median lies below the grid (noise-free) or above it.
int NoiseHistogramBins();
int NoiseHistogramBin(double abs_difference);
double NoiseFromHistogram(std::span<const std::int64_t> counts, double norm);

}  // namespace homodyne::nlsq
