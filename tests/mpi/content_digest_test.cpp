// The data digest that identifies a checkpoint's data: the same from the in-core load, the
// stream (windows of any size) and the serial loader's full matrices, at any rank count; and
// different for a file of the same shape, size and modification time whose values differ
// (a copy with its times kept).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <string>

#include "io/content_digest.h"
#include "io/distributed_loader.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/block_stream.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"
#include "synth_fixture.h"

namespace homodyne {
namespace {

io::LoadOptions WriteOnRoot(const Comm& world, const std::string& path, std::uint64_t seed) {
  const config::Config cfg = testing::SynthConfig("static", "3000, -0.6, 20");
  synth::SynthOptions o;
  o.output = path;
  o.force = true;
  o.frames = 37;
  o.phi_deg = {0, 40, 80};
  o.noise = 0.01;
  o.seed = seed;
  RunCollectively(world, [&] {
    if (world.rank() == 0) synth::WriteSyntheticDataset(cfg, o);
  });
  world.Barrier();
  io::LoadOptions lo;
  lo.path = path;
  lo.dt = 0.1;
  lo.first_row = true;
  return lo;
}

TEST(ContentDigest, SameForEveryWayOfReadingTheData) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "content_digest");
  const io::LoadOptions lo = WriteOnRoot(world, dir.file("a.h5"), 4);
  const io::LocalData local = io::LoadDistributed(world, lo, Logger::Silent());
  const std::string in_core = io::DigestLocalData(world, local);
  EXPECT_EQ(in_core.size(), 32u);
  const io::LocalData layout = io::LoadDistributedLayout(world, lo, Logger::Silent());
  for (const std::int64_t window : {std::int64_t{1}, std::int64_t{97}, std::int64_t{1} << 40}) {
    nlsq::BlockStream stream(
        world, layout,
        std::min<std::int64_t>(window, std::max<std::int64_t>(local.local_points(), 1)), 100);
    EXPECT_EQ(nlsq::DigestStreamedData(world, layout, stream), in_core) << "window " << window;
  }
  // The serial loader's full matrices: the fitted points, diagonal and first row.
  const io::Dataset data = io::LoadDataset(lo, Logger::Silent());
  EXPECT_EQ(io::DigestMatrices(data.meta, data.c2), in_core);
  // Without the first rows the digest covers less, and says so by differing.
  io::LoadOptions no_row = lo;
  no_row.first_row = false;
  EXPECT_NE(io::DigestLocalData(world, io::LoadDistributed(world, no_row, Logger::Silent())),
            in_core);
}

// Two files of one shape with the same size and modification time (cp -p of converted data)
// are told apart by their values; one value changed in a copy changes the digest.
TEST(ContentDigest, TellsFilesOfOneShapeAndTimeApart) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "content_digest_pair");
  const io::LoadOptions a = WriteOnRoot(world, dir.file("a.h5"), 4);
  const io::LoadOptions b = WriteOnRoot(world, dir.file("b.h5"), 5);
  if (world.is_root()) {
    struct stat st {};
    ASSERT_EQ(::stat(a.path.c_str(), &st), 0);
    const utimbuf times{st.st_atime, st.st_mtime};
    ASSERT_EQ(::utime(b.path.c_str(), &times), 0);
  }
  world.Barrier();
  const io::LocalData la = io::LoadDistributed(world, a, Logger::Silent());
  io::LocalData lb = io::LoadDistributed(world, b, Logger::Silent());
  const std::string da = io::DigestLocalData(world, la);
  EXPECT_NE(da, io::DigestLocalData(world, lb));
  // The same values as a, but one point changed by one ulp on whichever rank holds it.
  io::LocalData changed = la;
  if (!changed.values.empty() && world.rank() == world.size() - 1) {
    changed.values.back() = std::nextafter(changed.values.back(), 2.0);
  }
  EXPECT_NE(io::DigestLocalData(world, changed), da);
  EXPECT_EQ(io::DigestLocalData(world, la), da);
}

}  // namespace
}  // namespace homodyne
