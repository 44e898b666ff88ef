// Rectangles of one stored c2 matrix (a 2-D dataset read as float64), as ReadBlock reads
// them, for readers that take many rectangles of the same dataset (the loaders' row and
// column blocks, every streamed pass).
//
// When the dataset is stored contiguous, unfiltered, as little-endian IEEE doubles in a file
// without a user block — how APS files and ours store c2 — each row of a rectangle is read
// with pread at its byte offset into the output. HDF5's hyperslab reads of a column block
// (thousands of short rows) go through a sieve buffer that reads several times the bytes
// asked for; on 23 × 2500 frames a streamed pass spent 2.7 s of its 3.4 s there. Other
// layouts (chunked, compressed, other types) are read through HDF5. The values are the file's
// bits either way.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "io/h5_handles.h"

namespace homodyne::io {

// A file opened read-only for pread (RAII); -1 when it could not be opened (the reads then
// go through HDF5).
class ReadOnlyFd {
 public:
  explicit ReadOnlyFd(const std::string& path);
  ~ReadOnlyFd();
  ReadOnlyFd(const ReadOnlyFd&) = delete;
  ReadOnlyFd& operator=(const ReadOnlyFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// Where a directly readable dataset's values lie in a file opened for pread: what BlockReader
// found out through HDF5, kept so that later reads need no HDF5 call. Read is const and
// touches nothing but the descriptor, so any thread may read while another calls HDF5 (the
// streaming fit's read-ahead thread, nlsq/block_stream.h).
struct DirectMatrix {
  std::string name, path;    // the file and dataset, for messages
  int fd = -1;               // the caller's (ReadOnlyFd): valid while that is open
  std::int64_t offset = -1;  // the values' byte offset in the file; −1: not directly readable
  std::int64_t n_rows = 0, n_cols = 0;
  bool valid() const { return offset >= 0; }
  // H[row0 : row0 + rows, col0 : col0 + cols] into out (row-major rows × cols).
  void Read(std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
            double* out) const;
};

class BlockReader {
 public:
  // Opens dataset `path` of `file` (named `name` in messages). `fd` is the same file opened
  // for pread, or -1 (HDF5 reads only).
  BlockReader(hid_t file, const std::string& name, const std::string& path, int fd);
  // H[row0 : row0 + rows, col0 : col0 + cols] into out (row-major rows × cols).
  void Read(std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols,
            double* out);
  bool direct() const { return direct_.valid(); }
  const DirectMatrix& direct_matrix() const { return direct_; }

 private:
  h5::Dataset dataset_;
  DirectMatrix direct_;
};

}  // namespace homodyne::io
