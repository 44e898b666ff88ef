// BlockReader: rectangles of a stored matrix read with pread (contiguous little-endian doubles)
// are HDF5's hyperslab reads to the bit, and the layouts pread cannot take fall back to HDF5.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "io/block_reader.h"
#include "io/h5_handles.h"
#include "io/matrix_reader.h"
#include "temp_dir.h"

namespace homodyne::io {
namespace {

constexpr hsize_t kRows = 37;
constexpr hsize_t kCols = 53;

double Value(hsize_t i, hsize_t j) {
  return 1.0 + 0.001 * static_cast<double>(i * kCols + j) / 7.0;
}

// One 37 × 53 dataset per layout: contiguous doubles, chunked and compressed doubles, and
// contiguous single precision (read as doubles).
std::string WriteFile(const testing::ScopedTempDir& dir) {
  const std::string path = dir.file("blocks.h5");
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {kRows, kCols};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  std::vector<double> values(kRows * kCols);
  for (hsize_t i = 0; i < kRows; ++i) {
    for (hsize_t j = 0; j < kCols; ++j) values[i * kCols + j] = Value(i, j);
  }
  const auto write = [&](const char* name, hid_t type, hid_t dcpl) {
    const hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(ds);
  };
  write("/contiguous", H5T_IEEE_F64LE, H5P_DEFAULT);
  const hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {8, 16};
  H5Pset_chunk(chunked, 2, chunk);
  H5Pset_deflate(chunked, 4);
  write("/chunked", H5T_IEEE_F64LE, chunked);
  H5Pclose(chunked);
  write("/single", H5T_IEEE_F32LE, H5P_DEFAULT);
  H5Sclose(space);
  H5Fclose(file);
  return path;
}

struct Rect {
  std::int64_t row0, rows, col0, cols;
};

// Whole rows (one run of bytes), a column block (short rows), single rows and columns, the
// corners and the whole matrix.
const std::vector<Rect> kRects = {{3, 5, 0, 53},  {0, 37, 20, 4}, {36, 1, 0, 53}, {0, 37, 52, 1},
                                  {10, 1, 7, 30}, {0, 37, 0, 53}, {30, 7, 40, 13}};

std::vector<double> Read(BlockReader& reader, const Rect& r) {
  std::vector<double> out(static_cast<std::size_t>(r.rows * r.cols), -1.0);
  reader.Read(r.row0, r.rows, r.col0, r.cols, out.data());
  return out;
}

TEST(BlockReader, ContiguousDoublesAreReadDirectlyWithHdf5sBits) {
  const testing::ScopedTempDir dir("io_block_reader");
  const std::string path = WriteFile(dir);
  const h5::File file = h5::OpenForRead(path);
  const ReadOnlyFd fd(path);
  ASSERT_GE(fd.get(), 0);
  BlockReader direct(file.get(), path, "/contiguous", fd.get());
  BlockReader hdf5(file.get(), path, "/contiguous", -1);
  EXPECT_TRUE(direct.direct());
  EXPECT_FALSE(hdf5.direct());
  for (const Rect& r : kRects) {
    const std::vector<double> a = Read(direct, r);
    EXPECT_EQ(a, Read(hdf5, r)) << r.row0 << " " << r.rows << " " << r.col0 << " " << r.cols;
    for (std::int64_t i = 0; i < r.rows; ++i) {
      for (std::int64_t j = 0; j < r.cols; ++j) {
        ASSERT_EQ(a[static_cast<std::size_t>(i * r.cols + j)],
                  Value(static_cast<hsize_t>(r.row0 + i), static_cast<hsize_t>(r.col0 + j)));
      }
    }
  }
}

TEST(BlockReader, ChunkedAndSinglePrecisionGoThroughHdf5) {
  const testing::ScopedTempDir dir("io_block_reader");
  const std::string path = WriteFile(dir);
  const h5::File file = h5::OpenForRead(path);
  const ReadOnlyFd fd(path);
  BlockReader contiguous(file.get(), path, "/contiguous", fd.get());
  for (const char* name : {"/chunked", "/single"}) {
    BlockReader reader(file.get(), path, name, fd.get());
    EXPECT_FALSE(reader.direct()) << name;
    for (const Rect& r : kRects) {
      const std::vector<double> got = Read(reader, r);
      if (std::string(name) == "/chunked") {
        EXPECT_EQ(got, Read(contiguous, r)) << name;
      } else {
        const std::vector<double> want = Read(contiguous, r);
        for (std::size_t p = 0; p < got.size(); ++p) {
          ASSERT_EQ(got[p], static_cast<double>(static_cast<float>(want[p]))) << name;
        }
      }
    }
  }
}

TEST(BlockReader, AFileThatCannotBeOpenedForPreadReadsThroughHdf5) {
  const testing::ScopedTempDir dir("io_block_reader");
  const std::string path = WriteFile(dir);
  const ReadOnlyFd missing(dir.file("missing.h5"));
  EXPECT_EQ(missing.get(), -1);
  const h5::File file = h5::OpenForRead(path);
  BlockReader reader(file.get(), path, "/contiguous", missing.get());
  EXPECT_FALSE(reader.direct());
  EXPECT_EQ(Read(reader, kRects[1]).at(0), Value(0, 20));
}

// A square stored matrix H, contiguous and chunked, for the loaders' tile reads.
constexpr hsize_t kSide = 41;

double SquareValue(hsize_t i, hsize_t j) { return 0.5 + static_cast<double>(i) + 1e-3 * j / 3.0; }

// A half matrix stored upper (the APS layout): the lower triangle +0.0, and a few −0.0 in
// the upper triangle and on the diagonal, whose sums with +0.0 are +0.0.
double UpperValue(hsize_t i, hsize_t j) {
  if (i > j) return 0.0;
  if ((i + 2 * j) % 13 == 0) return -0.0;
  return SquareValue(i, j);
}

std::string WriteSquareFile(const testing::ScopedTempDir& dir,
                            double (*value)(hsize_t, hsize_t) = SquareValue,
                            const char* file_name = "square.h5") {
  const std::string path = dir.file(file_name);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {kSide, kSide};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  std::vector<double> values(kSide * kSide);
  for (hsize_t i = 0; i < kSide; ++i) {
    for (hsize_t j = 0; j < kSide; ++j) values[i * kSide + j] = value(i, j);
  }
  const hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {7, 9};
  H5Pset_chunk(chunked, 2, chunk);
  for (const auto& [name, dcpl] :
       {std::pair<const char*, hid_t>{"/contiguous", H5P_DEFAULT}, {"/chunked", chunked}}) {
    const hid_t ds = H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(ds);
  }
  H5Pclose(chunked);
  H5Sclose(space);
  H5Fclose(file);
  return path;
}

// Every tile of the upper triangle of frames [3, 38), rows cut into pieces of at most 6.
std::vector<LocalTile> UpperTiles(std::int64_t n, std::size_t& total) {
  std::vector<LocalTile> tiles;
  total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = i; j < n; j += 6) {
      LocalTile t;
      t.tile = {0, i, j, std::min<std::int64_t>(6, n - j)};
      t.offset = total;
      total += static_cast<std::size_t>(t.tile.count);
      tiles.push_back(t);
    }
  }
  return tiles;
}

