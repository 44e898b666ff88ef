// The LZF compression filter for HDF5 (filter id 32000), compatible with h5py/PyTables.
//
// APS-U XPCS files are written by h5py with compression='lzf', which stock libhdf5
// cannot decode. RegisterLzfFilter() registers our own implementation (on top of
// liblzf) with the HDF5 library of this process; every homodyne HDF5 entry point calls
// it, so callers normally do not need to.
//
// Conventions shared with h5py (so files are readable both ways):
//   * filter id 32000, registered name "lzf", set as an OPTIONAL filter;
//   * cd_values = {4 (filter revision), 0x0105 (liblzf API version), chunk size in bytes};
//     the decoder uses cd_values[2] as the size of the decompressed chunk (0 or absent:
//     start from the stored size and grow the buffer until the chunk fits);
//   * a chunk that does not shrink is not compressed: the filter declines, and HDF5
//     stores the chunk raw with the filter's bit set in the chunk's filter mask.
#pragma once

namespace homodyne::io {

inline constexpr int kLzfFilterId = 32000;

// Registers (or re-registers) the filter; throws homodyne::Error on failure.
void RegisterLzfFilter();

}  // namespace homodyne::io
