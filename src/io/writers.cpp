// Synthetic XPCS file writers (see io/writers.h).
#include "io/writers.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <zlib.h>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "io/h5_handles.h"
#include "io/lzf_filter.h"
#include "io/read_crash_guard.h"
#include "parallel/collective.h"
#include "parallel/shared_file.h"

namespace homodyne::io {
namespace {

using h5::Check;
using h5::Own;
using h5::Where;

constexpr hsize_t kChunkSide = 128;

// Creates every missing group on the way to `path`.
h5::Group EnsureGroup(hid_t file, const std::string& file_name, const std::string& path,
                      bool track_order = false) {
  if (h5::PathExists(file, path)) return h5::OpenGroup(file, file_name, path);
  const Where where{file_name, path};
  auto lcpl = Own<h5::PropList>(H5Pcreate(H5P_LINK_CREATE), "link creation properties", where);
  Check(H5Pset_create_intermediate_group(lcpl.get(), 1), "intermediate groups", where);
  auto gcpl = Own<h5::PropList>(H5Pcreate(H5P_GROUP_CREATE), "group creation properties", where);
  if (track_order) {
    Check(H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
          "tracking creation order", where);
  }
  return Own<h5::Group>(H5Gcreate2(file, path.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT),
                        "creating the group", where);
}

// A new dataset of shape `dims` at `path` (missing groups created on the way).
h5::Dataset CreateDataset(hid_t file, const std::string& file_name, const std::string& path,
                          const std::vector<hsize_t>& dims, hid_t file_type,
                          hid_t dcpl = H5P_DEFAULT) {
  const Where where{file_name, path};
  auto space =
      Own<h5::Dataspace>(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                         "creating a dataspace", where);
  auto lcpl = Own<h5::PropList>(H5Pcreate(H5P_LINK_CREATE), "link creation properties", where);
  Check(H5Pset_create_intermediate_group(lcpl.get(), 1), "intermediate groups", where);
  return Own<h5::Dataset>(
      H5Dcreate2(file, path.c_str(), file_type, space.get(), lcpl.get(), dcpl, H5P_DEFAULT),
      "creating the dataset", where);
}

template <typename T>
void WriteArray(hid_t file, const std::string& file_name, const std::string& path,
                const std::vector<hsize_t>& dims, const T* data, hid_t file_type, hid_t mem_type,
                hid_t dcpl = H5P_DEFAULT) {
  auto ds = CreateDataset(file, file_name, path, dims, file_type, dcpl);
  Check(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "writing the dataset",
        {file_name, path});
}

std::vector<double> UpperTriangle(const std::vector<double>& full, std::size_t f) {
  std::vector<double> half(f * f, 0.0);
  for (std::size_t i = 0; i < f; ++i) {
    for (std::size_t j = i; j < f; ++j) half[i * f + j] = full[i * f + j];
  }
  return half;
}

std::size_t CheckMatrices(const std::vector<std::vector<double>>& matrices,
                          const std::string& path) {
  if (matrices.empty()) ThrowBadInput("expected at least one matrix to write", path);
  const std::size_t size = matrices.front().size();
  const auto f = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(size))));
  if (f == 0 || f * f != size) {
    ThrowBadInput(fmt::format("expected square matrices, got {} values", size), path);
  }
  for (const auto& m : matrices) {
    if (m.size() != size) {
      ThrowBadInput(fmt::format("expected all matrices to have {} values, got {}", size, m.size()),
                    path);
    }
  }
  return f;
}

void WriteMatrices(hid_t file, const std::string& name, const std::string& group_path,
                   const std::vector<std::vector<double>>& matrices, std::size_t f, bool lzf) {
  EnsureGroup(file, name, group_path, /*track_order=*/true);
  const Where where{name, group_path};
  auto dcpl = Own<h5::PropList>(H5Pcreate(H5P_DATASET_CREATE), "dataset properties", where);
  if (lzf) {
    const hsize_t side = std::min<hsize_t>(f, kChunkSide);
    const hsize_t chunk[2] = {side, side};
    Check(H5Pset_chunk(dcpl.get(), 2, chunk), "setting the chunk shape", where);
    Check(H5Pset_filter(dcpl.get(), static_cast<H5Z_filter_t>(kLzfFilterId), H5Z_FLAG_OPTIONAL, 0,
                        nullptr),
          "adding the LZF filter", where);
  }
  for (std::size_t m = 0; m < matrices.size(); ++m) {
    const std::vector<double> half = UpperTriangle(matrices[m], f);
    WriteArray(file, name, fmt::format("{}/c2_{:05d}", group_path, m + 1), {f, f}, half.data(),
               H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dcpl.get());
  }
}

