// Rejected input files: every error has the right kind and names the file and the
// dataset (or key) involved.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "io/dataset.h"
#include "io/writers.h"
#include "temp_dir.h"

namespace homodyne::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class BadInput : public ::testing::Test {
 protected:
  std::string File(const std::string& name) const { return dir_.file(name); }

  LoadOptions Options(const std::string& path) const {
    LoadOptions o;
    o.path = path;
    o.dt = 0.1;
    return o;
  }

  // Runs LoadDataset and returns the error it must raise.
  static Error LoadError(const LoadOptions& o) {
    try {
      LoadDataset(o, Logger::Silent());
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "expected an error for " << o.path;
    return Error(ErrorKind::kInternal, "none");
  }

  static std::vector<double> Matrix(int f, double value) {
    return std::vector<double>(static_cast<std::size_t>(f) * f, value);
  }

  const homodyne::testing::ScopedTempDir dir_{"io_bad_input"};  // one per test, removed after it
};

// Minimal raw HDF5 helpers for malformed files.
hid_t CreateRaw(const std::string& path) {
  return H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
}
void PutRaw(hid_t file, const std::string& path, std::vector<hsize_t> dims,
            const std::vector<double>& data, hid_t dcpl = H5P_DEFAULT) {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space, lcpl, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0) << path;
  if (!data.empty()) H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  H5Dclose(d);
  H5Sclose(space);
  H5Pclose(lcpl);
}
void PutLegacyLists(hid_t file, int m) {
  PutRaw(file, "/xpcs/dqlist", {1, static_cast<hsize_t>(m)}, std::vector<double>(m, 0.0054));
  PutRaw(file, "/xpcs/dphilist", {1, static_cast<hsize_t>(m)}, std::vector<double>(m, 0.0));
}

TEST_F(BadInput, MissingFile) {
  const Error e = LoadError(Options(File("nope.h5")));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, File("nope.h5"));
  EXPECT_THAT(e.what(), HasSubstr("not found"));
}

TEST_F(BadInput, NotAnHdf5File) {
  const std::string path = File("text.h5");
  std::ofstream(path) << "this is not HDF5\n";
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_THAT(e.what(), HasSubstr("not an HDF5 file"));
}

TEST_F(BadInput, UnknownLayoutListsWhatWasLookedFor) {
  const std::string path = File("other.h5");
  hid_t f = CreateRaw(path);
  PutRaw(f, "/exchange/data", {2, 2}, {1, 2, 3, 4});
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_THAT(e.what(), HasSubstr("/xpcs/qmap/dynamic_v_list_dim0"));
  EXPECT_THAT(e.what(), HasSubstr("/exchange/C2T_all"));
}

TEST_F(BadInput, MissingDataset) {
  const std::string path = File("apsu_missing.h5");
  WriteApsU(path, {0.0054}, {0.0, 90.0}, {1, 2}, {Matrix(8, 1.0), Matrix(8, 1.0)}, false);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(H5Ldelete(f, "/xpcs/twotime/processed_bins", H5P_DEFAULT), 0);
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/xpcs/twotime/processed_bins");
  EXPECT_THAT(e.what(), HasSubstr("missing dataset"));
}

