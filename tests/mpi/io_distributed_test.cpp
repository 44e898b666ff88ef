// Distributed loading under MPI: the union of every rank's points equals the serial
// loader's matrices bitwise, the partition is balanced and identical on every rank, and
// failures are raised on all ranks together.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "io/writers.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "parallel/collective.h"
#include "test_data.h"

namespace homodyne::io {
namespace {

using testing::TestEnvironment;

const std::string kRealFile = testing::TestDataPath("real/bnl_twotime_350.h5");

// A file name agreed by all ranks, in a temporary directory that rank 0 removes at the end.
class SharedPath {
 public:
  SharedPath(const Comm& comm, const std::string& stem)
      : dir_(comm, "io_" + stem), path_(dir_.file(stem + ".h5")) {}
  const std::string& str() const { return path_; }

 private:
  testing::MpiTempDir dir_;
  std::string path_;
};

// Pseudo-random symmetric full matrix.
std::vector<double> NoisyMatrix(int f, unsigned seed) {
  std::vector<double> c(static_cast<std::size_t>(f) * f);
  unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 7;
  for (int i = 0; i < f; ++i) {
    for (int j = i; j < f; ++j) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const double v = 1.0 + 0.3 * std::exp(-0.05 * std::abs(i - j)) +
                       1e-3 * (static_cast<double>(s >> 11) * 0x1.0p-53 - 0.5);
      c[i * f + j] = v;
      c[j * f + i] = v;
    }
  }
  return c;
}

// Checks the distributed result against the serial loader on every rank.
void ExpectMatchesSerial(const Comm& comm, const LoadOptions& options) {
  const LocalData local = LoadDistributed(comm, options, Logger::Silent());
  const Dataset serial = LoadDataset(options, Logger::Silent());
  const std::int64_t n = serial.meta.n_frames;
  ASSERT_EQ(local.meta.n_frames, n);
  ASSERT_EQ(local.meta.n_angles(), serial.meta.n_angles());
  EXPECT_EQ(local.meta.t, serial.meta.t);
  EXPECT_EQ(local.meta.phi_values(), serial.meta.phi_values());
  EXPECT_EQ(local.meta.q_physics, serial.meta.q_physics);

  // The plan is the same on every rank: compare rank 0's encoding.
  std::vector<std::int64_t> mine = local.plan.Encode();
  std::vector<std::int64_t> root = mine;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_INT64_T, 0, comm.get());
  EXPECT_EQ(mine, root);
  EXPECT_EQ(local.plan, PartitionPlan(static_cast<std::int32_t>(serial.meta.n_angles()), 1, n - 1,
                                      comm.size()));
  EXPECT_EQ(local.plan.n_ranks(), comm.size());

  // Every local point equals the serial matrix bitwise; the tiles are the plan's.
  std::vector<RowTile> tiles;
  for (const LocalTile& t : local.tiles) {
    tiles.push_back(t.tile);
    for (std::int64_t c = 0; c < t.tile.count; ++c) {
      const double got = local.values[t.offset + static_cast<std::size_t>(c)];
      const double want =
          serial.at(static_cast<std::size_t>(t.tile.angle), t.tile.row, t.tile.col_begin + c);
      ASSERT_EQ(got, want) << "angle " << t.tile.angle << " (" << t.tile.row << ", "
                           << t.tile.col_begin + c << ")";
    }
  }
  EXPECT_EQ(tiles, local.plan.TilesFor(comm.rank()));
  ASSERT_EQ(local.diagonal.size(), serial.meta.n_angles());
  for (std::size_t k = 0; k < local.diagonal.size(); ++k) {
    ASSERT_EQ(local.diagonal[k].size(), static_cast<std::size_t>(n));
    for (std::int64_t m = 0; m < n; ++m) ASSERT_EQ(local.diagonal[k][m], serial.at(k, m, m));
  }

  // Union: the counts add up to all points; balance within one block of the plan.
  std::int64_t count = local.local_points();
  std::int64_t total = 0;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  MPI_Allreduce(&count, &total, 1, MPI_INT64_T, MPI_SUM, comm.get());
  MPI_Allreduce(&count, &lo, 1, MPI_INT64_T, MPI_MIN, comm.get());
  MPI_Allreduce(&count, &hi, 1, MPI_INT64_T, MPI_MAX, comm.get());
  const auto n_ang = static_cast<std::int64_t>(serial.meta.n_angles());
  EXPECT_EQ(total, n_ang * (n - 1) * (n - 2) / 2);
  std::int64_t largest_block = 0;
  for (int b = 0; b < local.plan.n_blocks(); ++b) {
    largest_block = std::max(largest_block, local.plan.block_points(b));
  }
  EXPECT_LE(hi - lo, largest_block);

