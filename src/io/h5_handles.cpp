#include "io/h5_handles.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "io/lzf_filter.h"

namespace homodyne::io::h5 {
namespace {

struct StackText {
  std::vector<std::string> lines;
};

herr_t CollectError(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* text = static_cast<StackText*>(data);
  if (err != nullptr && err->desc != nullptr && err->desc[0] != '\0') {
    text->lines.emplace_back(err->desc);
  }
  return 0;
}

// The HDF5 superblock signature sits at offset 0, 512, 1024, 2048, ... of the file.
bool HasHdf5Signature(const std::string& path) {
  static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  bool found = false;
  for (long offset = 0; !found && offset < (1L << 40); offset = offset == 0 ? 512 : offset * 2) {
    char buf[8];
    if (std::fseek(f, offset, SEEK_SET) != 0 || std::fread(buf, 1, 8, f) != 8) break;
    found = std::memcmp(buf, kSignature, 8) == 0;
  }
  std::fclose(f);
  return found;
}

}  // namespace

void Hdf5Init() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  RegisterLzfFilter();
}

namespace {
std::atomic<bool> g_failed_file_close{false};
}  // namespace

void NoteFailedFileClose() noexcept { g_failed_file_close = true; }

void Hdf5InitBeforeMpi() {
  H5dont_atexit();
  Hdf5Init();
}

void Hdf5ShutDown() noexcept {
  if (!g_failed_file_close) H5close();
}

void DiscardFile(File& file, const std::string& path) noexcept {
  const hid_t id = file.release();
  if (id < 0) return;
  // A file of the POSIX driver: its descriptor is pointed at an anonymous memory file, where
  // the close's flush and truncation cannot fail; the file itself is removed next, untouched.
  bool swapped = false;
  const hid_t fapl = H5Fget_access_plist(id);
  void* handle = nullptr;
  if (fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(id, fapl, &handle) >= 0 &&
      handle != nullptr) {
    const int scratch = ::memfd_create("homodyne-discarded-file", MFD_CLOEXEC);
    if (scratch >= 0) {
      swapped = ::dup2(scratch, *static_cast<int*>(handle)) >= 0;
      ::close(scratch);
    }
  }
  if (fapl >= 0) H5Pclose(fapl);
  // Otherwise (another driver, or no memory file) its contents first, so that the close's
  // flush finds on a full disk the space they took.
  if (!swapped) (void)::truncate(path.c_str(), 0);
  // A file size limit (ulimit -f) applies to the memory file too: the soft limit is raised to
  // the hard one for the close.
  rlimit saved{};
  const bool raise =
      swapped && ::getrlimit(RLIMIT_FSIZE, &saved) == 0 && saved.rlim_cur != saved.rlim_max;
  if (raise) {
    rlimit raised = saved;
    raised.rlim_cur = saved.rlim_max;
    (void)::setrlimit(RLIMIT_FSIZE, &raised);
  }
  if (H5Fclose(id) < 0) NoteFailedFileClose();
  if (raise) (void)::setrlimit(RLIMIT_FSIZE, &saved);
  H5Eclear2(H5E_DEFAULT);
}

std::string TakeHdf5ErrorStack() {
  StackText text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, CollectError, &text);
  H5Eclear2(H5E_DEFAULT);
  if (text.lines.empty()) return {};
  // The first entry is the API call, the last the root cause; keep both, dedupe.
  std::string out = text.lines.front();
  if (text.lines.size() > 1 && text.lines.back() != text.lines.front()) {
    out += " (" + text.lines.back() + ")";
  }
  return out;
}

void ThrowHdf5(ErrorKind kind, std::string_view what, const Where& where) {
  std::string detail = TakeHdf5ErrorStack();
  std::string message = fmt::format("HDF5 {} failed", what);
  if (!detail.empty()) message += ": " + detail;
  throw Error(kind, std::move(message), {where.file, where.object, -1});
}

