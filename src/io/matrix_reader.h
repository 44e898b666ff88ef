// Hyperslab reads of stored (half) matrices, shared by the serial and distributed loaders.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace homodyne::io {

// Reads H[row0 : row0+rows, col0 : col0+cols] of dataset `path` as float64 into `out`
// (row-major rows × cols). Uses the default (independent) transfer.
void ReadBlock(hid_t file, const std::string& name, const std::string& path, std::int64_t row0,
               std::int64_t rows, std::int64_t col0, std::int64_t cols, double* out);

}  // namespace homodyne::io
