// RAII ownership of HDF5 identifiers and checked HDF5 calls (private to src/io).
//
// Every identifier is owned by exactly one Handle, closed with the matching H5*close
// function. Every HDF5 call that can fail goes through Check*, which turns the HDF5
// error stack into a homodyne::Error naming the file and the object path. The
// automatic printing of the HDF5 error stack is switched off (Hdf5Init), so users see
// one message from us instead of a page of HDF5 traceback.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/errors.h"

namespace homodyne::io::h5 {

// Silences HDF5's automatic error printing and registers the LZF filter. Cheap and
// idempotent; every entry point that opens or creates a file calls it.
void Hdf5Init();

// The current HDF5 error stack summarised in one line ("" if empty); clears the stack.
std::string TakeHdf5ErrorStack();

// Where a failing call happened, for messages.
struct Where {
  std::string file;
  std::string object;  // dataset/group/attribute path
};

[[noreturn]] void ThrowHdf5(ErrorKind kind, std::string_view what, const Where& where);

// Checks an herr_t/htri_t-style status (negative = failure).
inline void Check(herr_t status, std::string_view what, const Where& where,
                  ErrorKind kind = ErrorKind::kIo) {
  if (status < 0) ThrowHdf5(kind, what, where);
}

using CloseFn = herr_t (*)(hid_t);

// HDF5 1.10 keeps a file whose close failed half-closed: the library's shutdown (at exit, or
// inside MPI_Finalize) crashes on it. A failed file close is noted here, and Hdf5ShutDown()
// then leaves the library as it is; Hdf5InitBeforeMpi() keeps the shutdown in our hands
// (HDF5 registers none of its own when it starts before MPI).
void NoteFailedFileClose() noexcept;
void Hdf5InitBeforeMpi();
void Hdf5ShutDown() noexcept;

// Owns one HDF5 identifier.
template <CloseFn kClose>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { Reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      Reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Gives up ownership (the caller closes the identifier).
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
  void Reset() noexcept {
    if (id_ >= 0) Noted(kClose(id_));  // close errors are ignored (nothrow destructor)
    id_ = H5I_INVALID_HID;
  }
  // Closes now and reports a failure (used for files whose close flushes data).
  void Close(const Where& where) {
    if (id_ < 0) return;
    const herr_t status = Noted(kClose(id_));
    id_ = H5I_INVALID_HID;
    Check(status, "closing", where);
  }

 private:
  static herr_t Noted(herr_t status) noexcept {
    if (status < 0 && kClose == &H5Fclose) NoteFailedFileClose();
    return status;
  }
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using PropList = Handle<H5Pclose>;
using Attribute = Handle<H5Aclose>;
using Datatype = Handle<H5Tclose>;

// Closes a file that is being abandoned (its temporary is removed next); never throws. A
// close whose flush fails (a full disk, a quota, a file size limit) leaves HDF5 with a
// half-closed file that its shutdown (at exit, or inside MPI_Finalize) crashes on, and a
// retried close crashes too: the flush is made to succeed. A one-process file's descriptor
// is redirected to an anonymous memory file first (under a file size limit, its soft limit is
// raised to the hard one while it closes); a file of another driver is truncated first, which
// frees the space it took on a full disk.
void DiscardFile(File& file, const std::string& path) noexcept;

// Takes ownership of `id`; throws if the call that produced it failed.
template <typename H>
H Own(hid_t id, std::string_view what, const Where& where, ErrorKind kind = ErrorKind::kIo) {
  if (id < 0) ThrowHdf5(kind, what, where);
  return H(id);
}

// A file-access property list with file locking disabled (and, if `comm` is not
// MPI_COMM_NULL, the MPI-IO driver on that communicator).
PropList MakeFileAccess(const std::string& path, MPI_Comm comm = MPI_COMM_NULL);

// Opens an existing HDF5 file read-only. A missing file or a file that is not HDF5
// is kBadInput naming the file.
File OpenForRead(const std::string& path, MPI_Comm comm = MPI_COMM_NULL);
// Opens an existing file read-write (serial driver).
File OpenForWrite(const std::string& path);
// Creates (truncates) a file (serial driver).
File CreateFile(const std::string& path);

// True if the link `path` exists and resolves to an object (all intermediate groups too).
bool PathExists(hid_t file, const std::string& path);

// The kind of object at `path` (H5O_TYPE_UNKNOWN if absent).
H5O_type_t ObjectType(hid_t file, const std::string& path);

Dataset OpenDataset(hid_t file, const std::string& file_name, const std::string& path);
Group OpenGroup(hid_t file, const std::string& file_name, const std::string& path);

// Dimensions of a dataset.
std::vector<hsize_t> DatasetDims(hid_t dataset, const Where& where);

// The stored data must be where the header says and as large as the dataspace needs:
// compact data exactly elements × element size, contiguous data allocated within the
// file. (A corrupt header otherwise makes HDF5 copy from a missing buffer.) Chunked
// data is read chunk by chunk and checked by HDF5. Throws kBadInput naming the dataset.
void CheckStorageMatchesShape(hid_t dataset, std::uint64_t elements, const Where& where);

// Reads a whole dataset as doubles (any numeric type is converted by HDF5). Refuses
// datasets larger than `max_elements`.
std::vector<double> ReadAllDoubles(hid_t dataset, const Where& where,
                                   std::uint64_t max_elements = 1ULL << 28);
// Reads a whole integer dataset as int64.
std::vector<std::int64_t> ReadAllInt64(hid_t dataset, const Where& where,
                                       std::uint64_t max_elements = 1ULL << 28);

// Names of the links of a group in h5py `keys()` order: creation order when the
// group tracks it, else byte-wise name order.
std::vector<std::string> GroupKeysInH5pyOrder(hid_t group, const Where& where);

// Attribute helpers on any object.
void WriteStringAttribute(hid_t object, const std::string& name, const std::string& value,
                          const Where& where);
void WriteDoubleAttribute(hid_t object, const std::string& name, double value, const Where& where);
std::string ReadStringAttribute(hid_t object, const std::string& name, const Where& where);
double ReadDoubleAttribute(hid_t object, const std::string& name, const Where& where);
std::vector<std::string> AttributeNames(hid_t object, const Where& where);

}  // namespace homodyne::io::h5