TEST_F(BadInput, NonSquareMatrix) {
  const std::string path = File("nonsquare.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 1);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {5, 6}, std::vector<double>(30, 1.0));
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00001");
  EXPECT_THAT(e.what(), HasSubstr("found shape (5, 6)"));
}

TEST_F(BadInput, ThreeDimensionalMatrix) {
  const std::string path = File("cube.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 1);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {2, 2, 2}, std::vector<double>(8, 1.0));
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00001");
  EXPECT_THAT(e.what(), HasSubstr("3-D"));
}

TEST_F(BadInput, MismatchedListAndMatrixCounts) {
  const std::string path = File("mismatch.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 3);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {4, 4}, std::vector<double>(16, 1.0));
  PutRaw(f, "/exchange/C2T_all/c2_00002", {4, 4}, std::vector<double>(16, 1.0));
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().key, "/exchange/C2T_all");
  EXPECT_THAT(e.what(), HasSubstr("3 (q, phi) bins but the group holds 2 matrices"));

  const std::string path2 = File("mismatch_phi.h5");
  f = CreateRaw(path2);
  PutRaw(f, "/xpcs/dqlist", {1, 2}, {0.0054, 0.0054});
  PutRaw(f, "/xpcs/dphilist", {1, 3}, {0.0, 1.0, 2.0});
  PutRaw(f, "/exchange/C2T_all/c2_00001", {4, 4}, std::vector<double>(16, 1.0));
  H5Fclose(f);
  const Error e2 = LoadError(Options(path2));
  EXPECT_EQ(e2.kind(), ErrorKind::kBadInput);
  EXPECT_THAT(e2.what(), HasSubstr("mismatched list lengths"));
}

TEST_F(BadInput, NanInAMatrixNamesBinAndCount) {
  const std::string path = File("nan.h5");
  const int f = 12;
  std::vector<double> bad = Matrix(f, 1.0);
  bad[3 * f + 5] = bad[5 * f + 3] = std::nan("");  // stored once (upper triangle)
  bad[0 * f + 7] = bad[7 * f + 0] = std::numeric_limits<double>::infinity();
  WriteApsOld(path, {0.0054, 0.0054}, {0.0, 90.0}, {Matrix(f, 1.0), bad});
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00002");
  EXPECT_THAT(e.what(),
              HasSubstr("NaN/Inf in bin 1 (/exchange/C2T_all/c2_00002): 2 non-finite values"));
  // A frame slice that avoids the bad entries loads.
  LoadOptions o = Options(path);
  o.start_frame = 9;
  EXPECT_NO_THROW(LoadDataset(o, Logger::Silent()));
}

TEST_F(BadInput, EmptyPhiSelectionKeepsAllWithWarning) {
  const std::string path = File("phi.h5");
  WriteApsOld(path, {0.0054, 0.0054, 0.0054}, {0.0, 45.0, 90.0},
              {Matrix(6, 1.0), Matrix(6, 2.0), Matrix(6, 3.0)});
  LoadOptions o = Options(path);
  o.phi_filter.enabled = true;
  o.phi_filter.ranges = {{120.0, 130.0}};
  std::FILE* err = std::tmpfile();
  Logger logger(0, LogLevel::kInfo, err, err);
  const Dataset data = LoadDataset(o, logger);
  EXPECT_EQ(data.meta.n_angles(), 3u);
  std::rewind(err);
  char buf[4096] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, err);
  std::fclose(err);
  EXPECT_THAT(std::string(buf, n), HasSubstr("no angle lies in the target ranges"));
  o.phi_filter.ranges = {{40.0, 50.0}, {-1.0, 1.0}};
  const Dataset some = LoadDataset(o, Logger::Silent());
  EXPECT_THAT(some.meta.phi_values(), ::testing::ElementsAre(0.0, 45.0));
  EXPECT_EQ(some.at(1, 0, 1), 2.0);
  EXPECT_EQ(some.meta.q_physics, 0.0054);
}

TEST_F(BadInput, EndFrameBeforeStartFrame) {
  const std::string path = File("frames.h5");
  WriteApsOld(path, {0.0054}, {0.0}, {Matrix(20, 1.0)});
  LoadOptions o = Options(path);
  o.start_frame = 15;
  o.end_frame = 10;
  const Error e = LoadError(o);
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "end_frame");
}

TEST_F(BadInput, NegativeDt) {
  LoadOptions o = Options(File("whatever.h5"));
  o.dt = -0.5;
  const Error e = LoadError(o);
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().key, "dt");
  EXPECT_EQ(e.context().file, File("whatever.h5"));
}

