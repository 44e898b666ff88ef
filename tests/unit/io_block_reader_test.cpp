// BlockReader: rectangles of a stored matrix read with pread (contiguous little-endian doubles)
// are HDF5's hyperslab reads to the bit, and the layouts pread cannot take fall back to HDF5.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/block_reader.h"
#include "io/h5_handles.h"
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

}  // namespace
}  // namespace homodyne::io
