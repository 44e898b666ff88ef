// The serial loader on the real legacy file, on the h5py-written LZF fixture, and on
// files written by our writers (both layouts, LZF round trip, key order, bin mapping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "core/errors.h"
#include "h5_read.h"
#include "io/dataset.h"
#include "io/lzf_filter.h"
#include "io/writers.h"
#include "temp_dir.h"
#include "test_data.h"

namespace homodyne::io {
namespace {

namespace fs = std::filesystem;

const std::string kRealFile = testing::TestDataPath("real/bnl_twotime_350.h5");
const std::string kLzfFixture = testing::TestDataPath("aps_u_lzf_small.h5");

// A unique temporary directory per test, removed at its end.
class TempDir : public testing::ScopedTempDir {
 public:
  TempDir() : ScopedTempDir("io_loader") {}
};

// Raw whole-dataset read with the plain HDF5 API (independent of the loader).
std::vector<double> RawRead(const std::string& file, const std::string& path) {
  RegisterLzfFilter();
  return testing::ReadWholeDataset(file, path);
}

// The basic diagonal correction written out independently of the library.
double ExpectedDiagonal(const std::vector<double>& c, std::size_t n, std::size_t m) {
  auto sb = [&](std::size_t k) { return 0.5 * (c[k * n + k + 1] + c[(k + 1) * n + k]); };
  if (m == 0) return sb(0);
  if (m == n - 1) return sb(n - 2);
  return 0.5 * (sb(m - 1) + sb(m));
}

// C_b(i, j) of tests/data/make_lzf_fixture.py.
double FixtureValue(int b, int i, int j) {
  return 1.0 + 0.25 * b + std::exp(-0.1 * b * std::abs(i - j)) + 0.001 * (i + j);
}

TEST(RealFile, LegacyBnlFileLoads) {
  LoadOptions o;
  o.path = kRealFile;
  o.dt = 1.0;
  const Dataset data = LoadDataset(o, Logger::Silent());
  EXPECT_EQ(data.meta.format, DataFormat::kApsOld);
  ASSERT_EQ(data.meta.n_angles(), 1u);
  EXPECT_EQ(data.meta.bins[0].dataset, "/exchange/C2T_all/g2_00001");
  EXPECT_EQ(data.meta.n_frames, 350);
  EXPECT_EQ(data.meta.file_frames, 350);
  EXPECT_DOUBLE_EQ(data.meta.q_physics, 0.0054);
  EXPECT_EQ(data.meta.t.size(), 350u);
  const auto& c = data.c2[0];
  ASSERT_EQ(c.size(), 350u * 350u);
  const std::vector<double> raw = RawRead(kRealFile, "/exchange/C2T_all/g2_00001");
  for (std::size_t i = 0; i < 350; ++i) {
    for (std::size_t j = 0; j < 350; ++j) {
      ASSERT_TRUE(std::isfinite(c[i * 350 + j]));
      ASSERT_EQ(c[i * 350 + j], c[j * 350 + i]);  // symmetric after reconstruction
      if (i != j) {
        ASSERT_EQ(c[i * 350 + j], raw[i * 350 + j] + raw[j * 350 + i]);
      }
    }
    EXPECT_EQ(c[i * 350 + i], ExpectedDiagonal(c, 350, i));
  }
  // g2-like data: values around 1.
  EXPECT_GT(c[1], 0.5);
  EXPECT_LT(c[1], 2.0);
}

TEST(RealFile, FrameSliceMatchesTheFullLoad) {
  LoadOptions o;
  o.path = kRealFile;
  o.dt = 0.5;
  const Dataset full = LoadDataset(o, Logger::Silent());
  o.start_frame = 11;
  o.end_frame = 60;
  const Dataset part = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(part.meta.n_frames, 50);
  EXPECT_EQ(part.meta.t.back(), 0.5 * 49);
  for (int i = 0; i < 50; ++i) {
    for (int j = 0; j < 50; ++j) {
      if (i != j) {
        ASSERT_EQ(part.at(0, i, j), full.at(0, i + 10, j + 10));
      }
    }
  }
}

// The output writers read one angle at a time into buffers they keep: whatever the buffers
// held before (another size, other values), the matrix is LoadDataset's to the bit.
TEST(RealFile, AngleMatrixIntoReusedBuffersIsTheLoadersMatrix) {
  LoadOptions o;
  o.path = kRealFile;
  o.dt = 1.0;
  o.start_frame = 3;
  o.end_frame = 301;  // 299 frames: the last 32-frame block of the reconstruction is partial
  const Dataset data = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(data.meta.n_frames, 299);
  std::vector<double> buffer(7, -1.0);
  std::vector<double> matrix(400 * 400, 12345.0);
  for (int round = 0; round < 2; ++round) {
    LoadAngleMatrixInto(data.meta, 0, buffer, matrix);
    ASSERT_EQ(matrix.size(), data.c2[0].size());
    for (std::size_t p = 0; p < matrix.size(); ++p) ASSERT_EQ(matrix[p], data.c2[0][p]) << p;
  }
  std::vector<double> fresh_buffer, fresh_matrix;
  LoadAngleMatrixInto(data.meta, 0, fresh_buffer, fresh_matrix);
  EXPECT_EQ(fresh_matrix, data.c2[0]);
}

TEST(RealFile, ProvenanceAttributeIsReadable) {
  const GroupAttributes attrs = ReadAttributes(kRealFile, "/");
  ASSERT_EQ(attrs.strings.size(), 1u);
  EXPECT_EQ(attrs.strings[0].first, "provenance");
  EXPECT_THAT(attrs.strings[0].second, ::testing::HasSubstr("350x350"));
}

TEST(LzfFilter, ReadsTheH5pyWrittenFixture) {
  LoadOptions o;
  o.path = kLzfFixture;
  o.dt = 0.01;
  const Dataset data = LoadDataset(o, Logger::Silent());
  EXPECT_EQ(data.meta.format, DataFormat::kApsU);
  ASSERT_EQ(data.meta.n_angles(), 3u);  // bins 1..3 share q = 0.0054
  EXPECT_THAT(data.meta.phi_values(), ::testing::ElementsAre(-30.0, 45.0, -160.0));
  EXPECT_EQ(data.meta.bins[2].phi_raw, 200.0);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(data.meta.bins[k].bin, k + 1);
    EXPECT_EQ(data.meta.bins[k].q, 0.0054);
    std::vector<double> expected(24 * 24);
    for (int i = 0; i < 24; ++i) {
      for (int j = 0; j < 24; ++j) expected[i * 24 + j] = FixtureValue(k + 1, i, j);
    }
    for (int i = 0; i < 24; ++i) {
      for (int j = 0; j < 24; ++j) {
        const double want = i == j ? ExpectedDiagonal(expected, 24, i) : expected[i * 24 + j];
        ASSERT_NEAR(data.at(k, i, j), want, 1e-14 * std::abs(want)) << k << " " << i << " " << j;
      }
    }
  }
  o.target_q = 0.0079;  // the other ring (q = 0.008)
  const Dataset other = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(other.meta.n_angles(), 3u);
  EXPECT_EQ(other.meta.bins[0].bin, 4);
  EXPECT_NEAR(other.at(0, 0, 5), FixtureValue(4, 0, 5), 1e-14);
}

// A wavevector_q far from every ring of the file still takes the nearest ring (homodyne's
// rule) but warns; a q within q_tolerance_fraction does not.
TEST(LzfFilter, FarOffWavevectorWarnsAndTakesTheNearestRing) {
  LoadOptions o;
  o.path = kLzfFixture;
  o.dt = 0.01;
  const auto warnings = [&](double q) {
    o.target_q = q;
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    const Logger logger(0, LogLevel::kInfo, out, err);
    const DatasetMetadata meta = ReadDatasetMetadata(o, logger);
    std::string text(4096, '\0');
    std::rewind(err);
    text.resize(std::fread(text.data(), 1, text.size(), err));
    std::fclose(err);
    std::fclose(out);
    return std::make_pair(meta.q_physics, text);
  };
  const auto [q_far, far] = warnings(0.5);
  EXPECT_EQ(q_far, 0.008);
  EXPECT_THAT(far, ::testing::HasSubstr("wavevector_q = 0.5 1/A, but the nearest q in the file "
                                        "is 0.008 1/A"));
  const auto [q_near, near] = warnings(0.0056);
  EXPECT_EQ(q_near, 0.0054);
  EXPECT_EQ(near.find("wavevector_q"), std::string::npos) << near;
}

TEST(LzfFilter, ReadsAChunkH5pyStoredRaw) {
  // The incompressible chunk is stored unfiltered (filter-mask bit set); reading must
  // give back the exact bytes.
  const std::vector<double> v = RawRead(kLzfFixture, "/noise/incompressible");
  ASSERT_EQ(v.size(), 576u);
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  double sum = 0.0;
  for (std::size_t i = 0; i < v.size() * 8; ++i) sum += bytes[i];
  EXPECT_EQ(sum, RawRead(kLzfFixture, "/noise/bytes_sum")[0]);
}

std::vector<double> SmoothMatrix(int f, int seed) {
  std::vector<double> c(static_cast<std::size_t>(f) * f);
  for (int i = 0; i < f; ++i) {
    for (int j = 0; j < f; ++j) {
      c[i * f + j] = 1.0 + 0.3 * std::exp(-0.02 * seed * std::abs(i - j)) + 1e-4 * (i + j);
    }
  }
  return c;
}

// Pseudo-random symmetric matrix (incompressible for LZF).
std::vector<double> NoisyMatrix(int f, unsigned seed) {
  std::vector<double> c(static_cast<std::size_t>(f) * f);
  unsigned long long s = seed * 2654435761ULL + 1;
  for (int i = 0; i < f; ++i) {
    for (int j = i; j < f; ++j) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const double v = 1.0 + static_cast<double>(s >> 11) * 0x1.0p-53;
      c[i * f + j] = v;
      c[j * f + i] = v;
    }
  }
  return c;
}