TEST_F(BadInput, AbsurdFrameCountIsRejectedBeforeAllocating) {
  const std::string path = File("huge.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 1);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {64, 64};
  H5Pset_chunk(dcpl, 2, chunk);
  H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {1000000000ULL, 1000000000ULL}, {}, dcpl);
  H5Pclose(dcpl);
  {
    // One chunk written, one allocated (a matrix with no chunk at all is refused for that
    // alone).
    const hid_t d = H5Dopen2(f, "/exchange/C2T_all/c2_00001", H5P_DEFAULT);
    const hid_t fs = H5Dget_space(d);
    const hsize_t start[2] = {0, 0};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, chunk, nullptr);
    const hid_t ms = H5Screate_simple(2, chunk, nullptr);
    const std::vector<double> block(64 * 64, 1.0);
    EXPECT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, block.data()), 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
  }
  H5Fclose(f);
  EXPECT_LT(fs::file_size(path), 1u << 20);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/exchange/C2T_all/c2_00001");
  EXPECT_THAT(e.what(), HasSubstr("1000000000 x 1000000000 frames"));

  // Within max_frames but beyond the memory limit: rejected by the byte check.
  LoadOptions o = Options(path);
  o.max_frames = 2000000000;
  o.max_bytes = 1ULL << 30;
  const Error e2 = LoadError(o);  // even the 1e9-long time grid is refused
  EXPECT_EQ(e2.kind(), ErrorKind::kBadInput);
  EXPECT_THAT(e2.what(), HasSubstr("exceed the memory limit"));
  o.end_frame = 20000;  // 20000^2 doubles per matrix: refused before reading
  const Error e3 = LoadError(o);
  EXPECT_EQ(e3.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e3.context().file, path);
  EXPECT_THAT(e3.what(), HasSubstr("more than the limit"));
}

TEST_F(BadInput, TruncatedFileNamesTheFile) {
  const std::string good = File("good.h5");
  hid_t f = CreateRaw(good);
  PutLegacyLists(f, 1);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {40, 40}, Matrix(40, 1.0));
  H5Fclose(f);
  const std::string path = File("truncated.h5");
  fs::copy_file(good, path);
  fs::resize_file(path, fs::file_size(good) / 2);  // a transfer cut short
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_THAT(e.what(), HasSubstr("truncated"));
}

TEST_F(BadInput, StringDatatypesAreRejectedWithTheDatasetNamed) {
  const std::string path = File("strings.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 1);
  // A 2x2 matrix of fixed-length strings instead of numbers.
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, 4);
  const hsize_t dims[2] = {2, 2};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t d =
      H5Dcreate2(f, "/exchange/C2T_all/c2_00001", type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Ldelete(f, "/xpcs/dqlist", H5P_DEFAULT);
  const hsize_t list_dims[2] = {1, 1};
  hid_t list_space = H5Screate_simple(2, list_dims, nullptr);
  d = H5Dcreate2(f, "/xpcs/dqlist", type, list_space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Sclose(list_space);
  H5Pclose(lcpl);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/xpcs/dqlist");
  EXPECT_THAT(e.what(), HasSubstr("expected a numeric (float or integer) list, found strings"));

  // With a numeric q list, the string matrix itself is reported.
  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "/xpcs/dqlist", H5P_DEFAULT);
  PutRaw(f, "/xpcs/dqlist", {1, 1}, {0.0054});
  H5Fclose(f);
  const Error e2 = LoadError(Options(path));
  EXPECT_EQ(e2.context().key, "/exchange/C2T_all/c2_00001");
  EXPECT_THAT(e2.what(), HasSubstr("expected a numeric (float or integer) matrix"));
}

TEST_F(BadInput, NonFiniteQListNamesTheEntry) {
  const std::string path = File("inf_q.h5");
  hid_t f = CreateRaw(path);
  PutRaw(f, "/xpcs/dqlist", {1, 2}, {0.0054, std::numeric_limits<double>::infinity()});
  PutRaw(f, "/xpcs/dphilist", {1, 2}, {0.0, 90.0});
  PutRaw(f, "/exchange/C2T_all/c2_00001", {4, 4}, Matrix(4, 1.0));
  PutRaw(f, "/exchange/C2T_all/c2_00002", {4, 4}, Matrix(4, 1.0));
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().key, "/xpcs/dqlist");
  EXPECT_THAT(e.what(), HasSubstr("expected finite values, entry 1 is inf"));
}

