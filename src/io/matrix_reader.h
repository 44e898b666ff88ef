// Hyperslab reads of stored (half) matrices, shared by the serial and distributed loaders.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/distributed_loader.h"

namespace homodyne::io {

// Reads H[row0 : row0+rows, col0 : col0+cols] of dataset `path` as float64 into `out`
// (row-major rows × cols). Uses the default (independent) transfer.
void ReadBlock(hid_t file, const std::string& name, const std::string& path, std::int64_t row0,
               std::int64_t rows, std::int64_t col0, std::int64_t cols, double* out);

// The row and column blocks of ReadAngleTiles, kept from one call to the next by a caller that
// reads repeatedly (fresh pages cost about as much as the read on a virtual machine).
struct TileBlockBuffers {
  std::vector<double> rows, cols;
  int fd = -1;  // the file opened for pread (io/block_reader.h), or -1: HDF5 reads only
};

struct DirectMatrix;  // io/block_reader.h

// What ReadAngleTiles read.
struct TileReadResult {
  std::int64_t values_read = 0;  // from the file (both blocks, or the row blocks alone)
  // Every H[j, i] (j > i) added was +0.0: the tiles' points of the stored lower triangle are
  // zero, as in a half matrix stored upper (the APS layouts, docs/data.md). False when the
  // lower triangle was not read (upper_only).
  bool lower_zero = false;
};

// Fills values[tiles[t].offset + c] = C[i, j] = H[i, j] + H[j, i] for tiles [first, last)
// (all of angle `bin`, sorted by row) from row and column blocks of at most
// `max_block_values` doubles each (a single row may exceed it). With `upper_only` — for a
// caller that has seen lower_zero for exactly these tiles before — the column blocks are not
// read: H[i, j] + 0.0 off the diagonal and H[i, i] + H[i, i] on it, the same bits for the same
// file, from half the bytes (a matrix read with pread: each tile's run read in place, only the
// tiles' values).
TileReadResult ReadAngleTiles(hid_t file, const DatasetMetadata& meta, const SelectedBin& bin,
                              const std::vector<LocalTile>& tiles, std::size_t first,
                              std::size_t last, std::span<double> values,
                              std::int64_t max_block_values, TileBlockBuffers& buffers,
                              bool upper_only = false);

// ReadAngleTiles' upper-only read of a directly readable matrix, on its own: each tile's run of
// its stored row (frames from s0, the selection's first) read with pread in place, then summed
// there while it is in cache. Tiles [first, last) in any order, of the matrix's angle. It calls
// no HDF5 function and changes nothing but `values`, so it may run on any thread. Returns the
// values read.
std::int64_t ReadUpperOnlyDirect(const DirectMatrix& matrix, std::int64_t s0,
                                 const std::vector<LocalTile>& tiles, std::size_t first,
                                 std::size_t last, std::span<double> values);

}  // namespace homodyne::io
