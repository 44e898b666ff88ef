#include "nlsq/row_subsets.h"

#include <algorithm>

namespace homodyne::nlsq {

int RowSubsetStride(std::int64_t points, std::int64_t frames, std::int64_t max_points) {
  if (max_points <= 0 || points <= max_points) return 1;
  const std::int64_t by_points = (points + max_points - 1) / max_points;
  const std::int64_t by_rows = std::max<std::int64_t>(1, frames / kMinRowSubsetRows);
  return static_cast<int>(std::min(by_points, by_rows));
}

std::int64_t RowSubsetPoints(int angles, std::int64_t frames, int stride) {
  std::int64_t per_angle = 0;
  for (std::int64_t row = 0; row + 1 < frames; row += std::max(stride, 1)) {
    per_angle += frames - 1 - row;
  }
  return per_angle * angles;
}

}  // namespace homodyne::nlsq
