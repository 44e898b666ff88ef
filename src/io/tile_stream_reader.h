// Re-reading a rank's fitted values from the HDF5 file, one window of tiles at a time
// (the streaming NLSQ fit, which never holds all of its points).
//
// The file is opened once with the MPI-IO driver on the communicator (collective) and
// every Read is an independent hyperslab read of row and column blocks of the stored
// half matrix, exactly as the distributed loader reads them: C[i, j] = H[i, j] + H[j, i]
// (after the frame offset), so a value read here is bit-identical to the in-core one.
// Independent reads let ranks read different numbers of windows without any matching
// calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "parallel/comm.h"

namespace homodyne::io {

class TileStreamReader {
 public:
  // Collective over `comm` (opens meta.file). `max_block_values` bounds each of the two
  // HDF5 read buffers (doubles); a single row may exceed it.
  TileStreamReader(const Comm& comm, const DatasetMetadata& meta, std::int64_t max_block_values);
  // Collective (closes the file).
  ~TileStreamReader();
  TileStreamReader(const TileStreamReader&) = delete;
  TileStreamReader& operator=(const TileStreamReader&) = delete;

  // Not collective. Fills values[t.offset + c] for every tile t (any angles, rows of one
  // angle ascending); offsets index `values`. Returns true when the tiles' points of the stored
  // lower triangle were all +0.0 (io::TileReadResult::lower_zero, every angle); a caller that
  // reads the same tiles again may then pass `upper_only` and read half the bytes.
  bool Read(const std::vector<LocalTile>& tiles, std::span<double> values, bool upper_only = false);

  // Every angle's matrix can be read with pread (io/block_reader.h): the upper-only reads below
  // are then possible.
  bool all_direct() const;
  // Read(tiles, values, /*upper_only=*/true) of a reader with all_direct(), with no HDF5 call
  // and no change to the reader: safe on another thread while this one calls HDF5 (the read-
  // ahead of nlsq/block_stream.h). Returns the values read, which the reader's own thread then
  // counts with CountUpperOnlyRead.
  std::int64_t ReadUpperOnly(const std::vector<LocalTile>& tiles, std::span<double> values) const;
  void CountUpperOnlyRead(std::int64_t values) {
    values_read_ += values;
    file_values_read_ += values;
  }
  // Frees the row and column block buffers of the combined reads, for a caller whose reads are
  // all upper-only from now on (they are allocated again if needed).
  void ReleaseBlockBuffers();

  std::int64_t values_read() const { return values_read_; }
  // Values read from the file: each tile's row block and the column block of its transpose,
  // or, in an upper_only read, the stored rows alone (io::TileReadResult::values_read).
  std::int64_t file_values_read() const { return file_values_read_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t values_read_ = 0;
  std::int64_t file_values_read_ = 0;
};

}  // namespace homodyne::io
