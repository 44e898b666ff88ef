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

// Fills values[tiles[t].offset + c] = C[i, j] = H[i, j] + H[j, i] for tiles [first, last)
// (all of angle `bin`, sorted by row) from row and column blocks of at most
// `max_block_values` doubles each (a single row may exceed it).
void ReadAngleTiles(hid_t file, const DatasetMetadata& meta, const SelectedBin& bin,
                    const std::vector<LocalTile>& tiles, std::size_t first, std::size_t last,
                    std::span<double> values, std::int64_t max_block_values);

}  // namespace homodyne::io
