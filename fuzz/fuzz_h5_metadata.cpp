// libFuzzer target: bytes -> in-memory HDF5 file (core driver file image) -> the
// loader's metadata reader (format detection, q/phi lists, bin selection, matrix shape
// checks). Any input must either give metadata or raise a homodyne::Error.
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "io/dataset.h"
#include "io/metadata_internal.h"

namespace {

// Opens `bytes` as a read-only in-memory HDF5 file; returns -1 if HDF5 refuses it.
hid_t OpenImage(std::vector<unsigned char>& bytes) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 64 * 1024, 0);
  H5Pset_file_image(fapl, bytes.data(), bytes.size());
  const hid_t file = H5Fopen("fuzz-image.h5", H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's own error stack printing
  // No free lists: HDF5 would otherwise keep freed blocks until H5close, which looks
  // like a leak to the per-input leak check.
  H5set_free_list_limits(0, 0, 0, 0, 0, 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<unsigned char> bytes(data, data + size);
  const hid_t file = OpenImage(bytes);
  if (file < 0) return 0;  // not an HDF5 image: the loader reports "not an HDF5 file"
  homodyne::io::LoadOptions options;
  options.path = "fuzz-image.h5";
  options.dt = 0.1;
  options.max_frames = 4096;
  options.max_bytes = 64ULL << 20;
  try {
    const homodyne::io::DatasetMetadata meta =
        homodyne::io::ReadMetadataFromFile(file, options, homodyne::Logger::Silent());
    // Accepted metadata must round-trip through the broadcast encoding.
    (void)homodyne::io::DecodeMetadata(homodyne::io::EncodeMetadata(meta));
  } catch (const homodyne::Error&) {
    // Rejected with a homodyne error: the expected outcome for a malformed file.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "foreign exception escaped the metadata reader: %s\n", e.what());
    std::abort();
  }
  // Every handle the reader opened is closed again, whether it succeeded or threw.
  const ssize_t open_objects = H5Fget_obj_count(file, H5F_OBJ_ALL | H5F_OBJ_LOCAL);
  if (open_objects != 1) {
    std::fprintf(stderr, "the metadata reader left %zd HDF5 object(s) open\n", open_objects - 1);
    std::abort();
  }
  H5Fclose(file);
  return 0;
}