TEST(LzfFilter, RoundTripThroughOurWriter) {
  TempDir dir;
  const std::string path = dir.file("lzf_roundtrip.h5");
  const int f = 300;  // chunks of 128: edge chunks are partial
  const std::vector<std::vector<double>> mats = {SmoothMatrix(f, 1), NoisyMatrix(f, 7),
                                                 SmoothMatrix(f, 3), NoisyMatrix(f, 9)};
  WriteApsU(path, {0.0054, 0.0080}, {10.0, 100.0}, {1, 2, 3, 4}, mats, /*lzf=*/true);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  // The pipeline carries the h5py cd_values: {4, 0x0105, chunk bytes}.
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "/xpcs/twotime/correlation_map/c2_00001", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(ds);
  unsigned flags = 0;
  std::size_t n = 8;
  unsigned cd[8] = {};
  ASSERT_GE(H5Pget_filter_by_id2(dcpl, kLzfFilterId, &flags, &n, cd, 0, nullptr, nullptr), 0);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(cd[0], 4u);
  EXPECT_EQ(cd[1], 0x0105u);
  EXPECT_EQ(cd[2], 128u * 128u * 8u);
  EXPECT_TRUE((flags & H5Z_FLAG_OPTIONAL) != 0);
  hsize_t storage = H5Dget_storage_size(ds);
  EXPECT_LT(storage, static_cast<hsize_t>(f) * f * 8 * 3 / 4);  // zeros + smooth data compress
  H5Pclose(dcpl);
  H5Dclose(ds);
  H5Fclose(file);

  LoadOptions o;
  o.path = path;
  o.dt = 1.0;
  const Dataset data = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(data.meta.n_angles(), 2u);  // bins 1, 2 at q = 0.0054
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < f; ++i) {
      for (int j = 0; j < f; ++j) {
        if (i != j) {
          ASSERT_EQ(data.at(k, i, j), mats[k][i * f + j]) << k << " " << i << " " << j;
        }
      }
    }
  }
  // Stored half matrix: upper triangle kept, lower triangle 0.
  const auto raw = RawRead(path, "/xpcs/twotime/correlation_map/c2_00002");
  EXPECT_EQ(raw[5 * f + 2], 0.0);
  EXPECT_EQ(raw[2 * f + 5], mats[1][2 * f + 5]);
}

