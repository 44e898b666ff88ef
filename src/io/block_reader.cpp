#include "io/block_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::io {
namespace {

// The byte offset of the dataset's values when they can be read with pread: contiguous,
// allocated, unfiltered little-endian IEEE doubles, 2-D, in a file without a user block
// (whose addresses would be relative to its end). Else −1.
std::int64_t DirectOffset(hid_t file, hid_t dataset, std::int64_t& rows, std::int64_t& cols) {
  const h5::PropList dcpl(H5Dget_create_plist(dataset));
  if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS) return -1;
  if (H5Pget_nfilters(dcpl.get()) != 0) return -1;
  const h5::Datatype type(H5Dget_type(dataset));
  if (!type.valid() || H5Tequal(type.get(), H5T_IEEE_F64LE) <= 0) return -1;
  if (H5Tequal(H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE) <= 0) return -1;
  const h5::Dataspace space(H5Dget_space(dataset));
  hsize_t dims[2] = {0, 0};
  if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 2 ||
      H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 2) {
    return -1;
  }
  const h5::PropList fcpl(H5Fget_create_plist(file));
  hsize_t userblock = 1;
  if (!fcpl.valid() || H5Pget_userblock(fcpl.get(), &userblock) < 0 || userblock != 0) return -1;
  const haddr_t offset = H5Dget_offset(dataset);
  if (offset == HADDR_UNDEF) return -1;
  rows = static_cast<std::int64_t>(dims[0]);
  cols = static_cast<std::int64_t>(dims[1]);
  return static_cast<std::int64_t>(offset);
}

}  // namespace

ReadOnlyFd::ReadOnlyFd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}

ReadOnlyFd::~ReadOnlyFd() {
  if (fd_ >= 0) ::close(fd_);
}

BlockReader::BlockReader(hid_t file, const std::string& name, const std::string& path, int fd)
    : dataset_(h5::OpenDataset(file, name, path)) {
  direct_.name = name;
  direct_.path = path;
  if (fd >= 0) {
    direct_.fd = fd;
    direct_.offset = DirectOffset(file, dataset_.get(), direct_.n_rows, direct_.n_cols);
    H5Eclear2(H5E_DEFAULT);  // a refused check leaves nothing behind for later messages
  }
}

void BlockReader::Read(std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
                       double* out) {
  if (rows <= 0 || cols <= 0) return;
  if (direct()) {
    direct_.Read(row0, rows, col0, cols, out);
    return;
  }
  const h5::Where where{direct_.name, direct_.path};
  auto fspace =
      h5::Own<h5::Dataspace>(H5Dget_space(dataset_.get()), "getting the dataspace", where);
  const hsize_t start[2] = {static_cast<hsize_t>(row0), static_cast<hsize_t>(col0)};
  const hsize_t count[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  h5::Check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
            "selecting a hyperslab", where);
  auto mspace =
      h5::Own<h5::Dataspace>(H5Screate_simple(2, count, nullptr), "creating a memory space", where);
  h5::Check(
      H5Dread(dataset_.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, out),
      "reading matrix data", where);
}

void DirectMatrix::Read(std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
                        double* out) const {
  if (rows <= 0 || cols <= 0) return;
  HOMODYNE_CHECK(
      valid() && row0 >= 0 && col0 >= 0 && row0 + rows <= n_rows && col0 + cols <= n_cols,
      "block outside the stored matrix");
  // Whole rows are one run of bytes; otherwise one read per row.
  const bool whole = col0 == 0 && cols == n_cols;
  const std::int64_t runs = whole ? 1 : rows;
  const std::int64_t run_bytes = 8 * (whole ? rows * cols : cols);
  for (std::int64_t r = 0; r < runs; ++r) {
    auto* dst = reinterpret_cast<char*>(out + r * cols);
    std::int64_t at = offset + 8 * ((row0 + r) * n_cols + col0);
    std::int64_t left = run_bytes;
    while (left > 0) {
      const ssize_t got = ::pread(fd, dst, static_cast<std::size_t>(left), static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw Error(ErrorKind::kIo,
                    fmt::format("reading matrix data at byte {}: {}", at,
                                got == 0 ? std::string("the file ends before the dataset does")
                                         : std::string(std::strerror(errno))),
                    {name, path, -1});
      }
      dst += got;
      at += got;
      left -= got;
    }
  }
}

}  // namespace homodyne::io
