// Broadcast of vectors and strings (parallel/broadcast.h) at 1 and 2 ranks: every rank ends
// with the root's values, whatever it held before (longer, shorter or empty).
#include "parallel/broadcast.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_test_env.h"

namespace homodyne {
namespace {

using homodyne::testing::TestEnvironment;

TEST(Broadcast, EveryRankGetsTheRootsValues) {
  const Comm& world = TestEnvironment().world();
  const int last = world.size() - 1;
  std::vector<double> v =
      world.rank() == last ? std::vector<double>{1.5, -0.0, 1e-300} : std::vector<double>(7, 9.0);
  std::string s = world.rank() == last ? std::string("laminar_flow") : std::string(40, 'x');
  Broadcast(world, v, last);
  Broadcast(world, s, last);
  EXPECT_EQ(v, (std::vector<double>{1.5, -0.0, 1e-300}));
  EXPECT_EQ(s, "laminar_flow");
  std::vector<double> empty = world.is_root() ? std::vector<double>{} : std::vector<double>{2.0};
  std::string none = world.is_root() ? std::string() : std::string("stale");
  Broadcast(world, empty);
  Broadcast(world, none);
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace homodyne