TEST(LzfFilter, H5pyReadsOurLzfFile) {
  if (std::system("/usr/bin/python3 -c 'import h5py' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-h5py not available";
  }
  TempDir dir;
  const std::string path = dir.file("for_h5py.h5");
  const int f = 40;
  WriteApsU(path, {0.0054}, {0.0}, {1}, {SmoothMatrix(f, 2)}, /*lzf=*/true);
  const double expected = SmoothMatrix(f, 2)[3 * f + 17];
  const std::string cmd = "/usr/bin/python3 -c \"import h5py,sys; d=h5py.File('" + path +
                          "','r')['/xpcs/twotime/correlation_map/c2_00001']; "
                          "sys.exit(0 if d.compression=='lzf' and d[3,17]==" +
                          fmt::format("{:.17g}", expected) + " and d[17,3]==0 else 1)\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(LzfFilter, CorruptChunkIsAnErrorNamingTheDataset) {
  TempDir dir;
  const std::string path = dir.file("corrupt.h5");
  const int f = 64;
  WriteApsU(path, {0.0054}, {0.0}, {1}, {SmoothMatrix(f, 2)}, /*lzf=*/true);
  haddr_t offset = 0;
  hsize_t size = 0;
  {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(file, "/xpcs/twotime/correlation_map/c2_00001", H5P_DEFAULT);
    hsize_t coords[2] = {0, 0};
    unsigned mask = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(ds, coords, &mask, &offset, &size), 0);
    EXPECT_EQ(mask, 0u);  // compressed
    H5Dclose(ds);
    H5Fclose(file);
  }
  ASSERT_GT(size, 64u);
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(offset + size / 4));
    const std::string garbage(static_cast<std::size_t>(size / 2), '\xff');
    io.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  LoadOptions o;
  o.path = path;
  o.dt = 1.0;
  try {
    LoadDataset(o, Logger::Silent());
    FAIL() << "a corrupt LZF chunk was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::kIo || e.kind() == ErrorKind::kBadInput);
    EXPECT_EQ(e.context().file, path);
    EXPECT_EQ(e.context().key, "/xpcs/twotime/correlation_map/c2_00001");
  }
}