void PutAttributes(hid_t file, const std::string& name, const std::string& group,
                   const GroupAttributes& attributes) {
  if (attributes.strings.empty() && attributes.numbers.empty()) return;
  h5::Group g = EnsureGroup(file, name, group);
  const Where where{name, group};
  for (const auto& [key, value] : attributes.strings) {
    h5::WriteStringAttribute(g.get(), key, value, where);
  }
  for (const auto& [key, value] : attributes.numbers) {
    h5::WriteDoubleAttribute(g.get(), key, value, where);
  }
}

// The root attributes of the file `file` (named `file_name`).
void WriteRootAttributes(hid_t file, const std::string& file_name,
                         const GroupAttributes& attributes) {
  for (const auto& [name, value] : attributes.strings) {
    h5::WriteStringAttribute(file, name, value, {file_name, "/"});
  }
  for (const auto& [name, value] : attributes.numbers) {
    h5::WriteDoubleAttribute(file, name, value, {file_name, "/"});
  }
}

// Flushes and closes the complete temporary file `tmp`.
void FlushAndClose(h5::File& file, const std::string& tmp) {
  Check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "flushing", {tmp, ""});
  file.Close({tmp, ""});
}

// Runs `body(file)` on "<path>.tmp" and renames it to `path` on success.
template <typename Body>
void WriteAtomically(const std::string& path, Body&& body) {
  const std::string tmp = path + ".tmp";
  h5::File file;
  try {
    file = h5::CreateFile(tmp);
    body(file.get(), tmp);
    FlushAndClose(file, tmp);
    PublishAtomically(tmp, path);
  } catch (...) {
    h5::DiscardFile(file, tmp);
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
}

}  // namespace

void WriteApsOld(const std::string& path, const std::vector<double>& q_list,
                 const std::vector<double>& phi_list,
                 const std::vector<std::vector<double>>& matrices,
                 const GroupAttributes& attributes) {
  const std::size_t f = CheckMatrices(matrices, path);
  if (q_list.size() != matrices.size() || phi_list.size() != matrices.size()) {
    ThrowBadInput(fmt::format("expected one q and one phi per matrix: {} q, {} phi, {} matrices",
                              q_list.size(), phi_list.size(), matrices.size()),
                  path);
  }
  WriteAtomically(path, [&](hid_t file, const std::string& name) {
    const hsize_t m = q_list.size();
    WriteArray(file, name, "/xpcs/dqlist", {1, m}, q_list.data(), H5T_IEEE_F64LE,
               H5T_NATIVE_DOUBLE);
    WriteArray(file, name, "/xpcs/dphilist", {1, m}, phi_list.data(), H5T_IEEE_F64LE,
               H5T_NATIVE_DOUBLE);
    WriteMatrices(file, name, "/exchange/C2T_all", matrices, f, /*lzf=*/false);
    PutAttributes(file, name, kSynthGroup, attributes);
  });
}