TEST(BlockReader, AngleTilesReadDirectlyOrThroughHdf5AreHPlusHTransposeToTheBit) {
  const testing::ScopedTempDir dir("io_block_reader");
  const std::string path = WriteSquareFile(dir);
  const h5::File file = h5::OpenForRead(path);
  const ReadOnlyFd fd(path);
  DatasetMetadata meta;
  meta.file = path;
  meta.file_frames = kSide;
  meta.frame_begin = 3;
  meta.n_frames = 35;
  std::size_t total = 0;
  const std::vector<LocalTile> tiles = UpperTiles(meta.n_frames, total);
  std::vector<double> want(total);
  for (const LocalTile& t : tiles) {
    for (std::int64_t c = 0; c < t.tile.count; ++c) {
      const auto i = static_cast<hsize_t>(meta.frame_begin + t.tile.row);
      const auto j = static_cast<hsize_t>(meta.frame_begin + t.tile.col_begin + c);
      want[t.offset + static_cast<std::size_t>(c)] = SquareValue(i, j) + SquareValue(j, i);
    }
  }
  // Block limits: below one row (a row per batch), a few rows, everything at once.
  for (const std::int64_t max_block :
       {std::int64_t{10}, std::int64_t{150}, std::int64_t{1} << 20}) {
    for (const char* dataset : {"/contiguous", "/chunked"}) {
      for (const bool pread : {true, false}) {
        TileBlockBuffers buffers;
        buffers.fd = pread ? fd.get() : -1;
        SelectedBin bin;
        bin.dataset = dataset;
        std::vector<double> got(total, -1.0);
        const TileReadResult read =
            ReadAngleTiles(file.get(), meta, bin, tiles, 0, tiles.size(), got, max_block, buffers);
        EXPECT_GE(read.values_read, 2 * static_cast<std::int64_t>(total)) << dataset;
        EXPECT_FALSE(read.lower_zero) << "a full matrix is not a half matrix";
        ASSERT_EQ(got, want) << dataset << " max_block " << max_block << " pread " << pread;
      }
    }
  }
}