TEST(Writers, ApsOldRoundTripWithSynthAttributes) {
  TempDir dir;
  const std::string path = dir.file("old.h5");
  const int f = 50;
  std::vector<std::vector<double>> mats;
  for (int k = 0; k < 5; ++k) mats.push_back(SmoothMatrix(f, k + 1));
  GroupAttributes attrs;
  attrs.strings = {{"model", "static"}};
  attrs.numbers = {{"D0", 1234.5}, {"alpha", -0.5}};
  WriteApsOld(path, {0.0054, 0.0054, 0.0054, 0.0054, 0.0054}, {0, 45, 90, 135, 180}, mats, attrs);
  LoadOptions o;
  o.path = path;
  o.dt = 0.1;
  const Dataset data = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(data.meta.n_angles(), 5u);
  EXPECT_EQ(data.meta.bins[4].dataset, "/exchange/C2T_all/c2_00005");
  EXPECT_EQ(data.meta.bins[4].phi, 180.0);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(data.at(k, 3, 9), mats[k][3 * f + 9]);
  const GroupAttributes back = ReadAttributes(path, kSynthGroup);
  EXPECT_THAT(back.strings,
              ::testing::ElementsAre(std::pair<std::string, std::string>("model", "static")));
  ASSERT_EQ(back.numbers.size(), 2u);
  EXPECT_EQ(back.numbers[0].first, "D0");
  EXPECT_EQ(back.numbers[0].second, 1234.5);
  WriteGroupAttributes(path, kSynthGroup, {{{"note", "added later"}}, {{"alpha", 0.25}}});
  const GroupAttributes later = ReadAttributes(path, kSynthGroup);
  EXPECT_EQ(later.strings.size(), 2u);
  for (const auto& [k, v] : later.numbers) {
    if (k == "alpha") {
      EXPECT_EQ(v, 0.25);
    }
  }
}

