// The two-component kernel distributed over ranks: each rank evaluates its blocks of rows
// (one chunk per block) and the chunk partials are combined along the global block tree
// (ReproducibleTileSum), as the fit combines them. χ², JᵀWJ and JᵀWr must have the bits of
// the same sum over all blocks in one process, at 1 and 2 ranks and 1 and 2 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "heterodyne_problem.h"
#include "model/heterodyne_kernel.h"
#include "mpi_test_env.h"
#include "parallel/tile_sum.h"

namespace homodyne::model {
namespace {

// Tiles of rows [first_row, last_row) of every angle, with chunk starts at the block
// boundaries (blocks of `rows_per_block` rows); returns the tiles and fills `starts`.
std::vector<RowTile> BlockTiles(const testing::HeterodyneProblem& pb, int first_block,
                                int last_block, int rows_per_block, std::vector<int>& starts) {
  std::vector<RowTile> out;
  for (int b = first_block; b < last_block; ++b) {
    starts.push_back(static_cast<int>(out.size()));
    for (const RowTile& t : pb.tiles) {
      if (t.row / rows_per_block == b) out.push_back(t);
    }
  }
  return out;
}

std::vector<double> Reduced(const Comm& comm, const testing::HeterodyneProblem& pb, int n_blocks,
                            int rows_per_block, int first, int last, int threads) {
  std::vector<int> starts;
  const std::vector<RowTile> tiles = BlockTiles(pb, first, last, rows_per_block, starts);
  KernelOptions opt;
  opt.threads = threads;
  opt.chunk_tile_starts = starts;
  if (starts.empty()) opt.chunk_tile_starts = {0};
  const HeterodyneKernel kernel(pb.grid, tiles, opt);
  const std::size_t width = kernel.partial_size(true);
  std::vector<double> partials(static_cast<std::size_t>(kernel.num_chunks()) * width);
  EXPECT_TRUE(kernel.ChunkPartials(pb.x, true, partials));
  return ReproducibleTileSum(
      comm, n_blocks, first, last, width, [&](std::int64_t block, std::span<double> out) {
        const auto o = static_cast<std::size_t>(block - first) * width;
        std::copy_n(partials.begin() + static_cast<std::ptrdiff_t>(o), width, out.begin());
      });
}

TEST(HeterodyneKernelMpi, SameBitsOnEveryRankCountAndThreadCount) {
  const Comm& world = homodyne::testing::TestEnvironment().world();
  const testing::HeterodyneProblem pb = testing::MakeHeterodyneProblem(77, 36, 3);
  // The factorised decays are on: their choice must not depend on the split either.
  ASSERT_GT(HeterodyneKernel(pb.grid, pb.tiles).CountSeparableDecay(pb.x).factorised, 0);
  const int rows_per_block = 3;
  const int n_blocks = (36 + rows_per_block - 1) / rows_per_block;
  // One process, every block.
  const Comm self(MPI_COMM_SELF);
  const std::vector<double> serial = Reduced(self, pb, n_blocks, rows_per_block, 0, n_blocks, 1);
  // The blocks split over the ranks (uneven: rank r gets more with r).
  const int p = world.size(), r = world.rank();
  const int first = n_blocks * r * (r + 1) / (p * (p + 1));
  const int last = n_blocks * (r + 1) * (r + 2) / (p * (p + 1));
  for (int threads : {1, 2}) {
    const std::vector<double> distributed =
        Reduced(world, pb, n_blocks, rows_per_block, first, last, threads);
    ASSERT_EQ(distributed.size(), serial.size());
    EXPECT_EQ(std::memcmp(distributed.data(), serial.data(), serial.size() * sizeof(double)), 0)
        << threads << " thread(s), " << p << " rank(s)";
  }
}

}  // namespace
}  // namespace homodyne::model