std::vector<std::uint64_t> Bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out;
  for (double x : v) out.push_back(std::bit_cast<std::uint64_t>(x));
  return out;
}

// A half matrix stored upper is recognised from a full read, and then read from its row
// blocks alone with the same bits (−0.0 included) and half the values; a lower triangle of
// −0.0 (not the +0.0 the sum's shortcut adds) is not taken for zero.
TEST(BlockReader, AHalfMatrixStoredUpperIsReadAgainFromItsRowsWithTheSameBits) {
  const testing::ScopedTempDir dir("io_block_reader");
  const std::string upper = WriteSquareFile(dir, UpperValue, "upper.h5");
  const std::string negative = WriteSquareFile(
      dir, [](hsize_t i, hsize_t j) { return i > j ? -0.0 : SquareValue(i, j); }, "neg.h5");
  DatasetMetadata meta;
  meta.file_frames = kSide;
  meta.frame_begin = 2;
  meta.n_frames = 37;
  std::size_t total = 0;
  const std::vector<LocalTile> tiles = UpperTiles(meta.n_frames, total);
  for (const std::int64_t max_block : {std::int64_t{10}, std::int64_t{200}}) {
    for (const char* dataset : {"/contiguous", "/chunked"}) {
      SelectedBin bin;
      bin.dataset = dataset;
      {
        meta.file = upper;
        const h5::File file = h5::OpenForRead(upper);
        const ReadOnlyFd fd(upper);
        TileBlockBuffers buffers;
        buffers.fd = fd.get();
        std::vector<double> full(total, -1.0), rows_only(total, -2.0);
        const TileReadResult first =
            ReadAngleTiles(file.get(), meta, bin, tiles, 0, tiles.size(), full, max_block, buffers);
        ASSERT_TRUE(first.lower_zero) << dataset;
        const TileReadResult again = ReadAngleTiles(file.get(), meta, bin, tiles, 0, tiles.size(),
                                                    rows_only, max_block, buffers,
                                                    /*upper_only=*/true);
        EXPECT_FALSE(again.lower_zero);  // not looked at
        // pread: the tiles' values in place; HDF5: the row blocks, half of the first read.
        EXPECT_EQ(again.values_read, std::string(dataset) == "/contiguous"
                                         ? static_cast<std::int64_t>(total)
                                         : first.values_read / 2);
        ASSERT_EQ(Bits(rows_only), Bits(full)) << dataset << " max_block " << max_block;
        for (const LocalTile& t : tiles) {
          const auto i = static_cast<hsize_t>(meta.frame_begin + t.tile.row);
          const auto j = static_cast<hsize_t>(meta.frame_begin + t.tile.col_begin);
          ASSERT_EQ(std::bit_cast<std::uint64_t>(full[t.offset]),
                    std::bit_cast<std::uint64_t>(UpperValue(i, j) + UpperValue(j, i)));
        }
      }
      {
        meta.file = negative;
        const h5::File file = h5::OpenForRead(negative);
        const ReadOnlyFd fd(negative);
        TileBlockBuffers buffers;
        buffers.fd = fd.get();
        std::vector<double> got(total);
        EXPECT_FALSE(
            ReadAngleTiles(file.get(), meta, bin, tiles, 0, tiles.size(), got, max_block, buffers)
                .lower_zero)
            << dataset;
      }
    }
  }
}

}  // namespace
}  // namespace homodyne::io