void WriteApsU(const std::string& path, const std::vector<double>& q_values,
               const std::vector<double>& phi_values,
               const std::vector<std::int64_t>& processed_bins,
               const std::vector<std::vector<double>>& matrices, bool lzf,
               const GroupAttributes& attributes) {
  const std::size_t f = CheckMatrices(matrices, path);
  if (processed_bins.size() != matrices.size()) {
    ThrowBadInput(fmt::format("expected one matrix per processed bin: {} bins, {} matrices",
                              processed_bins.size(), matrices.size()),
                  path);
  }
  WriteAtomically(path, [&](hid_t file, const std::string& name) {
    WriteArray(file, name, "/xpcs/qmap/dynamic_v_list_dim0", {q_values.size()}, q_values.data(),
               H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
    WriteArray(file, name, "/xpcs/qmap/dynamic_v_list_dim1", {phi_values.size()}, phi_values.data(),
               H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
    WriteArray(file, name, "/xpcs/twotime/processed_bins", {processed_bins.size()},
               processed_bins.data(), H5T_STD_I64LE, H5T_NATIVE_INT64);
    WriteMatrices(file, name, "/xpcs/twotime/correlation_map", matrices, f, lzf);
    PutAttributes(file, name, kSynthGroup, attributes);
  });
}

void WriteGroupAttributes(const std::string& path, const std::string& group,
                          const GroupAttributes& attributes) {
  h5::File file = h5::OpenForWrite(path);
  PutAttributes(file.get(), path, group, attributes);
  file.Close({path, ""});
}

GroupAttributes ReadAttributes(const std::string& path, const std::string& object) {
  const ReadCrashGuard guard(path, "the attributes of " + object);
  h5::File file = h5::OpenForRead(path);
  if (!h5::PathExists(file.get(), object)) {
    ThrowBadInput("missing object (expected a group or dataset)", path, object);
  }
  const Where where{path, object};
  auto obj = Own<h5::Handle<H5Oclose>>(H5Oopen(file.get(), object.c_str(), H5P_DEFAULT),
                                       "opening the object", where);
  GroupAttributes out;
  for (const std::string& name : h5::AttributeNames(obj.get(), where)) {
    auto attr = Own<h5::Attribute>(H5Aopen(obj.get(), name.c_str(), H5P_DEFAULT),
                                   "opening the attribute", where);
    auto type = Own<h5::Datatype>(H5Aget_type(attr.get()), "reading the attribute type", where);
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls == H5T_STRING) {
      out.strings.emplace_back(name, h5::ReadStringAttribute(obj.get(), name, where));
    } else if (cls == H5T_FLOAT || cls == H5T_INTEGER) {
      out.numbers.emplace_back(name, h5::ReadDoubleAttribute(obj.get(), name, where));
    }
  }
  return out;
}

bool DeflateAvailable() {
  h5::Hdf5Init();
  return H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0;
}

void WriteArraysFile(const std::string& path, const std::vector<NamedArray>& arrays,
                     const GroupAttributes& root_attributes, ArrayStorage storage) {
  ArrayFileWriter writer(path);
  for (const NamedArray& a : arrays) writer.Write(a, storage);
  writer.Commit(root_attributes);
}

struct ArrayFileWriter::Impl {
  std::string path, tmp;
  h5::File file;
  bool committed = false;
  // A file of several ranks: their communicator and this rank. Its HDF5 file is rank 0's alone (its
  // structure and attributes); the arrays' bytes go through `raw`, every rank's.
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  std::unique_ptr<SharedFile> raw;
  bool shared() const { return comm != MPI_COMM_NULL; }
  void CreateShared(const std::string& array_path, const std::vector<std::uint64_t>& dims,
                    const std::string& description, hid_t dcpl);
  void CommitShared(const GroupAttributes& root_attributes);
  struct Array {
    std::string name;
    std::vector<std::uint64_t> dims;
    h5::Dataset dataset;       // open from Create to Commit (no metadata reads in WriteSlab)
    std::uint64_t offset = 0;  // a file of several ranks: where its bytes start
    std::vector<std::uint64_t> chunk;  // ChunkShape: empty when contiguous and uncompressed
    ArrayStorage storage;
    // Compressed slab by slab (PackSlab), its chunks inside one slab.
    bool packed() const { return !chunk.empty() && chunk[0] == 1; }
  };
  std::vector<Array> arrays;

  Array& Find(const std::string& array_path) {
    for (Array& a : arrays) {
      if (a.name == array_path) return a;
    }
    ThrowInternal(fmt::format("{}: array {} was written before it was created", tmp, array_path));
  }
};

ArrayFileWriter::ArrayFileWriter(const std::string& path) : impl_(std::make_unique<Impl>()) {
  h5::Hdf5Init();
  impl_->path = path;
  impl_->tmp = path + ".tmp";
  try {
    impl_->file = h5::CreateFile(impl_->tmp);
  } catch (...) {
    std::error_code ignored;  // created, then the first write failed (e.g. a full disk)
    std::filesystem::remove(impl_->tmp, ignored);
    throw;
  }
}

ArrayFileWriter::ArrayFileWriter(const std::string& path, MPI_Comm comm)
    : impl_(std::make_unique<Impl>()) {
  h5::Hdf5Init();
  impl_->path = path;
  impl_->tmp = path + ".tmp";
  impl_->comm = comm;
  MPI_Comm_rank(comm, &impl_->rank);
  const Comm ranks(comm);
  try {
    // Rank 0 lays the file out with HDF5's own driver: large arrays start on a 4 KiB page,
    // so that their slabs go to the device directly (parallel/shared_file.h).
    RunCollectively(ranks, [&] {
      if (impl_->rank != 0) return;
      h5::PropList fapl = h5::MakeFileAccess(impl_->tmp);
      Check(H5Pset_alignment(fapl.get(), 64 * 1024, 4096), "aligning large arrays",
            {impl_->tmp, ""});
      impl_->file =
          Own<h5::File>(H5Fcreate(impl_->tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                        "creating the file", {impl_->tmp, ""});
    });
    impl_->raw = std::make_unique<SharedFile>(ranks, impl_->tmp, SharedFile::Open::kExisting);
  } catch (...) {
    // The same failure on every rank (agreed, or a collective open): nothing is left behind.
    if (impl_->rank == 0) {
      h5::DiscardFile(impl_->file, impl_->tmp);
      std::error_code ignored;
      std::filesystem::remove(impl_->tmp, ignored);
    }
    throw;
  }
}

ArrayFileWriter::~ArrayFileWriter() {
  if (impl_->committed) return;
  impl_->arrays.clear();
  if (!impl_->shared()) {
    h5::DiscardFile(impl_->file, impl_->tmp);
  } else {
    // Closed by every rank together (every rank unwinds after an agreed error), unless
    // Commit already closed it; rank 0's HDF5 file is its own.
    impl_->raw.reset();
    if (impl_->rank == 0) h5::DiscardFile(impl_->file, impl_->tmp);
  }
  if (impl_->rank != 0) return;
  std::error_code ignored;
  std::filesystem::remove(impl_->tmp, ignored);
}

void ArrayFileWriter::Create(const std::string& array_path, const std::vector<std::uint64_t>& dims,
                             const std::string& description, ArrayStorage storage) {
  HOMODYNE_CHECK(!dims.empty(), "an array needs at least one dimension");
  HOMODYNE_CHECK(storage.deflate_level >= 0 && storage.deflate_level <= 9,
                 "deflate level outside [0, 9]");
  const std::vector<hsize_t> shape(dims.begin(), dims.end());
  const Where where{impl_->tmp, array_path};
  std::vector<std::uint64_t> chunk_shape = ChunkShape(dims, storage);
  HOMODYNE_CHECK(!impl_->shared() || chunk_shape.empty(),
                 "a file of several ranks stores its arrays uncompressed");
  auto dcpl = Own<h5::PropList>(H5Pcreate(H5P_DATASET_CREATE), "dataset properties", where);
  if (!chunk_shape.empty()) {
    const std::vector<hsize_t> chunk(chunk_shape.begin(), chunk_shape.end());
    Check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
          "setting the chunk shape", where);
    Check(H5Pset_shuffle(dcpl.get()), "adding the shuffle filter", where);
    Check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(storage.deflate_level)),
          "adding the deflate filter", where);
    // Every element is written: no fill values.
    Check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "fill time", where);
  }
  if (impl_->shared()) {
    impl_->CreateShared(array_path, dims, description, dcpl.get());
    return;
  }
  auto ds =
      CreateDataset(impl_->file.get(), impl_->tmp, array_path, shape, H5T_IEEE_F64LE, dcpl.get());
  if (!description.empty()) {
    h5::WriteStringAttribute(ds.get(), "description", description, where);
  }
  impl_->arrays.push_back({array_path, dims, std::move(ds), 0, std::move(chunk_shape), storage});
}

