// Writers for synthetic XPCS files (used by the synthetic-data tool and the tests).
//
// Matrices are given full (F×F, row-major, symmetric); the files store the upper
// triangle including the diagonal with the lower triangle 0, as APS files do. Every
// writer writes "<path>.tmp" first and renames it over `path` when complete.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace homodyne::io {

// Scalar attributes of one group (e.g. /homodyne_synth: true parameters, provenance).
struct GroupAttributes {
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, double>> numbers;
};

inline constexpr const char* kSynthGroup = "/homodyne_synth";

// APS 8-ID-I legacy layout: /xpcs/dqlist (1,M), /xpcs/dphilist (1,M),
// /exchange/C2T_all/c2_00001..c2_M (zero-padded names, group tracks creation order).
// `attributes` (if any) go to /homodyne_synth.
void WriteApsOld(const std::string& path, const std::vector<double>& q_list,
                 const std::vector<double>& phi_list,
                 const std::vector<std::vector<double>>& matrices,
                 const GroupAttributes& attributes = {});

// APS-U layout: /xpcs/qmap/dynamic_v_list_dim0 (n_q), /xpcs/qmap/dynamic_v_list_dim1
// (n_phi), /xpcs/twotime/processed_bins (P, 1-based ids), and
// /xpcs/twotime/correlation_map/c2_00001..c2_P (one matrix per processed bin, in order).
// lzf = true compresses the matrices with the LZF filter (h5py-compatible, chunked).
void WriteApsU(const std::string& path, const std::vector<double>& q_values,
               const std::vector<double>& phi_values,
               const std::vector<std::int64_t>& processed_bins,
               const std::vector<std::vector<double>>& matrices, bool lzf,
               const GroupAttributes& attributes = {});

// Adds (or replaces) scalar attributes on `group` (created if missing) of an existing file.
void WriteGroupAttributes(const std::string& path, const std::string& group,
                          const GroupAttributes& attributes);

// One float64 array of a result file (row-major, dims outermost first).
struct NamedArray {
  std::string path;                 // e.g. "/c2_exp"
  std::vector<std::uint64_t> dims;  // product must equal data.size()
  std::vector<double> data;
  std::string description;  // stored as the dataset's "description" attribute
};

// How a result file's large arrays are stored: deflate (zlib) at `level` 1–9 after the
// shuffle filter, in chunks of at most 512 KiB of whole rows; level 0 stores them contiguous
// and uncompressed. Only arrays with at least two dimensions and 8192 values are compressed
// (the small ones are not worth a chunk index; such arrays are also never "compressed arrays"
// below). DeflateAvailable() is false when the HDF5 library has no zlib filter; the arrays
// are then written uncompressed. Chunks lie inside one slab (index of the first dimension)
// when slabs are large or `chunks_in_slab` (slabs packed apart, e.g. on other ranks); such a
// slab's chunks are compressed by `threads` threads, the calling one included (the same bytes
// HDF5's shuffle and deflate filters produce), and written as they are; `thread_start(t)`
// runs first in each added thread t = 1 … threads − 1 (to pin it: a thread inherits the
// affinity of the pinned thread that creates it).
struct ArrayStorage {
  int deflate_level = 0;
  int threads = 1;
  std::function<void(int thread_index)> thread_start;
  bool chunks_in_slab = false;
};
bool DeflateAvailable();

// The chunk shape of an array of shape `dims` stored as `storage` (empty: contiguous,
// uncompressed).
std::vector<std::uint64_t> ChunkShape(const std::vector<std::uint64_t>& dims,
                                      const ArrayStorage& storage);
// One slab (index of the first dimension) of an array whose chunks lie inside one slab
// (ChunkShape(...)[0] == 1), compressed as it is stored: one buffer per chunk in row-major
// chunk order, made by storage.threads threads — on any rank, for
// ArrayFileWriter::WritePackedSlab on the rank that writes the file (chunks are small: a
// slab is packed where it was computed and sent to the writer compressed).
std::vector<std::vector<unsigned char>> PackSlab(const std::vector<std::uint64_t>& dims,
                                                 const std::vector<std::uint64_t>& chunk,
                                                 std::span<const double> values,
                                                 const ArrayStorage& storage);

// Writes the arrays (and root attributes) to a new HDF5 file, atomically.
void WriteArraysFile(const std::string& path, const std::vector<NamedArray>& arrays,
                     const GroupAttributes& root_attributes = {}, ArrayStorage storage = {});

// A result file written array by array and slab by slab, so that large arrays never have
// to be held whole: Create() an array, then WriteSlab() each index of its first dimension
// (e.g. one angle's N×N matrix at a time). The file is "<path>.tmp" until Commit() renames
// it over `path`; a writer destroyed uncommitted (an error on the way, a full disk) removes
// it. One process writes it (ranks that share the work send it their slabs, PackSlab), or
// the ranks of a communicator together (below).
class ArrayFileWriter {
 public:
  explicit ArrayFileWriter(const std::string& path);
  // The file written by the ranks of `comm` together: rank 0 lays it out with HDF5 (every
  // array contiguous, uncompressed, its storage allocated when it is created, large ones on a
  // 4 KiB page) and writes its structure and attributes; every rank writes its own slabs'
  // bytes where HDF5 placed them (parallel/shared_file.h: MPI-IO, and O_DIRECT for whole
  // pages). Construction, Create, Commit and destruction are collective (the same arrays,
  // attributes and descriptions on every rank); WriteSlab is not (a rank whose write fails is
  // never left inside a collective call that the others have left; the caller agrees on
  // errors). Compressed slabs go to a one-process writer. Commit() syncs and closes the file
  // on every rank before rank 0 closes its HDF5 file and renames it; destroyed uncommitted
  // on every rank, the file is removed.
  ArrayFileWriter(const std::string& path, MPI_Comm comm);
  ~ArrayFileWriter();
  ArrayFileWriter(const ArrayFileWriter&) = delete;
  ArrayFileWriter& operator=(const ArrayFileWriter&) = delete;

  // A float64 array of shape `dims` (row-major, outermost first), filled by WriteSlab or
  // WritePackedSlab; stored as `storage` says.
  void Create(const std::string& array_path, const std::vector<std::uint64_t>& dims,
              const std::string& description = {}, ArrayStorage storage = {});
  // values = array[index, ...]: the product of dims[1..] values (all of it for 1-D arrays,
  // whose single slab is index 0).
  void WriteSlab(const std::string& array_path, std::uint64_t index,
                 std::span<const double> values);
  // Stores slab `index` of a compressed array whose chunks lie inside one slab from
  // PackSlab's chunks.
  void WritePackedSlab(const std::string& array_path, std::uint64_t index,
                       const std::vector<std::vector<unsigned char>>& chunks);
  // Create + WriteSlab of a whole array.
  void Write(const NamedArray& array, ArrayStorage storage = {});
  // Root attributes, flush, fsync and rename. Throws on failure (the file is removed). A writer
  // of several ranks closes the file together, then rank 0 publishes it; a failure there is
  // thrown on rank 0 alone (the caller agrees on errors, e.g. RunCollectively).
  void Commit(const GroupAttributes& root_attributes = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads every scalar string or numeric attribute of an object (group or dataset).
GroupAttributes ReadAttributes(const std::string& path, const std::string& object);

}  // namespace homodyne::io