PropList MakeFileAccess(const std::string& path, MPI_Comm comm) {
  Hdf5Init();
  const Where where{path, ""};
  auto fapl = Own<PropList>(H5Pcreate(H5P_FILE_ACCESS), "file-access property list", where);
  Check(H5Pset_file_locking(fapl.get(), 0, 1), "disabling file locking", where);
  if (comm != MPI_COMM_NULL) {
    Check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "selecting the MPI-IO driver", where);
  }
  return fapl;
}

File OpenForRead(const std::string& path, MPI_Comm comm) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    ThrowBadInput("data file not found (expected an existing HDF5 file)", path);
  }
  if (std::filesystem::is_directory(path, ec)) {
    ThrowBadInput("expected an HDF5 file, found a directory", path);
  }
  PropList fapl = MakeFileAccess(path, comm);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {
    const std::string detail = TakeHdf5ErrorStack();
    if (!HasHdf5Signature(path)) {
      ThrowBadInput("not an HDF5 file (no HDF5 signature found; expected an HDF5 XPCS file)", path);
    }
    ThrowBadInput("could not open the HDF5 file" + (detail.empty() ? "" : ": " + detail), path);
  }
  return File(id);
}

File OpenForWrite(const std::string& path) {
  PropList fapl = MakeFileAccess(path);
  return Own<File>(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get()), "opening for writing",
                   {path, ""});
}

File CreateFile(const std::string& path) {
  PropList fapl = MakeFileAccess(path);
  return Own<File>(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                   "creating the file", {path, ""});
}

bool PathExists(hid_t file, const std::string& path) {
  if (path.empty() || path == "/") return true;
  // Check every prefix: H5Lexists fails (rather than returning 0) on a missing parent.
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    const htri_t exists = H5Lexists(file, prefix.c_str(), H5P_DEFAULT);
    if (exists <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (H5Oexists_by_name(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

H5O_type_t ObjectType(hid_t file, const std::string& path) {
  if (!PathExists(file, path)) return H5O_TYPE_UNKNOWN;
  H5O_info_t info;
  if (H5Oget_info_by_name2(file, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5O_TYPE_UNKNOWN;
  }
  return info.type;
}

Dataset OpenDataset(hid_t file, const std::string& file_name, const std::string& path) {
  const H5O_type_t type = ObjectType(file, path);
  if (type == H5O_TYPE_UNKNOWN)
    ThrowBadInput("missing dataset (expected it to exist)", file_name, path);
  if (type != H5O_TYPE_DATASET) ThrowBadInput("expected a dataset, found a group", file_name, path);
  return Own<Dataset>(H5Dopen2(file, path.c_str(), H5P_DEFAULT), "opening the dataset",
                      {file_name, path}, ErrorKind::kBadInput);
}

Group OpenGroup(hid_t file, const std::string& file_name, const std::string& path) {
  const H5O_type_t type = ObjectType(file, path);
  if (type == H5O_TYPE_UNKNOWN)
    ThrowBadInput("missing group (expected it to exist)", file_name, path);
  if (type != H5O_TYPE_GROUP) ThrowBadInput("expected a group, found a dataset", file_name, path);
  return Own<Group>(H5Gopen2(file, path.c_str(), H5P_DEFAULT), "opening the group",
                    {file_name, path}, ErrorKind::kBadInput);
}

std::vector<hsize_t> DatasetDims(hid_t dataset, const Where& where) {
  auto space = Own<Dataspace>(H5Dget_space(dataset), "getting the dataspace", where);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) ThrowHdf5(ErrorKind::kBadInput, "reading the rank", where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) {
    Check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), "reading dimensions",
          where);
  }
  return dims;
}

namespace {
std::uint64_t CheckedElementCount(const std::vector<hsize_t>& dims, std::uint64_t max_elements,
                                  const Where& where) {
  std::uint64_t n = 1;
  for (hsize_t d : dims) {
    if (d != 0 && n > max_elements / d) {
      ThrowBadInput(
          fmt::format("dataset declares more than {} elements; refusing to read it", max_elements),
          where.file, where.object);
    }
    n *= d;
  }
  return n;
}

// The stored type must be a plain number: HDF5 converts through buffers of n × the
// stored element size, so a corrupt header declaring huge elements (or a string or
// compound type) must be refused before H5Dread allocates them.
void CheckStoredNumber(hid_t dataset, const Where& where) {
  auto type = Own<Datatype>(H5Dget_type(dataset), "reading the datatype", where);
  const H5T_class_t cls = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || size == 0 || size > 16) {
    ThrowBadInput(fmt::format("expected numbers (integer or float of at most 16 bytes), found "
                              "a datatype of class {} and size {} bytes",
                              static_cast<int>(cls), size),
                  where.file, where.object);
  }
}
}  // namespace

void CheckStorageMatchesShape(hid_t dataset, std::uint64_t elements, const Where& where) {
  auto dcpl = Own<PropList>(H5Dget_create_plist(dataset), "reading creation properties", where);
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout != H5D_COMPACT && layout != H5D_CONTIGUOUS) return;
  auto type = Own<Datatype>(H5Dget_type(dataset), "reading the datatype", where);
  const std::uint64_t needed = elements * H5Tget_size(type.get());
  const std::uint64_t stored = H5Dget_storage_size(dataset);
  if (layout == H5D_COMPACT && stored != needed) {
    ThrowBadInput(
        fmt::format("corrupt dataset: its shape needs {} bytes but {} are stored", needed, stored),
        where.file, where.object);
  }
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(dataset);
    if (offset == HADDR_UNDEF) return;  // never written: reads give the fill value
    hsize_t file_size = 0;
    const hid_t file = H5Iget_file_id(dataset);
    const herr_t rc = file >= 0 ? H5Fget_filesize(file, &file_size) : -1;
    if (file >= 0) H5Fclose(file);
    Check(rc, "reading the file size", where);
    if (offset > file_size || needed > file_size - offset) {
      ThrowBadInput(fmt::format("truncated or corrupt file: the dataset's {} bytes at offset {} "
                                "extend beyond the end of the file ({} bytes)",
                                needed, offset, file_size),
                    where.file, where.object);
    }
  }
}