void ArrayFileWriter::Impl::CreateShared(const std::string& array_path,
                                         const std::vector<std::uint64_t>& dims,
                                         const std::string& description, hid_t dcpl) {
  // The array's bytes are written by the ranks at its offset in the file, as HDF5 stores a
  // contiguous float64 array: little-endian, row-major. Its storage is allocated now and
  // never filled (every element is written).
  static_assert(std::endian::native == std::endian::little,
                "the ranks write float64 bytes as HDF5 stores them (little-endian)");
  const Where where{tmp, array_path};
  const Comm ranks(comm);
  h5::Dataset ds;
  std::uint64_t offset = 0;
  RunCollectively(ranks, [&] {
    if (rank != 0) return;
    Check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "allocation time", where);
    Check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "fill time", where);
    const std::vector<hsize_t> shape(dims.begin(), dims.end());
    ds = CreateDataset(file.get(), tmp, array_path, shape, H5T_IEEE_F64LE, dcpl);
    if (!description.empty()) {
      h5::WriteStringAttribute(ds.get(), "description", description, where);
    }
    const haddr_t at = H5Dget_offset(ds.get());
    if (at == HADDR_UNDEF) ThrowIoError("HDF5 did not place the array's storage", where.file);
    offset = static_cast<std::uint64_t>(at);
  });
  MPI_Bcast(&offset, 1, MPI_UINT64_T, 0, comm);
  arrays.push_back({array_path, dims, std::move(ds), offset, {}, ArrayStorage{}});
}

