#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/random.h"
#include "mpi_test_env.h"
#include "parallel/tile_sum.h"

namespace homodyne {
namespace {

void Partial(std::int64_t tile, std::span<double> out) {
  CounterRng rng(5, static_cast<std::uint64_t>(tile), 0);
  for (double& v : out) v = (rng.Uniform() - 0.5) * std::pow(10.0, 16.0 * rng.Uniform() - 8.0);
}

// The distributed total equals the single-process tree total bit for bit, whatever the
// number of ranks and however unevenly the tiles are spread.
TEST(ReproducibleTileSum, IndependentOfRankCountAndPartition) {
  const Comm& world = testing::TestEnvironment().world();
  const std::int64_t total = 101;
  const std::size_t width = 7;
  const auto serial =
      CombineTreeNodes(total, width, SumTreeNodesInRange(total, 0, total, width, Partial));
  const int p = world.size();
  for (int skew = 1; skew <= 3; ++skew) {
    // Uneven split: rank r gets a share proportional to (r+1)^skew.
    double weight_total = 0;
    for (int r = 0; r < p; ++r) weight_total += std::pow(r + 1.0, skew);
    double before = 0;
    for (int r = 0; r < world.rank(); ++r) before += std::pow(r + 1.0, skew);
    const auto b = static_cast<std::int64_t>(std::llround(total * before / weight_total));
    const auto e = static_cast<std::int64_t>(
        std::llround(total * (before + std::pow(world.rank() + 1.0, skew)) / weight_total));
    const auto distributed = ReproducibleTileSum(world, total, b, e, width, Partial);
    ASSERT_EQ(distributed.size(), width);
    EXPECT_EQ(std::memcmp(distributed.data(), serial.data(), width * sizeof(double)), 0)
        << "skew " << skew;
  }
}

}  // namespace
}  // namespace homodyne