TEST(Writers, ApsUBinMappingSkipsInvalidIdsAndTruncates) {
  TempDir dir;
  const std::string path = dir.file("apsu_map.h5");
  const int f = 10;
  std::vector<std::vector<double>> mats;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> c(f * f, 1.0 + k);  // constant matrices identify the key
    mats.push_back(c);
  }
  // n_q = 2, n_phi = 3. Bin 2 -> (q0, phi1); bin 7 -> q index 2: invalid; bin 5 -> (q1, phi1).
  // Valid pairs [2, 5] vs 3 keys: truncated to 2, pair i <-> i-th sorted key.
  std::FILE* err = std::tmpfile();
  Logger logger(0, LogLevel::kInfo, err, err);
  WriteApsU(path, {0.0054, 0.0080}, {0.0, 60.0, 120.0}, {2, 7, 5}, mats, false);
  LoadOptions o;
  o.path = path;
  o.dt = 1.0;
  o.target_q = 0.0080;
  const Dataset data = LoadDataset(o, logger);
  ASSERT_EQ(data.meta.n_angles(), 1u);
  EXPECT_EQ(data.meta.bins[0].bin, 5);
  EXPECT_EQ(data.meta.bins[0].phi, 60.0);
  EXPECT_EQ(data.meta.bins[0].dataset, "/xpcs/twotime/correlation_map/c2_00002");
  EXPECT_EQ(data.at(0, 0, 1), 2.0);  // matrix of the 2nd key (constant 2), H + H^T
  std::rewind(err);
  char buf[2048] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, err);
  std::fclose(err);
  EXPECT_THAT(std::string(buf, n), ::testing::HasSubstr("processed bin 7"));
  EXPECT_THAT(std::string(buf, n), ::testing::HasSubstr("using the first 2"));
}

// Legacy files: keys in creation order if the group tracks it, else in name order.
void WriteLegacyWithKeys(const std::string& path, const std::vector<std::string>& keys,
                         bool track_order) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hsize_t m = keys.size();
  const hsize_t dims[2] = {1, m};
  std::vector<double> q(m, 0.0054);
  std::vector<double> phi;
  for (hsize_t k = 0; k < m; ++k) phi.push_back(10.0 * k);
  hid_t space = H5Screate_simple(2, dims, nullptr);
  for (const char* name : {"/xpcs/dqlist", "/xpcs/dphilist"}) {
    hid_t d = H5Dcreate2(file, name, H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
             std::string(name) == "/xpcs/dqlist" ? q.data() : phi.data());
    H5Dclose(d);
  }
  H5Sclose(space);
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  if (track_order) H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t group = H5Gcreate2(file, "/exchange/C2T_all", lcpl, gcpl, H5P_DEFAULT);
  const hsize_t mdims[2] = {4, 4};
  hid_t mspace = H5Screate_simple(2, mdims, nullptr);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    std::vector<double> c(16, 0.0);
    for (int i = 0; i < 4; ++i) {
      for (int j = i; j < 4; ++j) c[i * 4 + j] = 100.0 + k;  // value = creation index
    }
    hid_t d = H5Dcreate2(group, keys[k].c_str(), H5T_IEEE_F64LE, mspace, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.data());
    H5Dclose(d);
  }
  H5Sclose(mspace);
  H5Gclose(group);
  H5Pclose(gcpl);
  H5Pclose(lcpl);
  H5Fclose(file);
}

TEST(LegacyKeyOrder, CreationOrderWhenTrackedElseNameOrder) {
  TempDir dir;
  const std::vector<std::string> keys = {"c2_b", "c2_a", "c2_c", "c2_10", "c2_2"};
  LoadOptions o;
  o.dt = 1.0;
  o.path = dir.file("tracked.h5");
  WriteLegacyWithKeys(o.path, keys, true);
  Dataset data = LoadDataset(o, Logger::Silent());
  ASSERT_EQ(data.meta.n_angles(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(data.meta.bins[k].dataset, "/exchange/C2T_all/" + keys[k]);
    EXPECT_EQ(data.at(k, 0, 1), 100.0 + k);  // bin k <-> k-th created key
  }
  o.path = dir.file("untracked.h5");
  WriteLegacyWithKeys(o.path, keys, false);
  data = LoadDataset(o, Logger::Silent());
  // Byte-wise name order: c2_10, c2_2, c2_a, c2_b, c2_c.
  const std::vector<std::string> sorted = {"c2_10", "c2_2", "c2_a", "c2_b", "c2_c"};
  const std::vector<double> created = {3, 4, 1, 0, 2};
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(data.meta.bins[k].dataset, "/exchange/C2T_all/" + sorted[k]);
    EXPECT_EQ(data.meta.bins[k].phi, 10.0 * k);  // phi follows the list position
    EXPECT_EQ(data.at(k, 0, 1), 100.0 + created[k]);
  }
}

}  // namespace
}  // namespace homodyne::io