  // The first rows, if asked for: C[0, j] as the serial matrix holds it (j = 0: the
  // corrected diagonal), the same with or without the values and from the data in memory;
  // nothing else changes.
  EXPECT_TRUE(local.first_row.empty());
  LoadOptions with_row = options;
  with_row.first_row = true;
  const LocalData rows = LoadDistributed(comm, with_row, Logger::Silent());
  ASSERT_EQ(rows.first_row.size(), serial.meta.n_angles());
  for (std::size_t k = 0; k < rows.first_row.size(); ++k) {
    ASSERT_EQ(rows.first_row[k].size(), static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(rows.first_row[k][static_cast<std::size_t>(j)], serial.at(k, 0, j))
          << "angle " << k << " j " << j;
    }
  }
  EXPECT_EQ(rows.values, local.values);
  EXPECT_EQ(rows.diagonal, local.diagonal);
  EXPECT_EQ(LoadDistributedLayout(comm, with_row, Logger::Silent()).first_row, rows.first_row);
  const DatasetView view = ViewOf(serial);
  EXPECT_EQ(DistributeInMemory(comm, view, /*first_row=*/true).first_row, rows.first_row);
  EXPECT_TRUE(DistributeInMemory(comm, view).first_row.empty());
}

TEST(DistributedLoad, RealLegacyFileMatchesSerialBitwise) {
  LoadOptions o;
  o.path = kRealFile;
  o.dt = 1.0;
  ExpectMatchesSerial(TestEnvironment().world(), o);
  o.start_frame = 20;
  o.end_frame = 300;
  ExpectMatchesSerial(TestEnvironment().world(), o);
}

TEST(DistributedLoad, SyntheticLzfApsUFileWithSlicingAndPhiFilter) {
  const Comm& world = TestEnvironment().world();
  SharedPath path(world, "apsu_lzf");
  const int f = 90;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    std::vector<std::vector<double>> mats;
    for (unsigned b = 0; b < 8; ++b) mats.push_back(NoisyMatrix(f, b + 1));
    WriteApsU(path.str(), {0.0054, 0.0080}, {0.0, 45.0, 90.0, 135.0}, {1, 2, 3, 4, 5, 6, 7, 8},
              mats, /*lzf=*/true);
  });
  world.Barrier();
  LoadOptions o;
  o.path = path.str();
  o.dt = 0.01;
  o.start_frame = 4;
  o.end_frame = 77;
  o.phi_filter.enabled = true;
  o.phi_filter.ranges = {{-10.0, 50.0}, {130.0, 140.0}};
  ExpectMatchesSerial(world, o);
  const LocalData local = LoadDistributed(world, o, Logger::Silent());
  EXPECT_THAT(local.meta.phi_values(), ::testing::ElementsAre(0.0, 45.0, 135.0));
  EXPECT_EQ(local.meta.n_frames, 74);
}