namespace {

// Checks that `values` are slab `index` of an array of shape `dims` (a 1-D array is one slab:
// all of it).
void CheckSlab(const std::vector<std::uint64_t>& dims, std::uint64_t index,
               std::span<const double> values) {
  HOMODYNE_CHECK(index < (dims.size() > 1 ? dims[0] : 1), "slab index out of range");
  std::uint64_t n = 1;
  for (std::size_t d = dims.size() > 1 ? 1 : 0; d < dims.size(); ++d) n *= dims[d];
  HOMODYNE_CHECK(values.size() == n, "slab size does not match the array's dimensions");
}

// Writes slab `index` of the dataset `ds` of shape `dims` (a file of several ranks:
// independently, with the default transfer properties).
void WriteSlabOf(const std::string& file_name, const std::string& array_path,
                 const std::vector<std::uint64_t>& dims, hid_t ds, std::uint64_t index,
                 std::span<const double> values) {
  const Where where{file_name, array_path};
  // A 1-D array is one slab: all of it.
  std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
  if (dims.size() > 1) {
    start[0] = index;
    count[0] = 1;
  }
  CheckSlab(dims, index, values);
  auto fspace = Own<h5::Dataspace>(H5Dget_space(ds), "getting the dataspace", where);
  auto mspace =
      Own<h5::Dataspace>(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                         "creating a memory space", where);
  Check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr),
        "selecting a hyperslab", where);
  Check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, values.data()),
        "writing the dataset", where);
}

// A slab's chunk grid: chunks per dimension (1 … nd−1; dimension 0 left 1) and their count.
struct SlabChunkGrid {
  std::vector<std::uint64_t> grid;
  std::size_t chunks = 1;
};
SlabChunkGrid ChunkGrid(const std::vector<std::uint64_t>& dims,
                        const std::vector<std::uint64_t>& chunk) {
  SlabChunkGrid g{std::vector<std::uint64_t>(dims.size(), 1), 1};
  for (std::size_t d = 1; d < dims.size(); ++d) {
    g.grid[d] = (dims[d] + chunk[d] - 1) / chunk[d];
    g.chunks *= g.grid[d];
  }
  return g;
}

// The first element (dimensions 1 … nd−1; dimension 0 left 0) of chunk number c of a slab's
// chunk grid, in row-major chunk order.
std::vector<std::uint64_t> ChunkOrigin(const std::vector<std::uint64_t>& grid,
                                       const std::vector<std::uint64_t>& chunk, std::size_t c) {
  std::vector<std::uint64_t> at(grid.size(), 0);
  for (std::size_t d = grid.size(); d-- > 1;) {
    at[d] = (c % grid[d]) * chunk[d];
    c /= grid[d];
  }
  return at;
}

// The bytes HDF5's shuffle filter makes of n float64 values (byte b of every value, then
// byte b + 1, …), deflated as its deflate filter does (zlib's compress2 at `level`).
std::vector<unsigned char> ShuffleDeflate(const double* values, std::size_t n, int level) {
  const std::size_t bytes = n * sizeof(double);
  std::vector<unsigned char> shuffled(bytes);
  const auto* in = reinterpret_cast<const unsigned char*>(values);
  for (std::size_t b = 0; b < sizeof(double); ++b) {
    unsigned char* out = shuffled.data() + b * n;
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i * sizeof(double) + b];
  }
  uLongf size = compressBound(static_cast<uLong>(bytes));
  std::vector<unsigned char> packed(size);
  const int rc = compress2(packed.data(), &size, shuffled.data(), static_cast<uLong>(bytes), level);
  if (rc != Z_OK) ThrowInternal(fmt::format("zlib compress2 failed ({})", rc));
  packed.resize(size);
  return packed;
}

}  // namespace

