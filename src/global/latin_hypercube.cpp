#include "global/latin_hypercube.h"

#include <numeric>
#include <utility>

#include "core/errors.h"
#include "core/random.h"

namespace homodyne::global {

std::vector<std::vector<double>> LatinHypercube(int n_points, const std::vector<double>& lower,
                                                const std::vector<double>& upper,
                                                std::uint64_t seed) {
  HOMODYNE_CHECK(n_points >= 1 && lower.size() == upper.size(), "invalid Latin hypercube request");
  const std::size_t dims = lower.size();
  const auto n = static_cast<std::size_t>(n_points);
  std::vector<std::vector<double>> points(n, std::vector<double>(dims));
  for (std::size_t d = 0; d < dims; ++d) {
    CounterRng rng(seed, /*stream_a=*/0x4c4853ULL /* "LHS" */, /*stream_b=*/d);
    std::vector<std::size_t> strata(n);
    std::iota(strata.begin(), strata.end(), std::size_t{0});
    for (std::size_t i = n; i > 1; --i) {  // Fisher–Yates
      const auto j = static_cast<std::size_t>(rng.NextU64() % i);
      std::swap(strata[i - 1], strata[j]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double u = (static_cast<double>(strata[i]) + rng.Uniform()) / static_cast<double>(n);
      points[i][d] = lower[d] + u * (upper[d] - lower[d]);
    }
  }
  return points;
}

std::vector<std::vector<double>> UniformPoints(int n_points, const std::vector<double>& lower,
                                               const std::vector<double>& upper,
                                               std::uint64_t seed) {
  HOMODYNE_CHECK(n_points >= 1 && lower.size() == upper.size(), "invalid uniform-points request");
  const std::size_t dims = lower.size();
  std::vector<std::vector<double>> points(static_cast<std::size_t>(n_points),
                                          std::vector<double>(dims));
  for (std::size_t i = 0; i < points.size(); ++i) {
    CounterRng rng(seed, /*stream_a=*/0x554e49ULL /* "UNI" */, /*stream_b=*/i);
    for (std::size_t d = 0; d < dims; ++d) {
      points[i][d] = lower[d] + rng.Uniform() * (upper[d] - lower[d]);
    }
  }
  return points;
}

}  // namespace homodyne::global
