// LZF filter class for HDF5 (id 32000), written against liblzf and the h5py conventions
// described in io/lzf_filter.h.
#include "io/lzf_filter.h"

#include <hdf5.h>
#include <lzf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <limits>

#include "core/errors.h"

namespace homodyne::io {
namespace {

constexpr unsigned kFilterRevision = 4;
constexpr unsigned kLzfApiVersion = 0x0105;
// Largest buffer the decoder will grow to (liblzf works with 32-bit lengths).
constexpr std::size_t kMaxBuffer = std::numeric_limits<unsigned int>::max();

// Records {revision, liblzf version, chunk bytes} in the dataset's filter parameters.
herr_t LzfSetLocal(hid_t dcpl, hid_t type, hid_t /*space*/) {
  unsigned flags = 0;
  std::size_t n = 8;
  std::array<unsigned, 8> values{};
  if (H5Pget_filter_by_id2(dcpl, kLzfFilterId, &flags, &n, values.data(), 0, nullptr, nullptr) <
      0) {
    return -1;
  }
  std::array<hsize_t, H5S_MAX_RANK> chunk{};
  const int ndims = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk.data());
  if (ndims < 0) return -1;
  std::uint64_t bytes = H5Tget_size(type);
  if (bytes == 0) return -1;
  for (int d = 0; d < ndims; ++d) bytes *= chunk[static_cast<std::size_t>(d)];
  const std::array<unsigned, 3> cd = {
      kFilterRevision, kLzfApiVersion,
      bytes > std::numeric_limits<unsigned>::max() ? 0U : static_cast<unsigned>(bytes)};
  return H5Pmodify_filter(dcpl, kLzfFilterId, flags, cd.size(), cd.data());
}

// Swaps the filter buffer for `out` (allocated with H5allocate_memory).
std::size_t Replace(void** buf, std::size_t* buf_size, void* out, std::size_t out_size,
                    std::size_t valid) {
  H5free_memory(*buf);
  *buf = out;
  *buf_size = out_size;
  return valid;
}

std::size_t Compress(std::size_t nbytes, std::size_t* buf_size, void** buf) {
  // h5py convention: the output may not be larger than the input. If liblzf cannot fit
  // it, return 0: the filter is optional, so HDF5 stores this chunk uncompressed.
  if (nbytes == 0 || nbytes > kMaxBuffer) return 0;
  void* out = H5allocate_memory(nbytes, false);
  if (out == nullptr) return 0;
  const unsigned written =
      lzf_compress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(nbytes));
  if (written == 0) {
    H5free_memory(out);
    return 0;
  }
  return Replace(buf, buf_size, out, nbytes, written);
}

std::size_t Decompress(std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes,
                       std::size_t* buf_size, void** buf) {
  if (nbytes > kMaxBuffer) return 0;
  std::size_t size = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
  if (size == 0) size = nbytes;
  // An LZF stream expands at most ~88-fold (a 3-byte back-reference yields 264 bytes),
  // so a corrupt chunk can never make us grow the buffer without bound.
  const std::size_t limit = std::min<std::size_t>(kMaxBuffer, 90 * nbytes + 1024);
  for (;;) {
    void* out = H5allocate_memory(size, false);
    if (out == nullptr) return 0;
    errno = 0;
    const unsigned got =
        lzf_decompress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(size));
    if (got != 0) return Replace(buf, buf_size, out, size, got);
    H5free_memory(out);
    if (errno != E2BIG || size >= limit) return 0;  // corrupt data or impossible size
    size = std::min(limit, 2 * size);
  }
}

std::size_t LzfFilter(unsigned flags, std::size_t cd_nelmts, const unsigned cd_values[],
                      std::size_t nbytes, std::size_t* buf_size, void** buf) {
  if ((flags & H5Z_FLAG_REVERSE) != 0) {
    return Decompress(cd_nelmts, cd_values, nbytes, buf_size, buf);
  }
  return Compress(nbytes, buf_size, buf);
}

}  // namespace

void RegisterLzfFilter() {
  H5Z_class2_t filter_class{};
  filter_class.version = H5Z_CLASS_T_VERS;
  filter_class.id = static_cast<H5Z_filter_t>(kLzfFilterId);
  filter_class.encoder_present = 1;
  filter_class.decoder_present = 1;
  filter_class.name = "lzf";
  filter_class.can_apply = nullptr;
  filter_class.set_local = LzfSetLocal;
  filter_class.filter = LzfFilter;
  if (H5Zregister(&filter_class) < 0) {
    H5Eclear2(H5E_DEFAULT);
    ThrowInternal("could not register the LZF filter (id 32000) with HDF5");
  }
}

}  // namespace homodyne::io
