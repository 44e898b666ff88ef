// The row subsets the global stages screen and search on: every k-th row of each angle's
// upper triangle (each row with all its lags). Here, below the global stages, so that the
// memory plan can count what a streamed fit keeps of them in memory (XpcsProblem::OnRows).
#pragma once

#include <cstdint>

namespace homodyne::nlsq {

// Never fewer rows per angle than this, however large the data: the rows' points then grow
// with the frames N while a pass over all points grows with N².
inline constexpr std::int64_t kMinRowSubsetRows = 16;
// The scans' χ² grids and the start screen's velocity refinement on large data (global
// stages): every k-th row above this many points.
inline constexpr std::int64_t kScanMaxPoints = 200000;

// k for `points` points over `frames` time points screened on about `max_points` points:
// ⌈points / max_points⌉, at most frames / kMinRowSubsetRows; 1 (every row) when max_points
// ≤ 0 or points ≤ max_points.
int RowSubsetStride(std::int64_t points, std::int64_t frames, std::int64_t max_points);

// The pairs i < j on the rows 0, k, 2k, … of `angles` triangles of side `frames`.
std::int64_t RowSubsetPoints(int angles, std::int64_t frames, int stride);

}  // namespace homodyne::nlsq