std::vector<std::uint64_t> ChunkShape(const std::vector<std::uint64_t>& dims,
                                      const ArrayStorage& storage) {
  std::uint64_t elements = 1;
  for (std::uint64_t d : dims) elements *= d;
  constexpr std::uint64_t kMinFilteredValues = 8192;  // smaller arrays (≤ 64 KiB) stay contiguous
  if (storage.deflate_level <= 0 || dims.size() < 2 || elements < kMinFilteredValues ||
      !DeflateAvailable()) {
    return {};
  }
  // Chunks of ≤ 512 KiB: whole rows of the innermost dimensions, as many as fit (at least
  // one). Inside one slab when asked (slabs packed apart, e.g. on other ranks) or
  // a slab is large (its chunks can then be compressed in threads, PackSlab); across slabs
  // only when they are small (HDF5's chunk cache, 1 MiB per dataset, holds such a chunk
  // while several slab writes fill it).
  constexpr std::uint64_t kChunkValues = std::uint64_t{1} << 16;
  std::vector<std::uint64_t> chunk(dims.size(), 1);
  std::uint64_t values = 1, slab = 1;
  for (std::size_t d = 1; d < dims.size(); ++d) slab *= dims[d];
  const std::size_t outermost = storage.chunks_in_slab || slab >= kChunkValues / 16 ? 1 : 0;
  for (std::size_t d = dims.size(); d-- > outermost;) {
    const std::uint64_t room = std::max<std::uint64_t>(1, kChunkValues / values);
    chunk[d] = std::min(dims[d], room);
    values *= chunk[d];
    if (chunk[d] < dims[d]) break;
  }
  return chunk;
}