TEST_F(BadInput, EmptyGroupAndEmptyListsAreRejected) {
  const std::string path = File("empty.h5");
  hid_t f = CreateRaw(path);
  PutRaw(f, "/xpcs/dqlist", {1, 0}, {});
  PutRaw(f, "/xpcs/dphilist", {1, 0}, {});
  H5Gclose(H5Gcreate2(f, "/exchange", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Gclose(H5Gcreate2(f, "/exchange/C2T_all", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_THAT(e.what(), HasSubstr("no (q, phi) bins in the file (empty list)"));

  // Lists present but the matrix group empty: the counts disagree.
  const std::string path2 = File("empty_group.h5");
  f = CreateRaw(path2);
  PutLegacyLists(f, 2);
  H5Gclose(H5Gcreate2(f, "/exchange", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Gclose(H5Gcreate2(f, "/exchange/C2T_all", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(f);
  const Error e2 = LoadError(Options(path2));
  EXPECT_EQ(e2.context().key, "/exchange/C2T_all");
  EXPECT_THAT(e2.what(), HasSubstr("group holds 0 matrices"));
}

TEST_F(BadInput, AbsurdListLengthIsRejectedBeforeReading) {
  const std::string path = File("long_list.h5");
  hid_t f = CreateRaw(path);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {1, 1024};
  H5Pset_chunk(dcpl, 2, chunk);
  PutRaw(f, "/xpcs/dqlist", {1, 10000000000ULL}, {}, dcpl);
  H5Pclose(dcpl);
  PutRaw(f, "/xpcs/dphilist", {1, 1}, {0.0});
  PutRaw(f, "/exchange/C2T_all/c2_00001", {4, 4}, Matrix(4, 1.0));
  H5Fclose(f);
  EXPECT_LT(fs::file_size(path), 1u << 20);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().key, "/xpcs/dqlist");
  EXPECT_THAT(e.what(), HasSubstr("refusing to read it"));
}

// Found by fuzz_h5_metadata: a header declaring oversized float elements made HDF5
// allocate n x element-size conversion buffers (gigabytes) before any check.
TEST_F(BadInput, OversizedElementTypeIsRejectedBeforeReading) {
  const std::string path = File("wide.h5");
  hid_t f = CreateRaw(path);
  PutLegacyLists(f, 1);
  PutRaw(f, "/exchange/C2T_all/c2_00001", {4, 4}, Matrix(4, 1.0));
  H5Ldelete(f, "/xpcs/dqlist", H5P_DEFAULT);
  hid_t type = H5Tcopy(H5T_IEEE_F64LE);
  ASSERT_GE(H5Tset_size(type, 64), 0);
  const hsize_t dims[2] = {1, 1};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  H5Dclose(H5Dcreate2(f, "/xpcs/dqlist", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(f);
  const Error e = LoadError(Options(path));
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, path);
  EXPECT_EQ(e.context().key, "/xpcs/dqlist");
  EXPECT_THAT(e.what(), HasSubstr("at most 16 bytes"));
}

// Found by fuzz_h5_metadata (UBSan): a processed bin id of INT64_MIN overflowed `id - 1`.
// Ids below 1 are skipped like any other invalid id.
TEST_F(BadInput, ExtremeApsUBinIdsAreSkippedWithoutOverflow) {
  const std::string path = File("aps_u_ids.h5");
  hid_t f = CreateRaw(path);
  PutRaw(f, "/xpcs/qmap/dynamic_v_list_dim0", {1}, {0.0054});
  PutRaw(f, "/xpcs/qmap/dynamic_v_list_dim1", {1}, {0.0});
  PutRaw(f, "/xpcs/twotime/correlation_map/c2_00001", {4, 4}, Matrix(4, 1.0));
  const std::int64_t ids[3] = {std::numeric_limits<std::int64_t>::min(), 0, 1};
  const hsize_t n = 3;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t d = H5Dcreate2(f, "/xpcs/twotime/processed_bins", H5T_STD_I64LE, space, H5P_DEFAULT,
                       H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids);
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
  LoadOptions o = Options(path);
  const DatasetMetadata meta = ReadDatasetMetadata(o, Logger::Silent());
  ASSERT_EQ(meta.bins.size(), 1u);  // only id 1 is valid
  EXPECT_EQ(meta.bins[0].bin, 1);
}

}  // namespace
}  // namespace homodyne::io