std::vector<double> ReadAllDoubles(hid_t dataset, const Where& where, std::uint64_t max_elements) {
  const auto dims = DatasetDims(dataset, where);
  const std::uint64_t n = CheckedElementCount(dims, max_elements, where);
  if (n > 0) CheckStoredNumber(dataset, where);
  if (n > 0) CheckStorageMatchesShape(dataset, n, where);
  std::vector<double> out(n);
  if (!out.empty()) {
    Check(H5Dread(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
          "reading the dataset as float64", where, ErrorKind::kBadInput);
  }
  return out;
}

std::vector<std::int64_t> ReadAllInt64(hid_t dataset, const Where& where,
                                       std::uint64_t max_elements) {
  const auto dims = DatasetDims(dataset, where);
  const std::uint64_t n = CheckedElementCount(dims, max_elements, where);
  if (n > 0) CheckStoredNumber(dataset, where);
  if (n > 0) CheckStorageMatchesShape(dataset, n, where);
  std::vector<std::int64_t> out(n);
  if (!out.empty()) {
    Check(H5Dread(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
          "reading the dataset as int64", where, ErrorKind::kBadInput);
  }
  return out;
}

namespace {
herr_t CollectName(hid_t /*group*/, const char* name, const H5L_info_t* /*info*/, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> GroupKeysInH5pyOrder(hid_t group, const Where& where) {
  auto gcpl = Own<PropList>(H5Gget_create_plist(group), "reading group creation properties", where);
  unsigned flags = 0;
  Check(H5Pget_link_creation_order(gcpl.get(), &flags), "reading link creation order", where);
  const H5_index_t index =
      (flags & H5P_CRT_ORDER_TRACKED) != 0 ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> names;
  hsize_t idx = 0;
  Check(H5Literate(group, index, H5_ITER_INC, &idx, CollectName, &names), "listing the group",
        where);
  return names;
}

void WriteStringAttribute(hid_t object, const std::string& name, const std::string& value,
                          const Where& where) {
  const Where w{where.file, where.object + "@" + name};
  if (H5Aexists(object, name.c_str()) > 0) Check(H5Adelete(object, name.c_str()), "deleting", w);
  auto type = Own<Datatype>(H5Tcopy(H5T_C_S1), "creating a string type", w);
  Check(H5Tset_size(type.get(), H5T_VARIABLE), "sizing a string type", w);
  Check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "setting UTF-8", w);
  auto space = Own<Dataspace>(H5Screate(H5S_SCALAR), "creating a scalar space", w);
  auto attr = Own<Attribute>(
      H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
      "creating the attribute", w);
  const char* ptr = value.c_str();
  Check(H5Awrite(attr.get(), type.get(), &ptr), "writing the attribute", w);
}

void WriteDoubleAttribute(hid_t object, const std::string& name, double value, const Where& where) {
  const Where w{where.file, where.object + "@" + name};
  if (H5Aexists(object, name.c_str()) > 0) Check(H5Adelete(object, name.c_str()), "deleting", w);
  auto space = Own<Dataspace>(H5Screate(H5S_SCALAR), "creating a scalar space", w);
  auto attr = Own<Attribute>(
      H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
      "creating the attribute", w);
  Check(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value), "writing the attribute", w);
}

namespace {
Attribute OpenAttribute(hid_t object, const std::string& name, const Where& w) {
  if (H5Aexists(object, name.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    ThrowBadInput("missing attribute (expected it to exist)", w.file, w.object);
  }
  return Own<Attribute>(H5Aopen(object, name.c_str(), H5P_DEFAULT), "opening the attribute", w);
}
}  // namespace

std::string ReadStringAttribute(hid_t object, const std::string& name, const Where& where) {
  const Where w{where.file, where.object + "@" + name};
  Attribute attr = OpenAttribute(object, name, w);
  auto file_type = Own<Datatype>(H5Aget_type(attr.get()), "reading the attribute type", w);
  if (H5Tget_class(file_type.get()) != H5T_STRING) {
    ThrowBadInput("expected a string attribute", w.file, w.object);
  }
  auto space = Own<Dataspace>(H5Aget_space(attr.get()), "reading the attribute space", w);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    ThrowBadInput("expected a scalar string attribute", w.file, w.object);
  }
  if (H5Tis_variable_str(file_type.get()) > 0) {
    auto mem = Own<Datatype>(H5Tcopy(H5T_C_S1), "creating a string type", w);
    Check(H5Tset_size(mem.get(), H5T_VARIABLE), "sizing a string type", w);
    Check(H5Tset_cset(mem.get(), H5Tget_cset(file_type.get())), "setting the charset", w);
    char* ptr = nullptr;
    Check(H5Aread(attr.get(), mem.get(), &ptr), "reading the attribute", w);
    std::string out = ptr != nullptr ? ptr : "";
    H5free_memory(ptr);
    return out;
  }
  const std::size_t size = H5Tget_size(file_type.get());
  auto mem = Own<Datatype>(H5Tcopy(H5T_C_S1), "creating a string type", w);
  Check(H5Tset_size(mem.get(), size + 1), "sizing a string type", w);
  std::string out(size + 1, '\0');
  Check(H5Aread(attr.get(), mem.get(), out.data()), "reading the attribute", w);
  out.resize(std::strlen(out.c_str()));
  return out;
}

double ReadDoubleAttribute(hid_t object, const std::string& name, const Where& where) {
  const Where w{where.file, where.object + "@" + name};
  Attribute attr = OpenAttribute(object, name, w);
  auto space = Own<Dataspace>(H5Aget_space(attr.get()), "reading the attribute space", w);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    ThrowBadInput("expected a scalar numeric attribute", w.file, w.object);
  }
  double value = 0.0;
  Check(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), "reading the attribute as float64", w,
        ErrorKind::kBadInput);
  return value;
}

namespace {
herr_t CollectAttrName(hid_t /*loc*/, const char* name, const H5A_info_t* /*info*/, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> AttributeNames(hid_t object, const Where& where) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  Check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &idx, CollectAttrName, &names),
        "listing attributes", where);
  return names;
}

}  // namespace homodyne::io::h5