std::vector<std::vector<unsigned char>> PackSlab(const std::vector<std::uint64_t>& dims,
                                                 const std::vector<std::uint64_t>& chunk,
                                                 std::span<const double> values,
                                                 const ArrayStorage& storage) {
  const std::size_t nd = dims.size();
  HOMODYNE_CHECK(nd >= 2 && chunk.size() == nd && chunk[0] == 1,
                 "PackSlab needs chunks inside one slab");
  std::uint64_t n = 1;
  for (std::size_t d = 1; d < nd; ++d) n *= dims[d];
  HOMODYNE_CHECK(values.size() == n, "slab size does not match the array's dimensions");
  // The chunk grid over dimensions 1 … nd−1, and the slab's and a chunk's strides.
  const auto [grid, chunks] = ChunkGrid(dims, chunk);
  std::vector<std::uint64_t> slab_stride(nd, 1), chunk_stride(nd, 1);
  for (std::size_t d = nd - 1; d-- > 1;) {
    slab_stride[d] = slab_stride[d + 1] * dims[d + 1];
    chunk_stride[d] = chunk_stride[d + 1] * chunk[d + 1];
  }
  const std::size_t chunk_values = chunk_stride[1] * chunk[1];
  std::vector<std::vector<unsigned char>> packed(chunks);
  std::atomic<std::size_t> next{0};
  const int threads = std::max(1, storage.threads);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  const auto work = [&](std::size_t t) {
    try {
      if (t > 0 && storage.thread_start) storage.thread_start(static_cast<int>(t));
      std::vector<double> buffer(chunk_values);
      for (std::size_t c = next++; c < chunks; c = next++) {
        const std::vector<std::uint64_t> at = ChunkOrigin(grid, chunk, c);
        std::fill(buffer.begin(), buffer.end(), 0.0);  // HDF5 pads edge chunks
        // Rows of the innermost dimension, over the chunk's other dimensions (odometer).
        const std::uint64_t run = std::min(chunk[nd - 1], dims[nd - 1] - at[nd - 1]);
        std::vector<std::uint64_t> e(nd, 0);  // position inside the chunk
        while (true) {
          bool inside = true;
          std::size_t src = 0, dst = 0;
          for (std::size_t d = 1; d < nd; ++d) {
            inside = inside && at[d] + e[d] < dims[d];
            src += (at[d] + e[d]) * slab_stride[d];
            dst += e[d] * chunk_stride[d];
          }
          if (inside) std::memcpy(&buffer[dst], &values[src], run * sizeof(double));
          std::size_t d = nd - 1;
          while (d-- > 1 && ++e[d] == chunk[d]) e[d] = 0;
          if (d == 0 || nd <= 2) break;
        }
        packed[c] = ShuffleDeflate(buffer.data(), chunk_values, storage.deflate_level);
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  const std::size_t n_threads = std::min<std::size_t>(static_cast<std::size_t>(threads), chunks);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < n_threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return packed;
}

void ArrayFileWriter::WritePackedSlab(const std::string& array_path, std::uint64_t index,
                                      const std::vector<std::vector<unsigned char>>& chunks) {
  Impl::Array& array = impl_->Find(array_path);
  const Where where{impl_->tmp, array_path};
  HOMODYNE_CHECK(array.packed(),
                 "packed slabs go to a compressed array whose chunks lie inside one slab");
  HOMODYNE_CHECK(index < array.dims[0], "slab index out of range");
  const auto [grid, count] = ChunkGrid(array.dims, array.chunk);
  HOMODYNE_CHECK(chunks.size() == count, "packed slab has the wrong number of chunks");
  for (std::size_t c = 0; c < count; ++c) {
    const std::vector<std::uint64_t> at = ChunkOrigin(grid, array.chunk, c);
    std::vector<hsize_t> offset(at.begin(), at.end());
    offset[0] = index;
    Check(H5Dwrite_chunk(array.dataset.get(), H5P_DEFAULT, 0, offset.data(), chunks[c].size(),
                         chunks[c].data()),
          "writing a compressed chunk", where);
  }
}

void ArrayFileWriter::WriteSlab(const std::string& array_path, std::uint64_t index,
                                std::span<const double> values) {
  Impl::Array& array = impl_->Find(array_path);
  if (array.packed()) {
    // Compressed here, in storage.threads threads, and stored as they are.
    WritePackedSlab(array_path, index, PackSlab(array.dims, array.chunk, values, array.storage));
    return;
  }
  if (impl_->shared()) {
    CheckSlab(array.dims, index, values);
    const std::span<const unsigned char> bytes(
        reinterpret_cast<const unsigned char*>(values.data()), values.size_bytes());
    impl_->raw->WriteAt(array.offset + index * bytes.size(), bytes);
    return;
  }
  WriteSlabOf(impl_->tmp, array_path, array.dims, array.dataset.get(), index, values);
}

void ArrayFileWriter::Write(const NamedArray& array, ArrayStorage storage) {
  std::uint64_t n = 1;
  for (auto d : array.dims) n *= d;
  HOMODYNE_CHECK(n == array.data.size(), "array size does not match its dimensions");
  Create(array.path, array.dims, array.description, storage);
  const std::uint64_t slabs = array.dims.size() > 1 ? array.dims[0] : 1;
  const std::uint64_t per_slab = slabs > 0 ? n / slabs : 0;
  for (std::uint64_t s = 0; s < slabs; ++s) {
    WriteSlab(array.path, s, std::span<const double>(array.data).subspan(s * per_slab, per_slab));
  }
}

void ArrayFileWriter::Commit(const GroupAttributes& root_attributes) {
  if (impl_->shared()) {
    impl_->CommitShared(root_attributes);
    return;
  }
  const hid_t file = impl_->file.get();
  WriteRootAttributes(file, impl_->tmp, root_attributes);
  impl_->arrays.clear();
  FlushAndClose(impl_->file, impl_->tmp);
  PublishAtomically(impl_->tmp, impl_->path);
  impl_->committed = true;
}

void ArrayFileWriter::Impl::CommitShared(const GroupAttributes& root_attributes) {
  // Every rank's bytes synced and its descriptors closed (together), then rank 0's HDF5
  // structure flushed and closed; every rank knows whether all of it held before rank 0
  // publishes the file.
  std::exception_ptr failed;
  try {
    raw->Close();
  } catch (...) {
    failed = std::current_exception();
  }
  raw.reset();
  arrays.clear();  // rank 0's datasets closed before its file
  if (rank == 0 && !failed) {
    try {
      WriteRootAttributes(file.get(), tmp, root_attributes);
      FlushAndClose(file, tmp);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  int ok = failed ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (failed) std::rethrow_exception(failed);
  if (ok == 0) ThrowIoError("writing the file failed on another rank", tmp);
  if (rank == 0) PublishAtomically(tmp, path);
  committed = true;
}

}  // namespace homodyne::io
