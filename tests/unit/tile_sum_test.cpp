#include "parallel/tile_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "core/random.h"

namespace homodyne {
namespace {

// Tile partials whose sum is sensitive to summation order (magnitudes 1e-8 .. 1e8).
void Partial(std::int64_t tile, std::span<double> out) {
  CounterRng rng(11, static_cast<std::uint64_t>(tile), 0);
  for (double& v : out) v = (rng.Uniform() - 0.5) * std::pow(10.0, 16.0 * rng.Uniform() - 8.0);
}

bool BitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(TileSum, AnyContiguousPartitionGivesIdenticalBits) {
  const std::int64_t total = 37;
  const std::size_t width = 5;
  const auto whole =
      CombineTreeNodes(total, width, SumTreeNodesInRange(total, 0, total, width, Partial));
  // A naive left-to-right sum differs in the last bits for these magnitudes, which shows
  // the test is sensitive to the order.
  std::vector<double> naive(width, 0.0);
  for (std::int64_t t = 0; t < total; ++t) {
    std::vector<double> p(width);
    Partial(t, p);
    for (std::size_t i = 0; i < width; ++i) naive[i] += p[i];
  }
  EXPECT_FALSE(BitwiseEqual(whole, naive));
  for (int parts = 2; parts <= 7; ++parts) {
    std::vector<TileTreeNode> nodes;
    for (int r = 0; r < parts; ++r) {
      const std::int64_t b = total * r / parts;
      const std::int64_t e = total * (r + 1) / parts;
      auto mine = SumTreeNodesInRange(total, b, e, width, Partial);
      nodes.insert(nodes.end(), mine.begin(), mine.end());
    }
    EXPECT_TRUE(BitwiseEqual(whole, CombineTreeNodes(total, width, nodes))) << parts << " parts";
  }
}

TEST(TileSum, RangeNeedsOnlyLogarithmicallyManyNodes) {
  auto nodes = SumTreeNodesInRange(1 << 20, 12345, 987654, 1, Partial);
  EXPECT_LE(nodes.size(), 2u * 20u);
}

TEST(TileSum, MissingTileIsAnError) {
  auto nodes = SumTreeNodesInRange(10, 0, 4, 2, Partial);
  auto more = SumTreeNodesInRange(10, 5, 10, 2, Partial);
  nodes.insert(nodes.end(), more.begin(), more.end());
  EXPECT_THROW(CombineTreeNodes(10, 2, nodes), Error);
}

}  // namespace
}  // namespace homodyne