// A legacy file that stores the LOWER triangle (the loader must not assume upper).
TEST(DistributedLoad, LowerTriangleStorageMatchesSerialAndTruth) {
  const Comm& world = TestEnvironment().world();
  SharedPath path(world, "lower");
  const int f = 64;
  const std::vector<double> truth0 = NoisyMatrix(f, 11);
  const std::vector<double> truth1 = NoisyMatrix(f, 12);
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    hid_t file = H5Fcreate(path.str().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hsize_t ldims[2] = {1, 2};
    hid_t lspace = H5Screate_simple(2, ldims, nullptr);
    const double q[2] = {0.0054, 0.0054};
    const double phi[2] = {-90.0, 270.0};
    for (auto [name, data] : {std::pair{"/xpcs/dqlist", q}, std::pair{"/xpcs/dphilist", phi}}) {
      hid_t d = H5Dcreate2(file, name, H5T_IEEE_F64LE, lspace, lcpl, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
      H5Dclose(d);
    }
    const hsize_t mdims[2] = {static_cast<hsize_t>(f), static_cast<hsize_t>(f)};
    hid_t mspace = H5Screate_simple(2, mdims, nullptr);
    int k = 0;
    for (const auto* truth : {&truth0, &truth1}) {
      std::vector<double> lower(static_cast<std::size_t>(f) * f, 0.0);
      for (int i = 0; i < f; ++i) {
        for (int j = 0; j <= i; ++j) lower[i * f + j] = (*truth)[i * f + j];
      }
      const std::string name = "/exchange/C2T_all/c2_0000" + std::to_string(++k);
      hid_t d = H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, mspace, lcpl, H5P_DEFAULT,
                           H5P_DEFAULT);  // float32 storage: converted to float64 on read
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, lower.data());
      H5Dclose(d);
    }
    H5Sclose(mspace);
    H5Sclose(lspace);
    H5Pclose(lcpl);
    H5Fclose(file);
  });
  world.Barrier();
  LoadOptions o;
  o.path = path.str();
  o.dt = 1.0;
  ExpectMatchesSerial(world, o);
  const LocalData local = LoadDistributed(world, o, Logger::Silent());
  EXPECT_THAT(local.meta.phi_values(), ::testing::ElementsAre(-90.0, -90.0));
  for (const LocalTile& t : local.tiles) {
    const auto& truth = t.tile.angle == 0 ? truth0 : truth1;
    const double want = static_cast<float>(truth[t.tile.row * f + t.tile.col_begin]);
    EXPECT_EQ(local.values[t.offset], want);
  }
}

TEST(DistributedLoad, MissingFileFailsOnEveryRank) {
  const Comm& world = TestEnvironment().world();
  LoadOptions o;
  o.path = "/nonexistent/dir/data.h5";
  o.dt = 1.0;
  try {
    LoadDistributed(world, o, Logger::Silent());
    FAIL() << "expected an error on rank " << world.rank();
  } catch (const Error& e) {
    EXPECT_TRUE(IsAgreed(e));
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.context().file, o.path);
  }
}

TEST(DistributedLoad, NonFiniteValueFailsOnEveryRankWithTheSameMessage) {
  const Comm& world = TestEnvironment().world();
  SharedPath path(world, "nan");
  const int f = 40;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    std::vector<double> bad = NoisyMatrix(f, 3);
    bad[30 * f + 35] = bad[35 * f + 30] = std::numeric_limits<double>::quiet_NaN();  // late rows
    bad[2 * f + 5] = bad[5 * f + 2] = std::numeric_limits<double>::infinity();       // early rows
    WriteApsOld(path.str(), {0.0054, 0.0054}, {0.0, 90.0}, {NoisyMatrix(f, 2), bad});
  });
  world.Barrier();
  LoadOptions o;
  o.path = path.str();
  o.dt = 1.0;
  try {
    LoadDistributed(world, o, Logger::Silent());
    FAIL() << "expected an error on rank " << world.rank();
  } catch (const Error& e) {
    EXPECT_TRUE(IsAgreed(e));
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00002");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("NaN/Inf in bin 1"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(": 2 non-finite values"));
  }
}

// A non-finite value on the first row (outside the fitted points and the first
// off-diagonal) fails only if the first rows are asked for, on every rank alike, with or
// without the values.
TEST(DistributedLoad, NonFiniteFirstRowValueFailsOnlyIfTheRowIsRead) {
  const Comm& world = TestEnvironment().world();
  SharedPath path(world, "nan_row");
  const int f = 30;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    std::vector<double> bad = NoisyMatrix(f, 5);
    bad[0 * f + 17] = bad[17 * f + 0] = std::numeric_limits<double>::quiet_NaN();
    WriteApsOld(path.str(), {0.0054, 0.0054}, {0.0, 90.0}, {NoisyMatrix(f, 4), bad});
  });
  world.Barrier();
  LoadOptions o;
  o.path = path.str();
  o.dt = 1.0;
  EXPECT_NO_THROW(LoadDistributed(world, o, Logger::Silent()));
  o.first_row = true;
  for (const bool values : {true, false}) {
    try {
      if (values) {
        LoadDistributed(world, o, Logger::Silent());
      } else {
        LoadDistributedLayout(world, o, Logger::Silent());
      }
      ADD_FAILURE() << "expected an error on rank " << world.rank() << ", values " << values;
    } catch (const Error& e) {
      EXPECT_TRUE(IsAgreed(e));
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00002");
      EXPECT_THAT(e.what(), ::testing::HasSubstr("NaN/Inf in bin 1"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr(": 1 non-finite values on the row of frame 1"));
    }
  }
}

}  // namespace
}  // namespace homodyne::io
