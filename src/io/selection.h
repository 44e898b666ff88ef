// The pure selection rules of the loader (no file access): q-bin selection for both
// layouts, phi normalisation and filtering, frame slicing, the loader time grid and the
// basic diagonal correction. See docs/data.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/log.h"
#include "io/load_options.h"

namespace homodyne::io {

// aps_old: indices into dqlist of the kept bins, in the order homodyne keeps them.
//   q_sel = dqlist[argmin |dqlist - target_q|] (first minimum);
//   keep |dqlist - q_sel| <= tolerance_fraction * q_sel in file order;
//   if fewer than 5 qualify: the min(10, M) bins closest to q_sel, ordered by distance
//   (ties by file order).
std::vector<std::size_t> SelectApsOldBins(std::span<const double> dqlist, double target_q,
                                          double tolerance_fraction);

// APS-U: indices into `pair_q` (the q of each valid (q, phi) pair in sorted-key order)
// kept: the exact ring |q - q_sel| < 1e-10 around the pair q closest to target_q, in pair
// order. Empty input gives an empty result.
std::vector<std::size_t> SelectApsUPairs(std::span<const double> pair_q, double target_q);

// phi mod 360 with floor semantics, then minus 360 if > 180: result in (-180, 180].
double NormalizePhi(double phi_degrees);

// True if the normalised angle lies in the range (normalising its ends).
bool PhiInRange(double phi_normalized, const PhiRange& range);

// Indices of the angles kept by phi_filtering (original order). Disabled or no range:
// all. No angle matching: all, with a warning.
std::vector<std::size_t> FilterPhi(std::span<const double> phi_normalized,
                                   const PhiFilterOptions& filter, const Logger& logger);

// Frame slice, 0-based half-open [begin, begin + count) into a matrix of side `frames`.
struct FrameRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  std::int64_t start_frame = 1;  // resolved, 1-based
  std::int64_t end_frame = 0;    // resolved, 1-based inclusive
};

// start < 1 → 1; end < 0 → last; end > frames → frames; end < start → kBadInput
// (naming `file`).
FrameRange ResolveFrames(std::int64_t start_frame, std::int64_t end_frame, std::int64_t frames,
                         const std::string& file = {});

// numpy.linspace(0, dt*(n-1), n): t[i] = i * ((dt*(n-1))/(n-1)), t[n-1] = dt*(n-1).
std::vector<double> LoaderTimeGrid(double dt, std::int64_t n);

// Replaces the diagonal of a row-major n×n matrix with the "basic" correction (spec
// §1.6) computed from the first off-diagonals; n <= 1 leaves it unchanged.
void ApplyBasicDiagonalCorrection(std::span<double> matrix, std::int64_t n);

// The corrected diagonal from the super- and sub-diagonals (length n-1 each).
std::vector<double> CorrectedDiagonal(std::span<const double> super_diagonal,
                                      std::span<const double> sub_diagonal);

}  // namespace homodyne::io
