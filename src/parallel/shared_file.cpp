#include "parallel/shared_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {

namespace {

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(std::max(length, 0)));
}

// Pages written directly: 4 KiB, the page size and the largest logical block of common
// devices, so that a direct write is aligned for the device and never shares a page-cache
// page with a buffered one. Ranges shorter than kMinDirect stay on the MPI-IO route.
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMinDirect = std::uint64_t{1} << 20;
// Directly written bytes pass through an aligned buffer of this size (O_DIRECT wants the
// memory aligned too; a copy within the cache costs far less than the page cache's).
constexpr std::size_t kBounce = std::size_t{4} << 20;

bool DirectIoWanted() {
  const char* off = std::getenv("HOMODYNE_NO_DIRECT_IO");
  return off == nullptr || off[0] == '\0' || std::string(off) == "0";
}

}  // namespace

// This rank's O_DIRECT descriptor of the file (-1: refused or not wanted) and its buffer.
struct SharedFile::Direct {
  int fd = -1;
  unsigned char* buffer = nullptr;
  std::uint64_t bytes = 0;
  ~Direct() {
    if (fd >= 0) ::close(fd);
    std::free(buffer);
  }
  void Drop() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

SharedFile::SharedFile(const Comm& comm, std::filesystem::path path, Open open)
    : path_(std::move(path)), direct_(std::make_unique<Direct>()) {
  // MPI_File_open is collective and reports the same outcome on every rank.
  const int mode = open == Open::kCreate ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_WRONLY;
  const int rc = MPI_File_open(comm.get(), path_.c_str(), mode, MPI_INFO_NULL, &file_);
  if (rc != MPI_SUCCESS) {
    file_ = MPI_FILE_NULL;
    ThrowIoError(
        std::string(open == Open::kCreate ? "cannot create: " : "cannot open: ") + MpiErrorText(rc),
        path_.string());
  }
  // An existing file of the same name keeps its bytes past what is written: drop them.
  if (open == Open::kCreate) {
    const int size_rc = MPI_File_set_size(file_, 0);
    if (size_rc != MPI_SUCCESS) {
      MPI_File_close(&file_);
      ThrowIoError("cannot truncate: " + MpiErrorText(size_rc), path_.string());
    }
  }
  // Each rank's own: a file system that refuses O_DIRECT (tmpfs, some network ones) leaves
  // this rank on the MPI-IO route, which is always correct.
  if (!DirectIoWanted()) return;
  direct_->buffer = static_cast<unsigned char*>(std::aligned_alloc(kPage, kBounce));
  if (direct_->buffer != nullptr) {
    direct_->fd = ::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  }
}

SharedFile::~SharedFile() {
  direct_->Drop();
  if (file_ != MPI_FILE_NULL) MPI_File_close(&file_);
}

std::uint64_t SharedFile::direct_bytes() const { return direct_->bytes; }

void SharedFile::WriteAt(std::uint64_t offset, std::span<const unsigned char> bytes) {
  const std::uint64_t end = offset + bytes.size();
  const std::uint64_t first = (offset + kPage - 1) / kPage * kPage;
  const std::uint64_t last = end / kPage * kPage;
  if (direct_->fd < 0 || bytes.size() < kMinDirect || last <= first) {
    WriteThroughMpi(offset, bytes);
    return;
  }
  // The partial pages at either end through MPI-IO, the whole pages between directly.
  WriteThroughMpi(offset, bytes.first(first - offset));
  const auto pages = bytes.subspan(first - offset, last - first);
  if (!WriteDirect(first, pages)) WriteThroughMpi(first, pages);
  WriteThroughMpi(last, bytes.subspan(last - offset));
}

bool SharedFile::WriteDirect(std::uint64_t offset, std::span<const unsigned char> bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const std::size_t n = std::min(kBounce, bytes.size() - done);
    std::memcpy(direct_->buffer, bytes.data() + done, n);
    std::size_t put = 0;
    while (put < n) {
      const ssize_t w = ::pwrite(direct_->fd, direct_->buffer + put, n - put,
                                 static_cast<off_t>(offset + done + put));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EINVAL && direct_->bytes == 0) {
        // The file system accepted the open but not the write's alignment: buffered from now.
        direct_->Drop();
        return false;
      }
      if (w < 0) {
        ThrowIoError(
            fmt::format("write failed at byte {}: {}", offset + done + put, std::strerror(errno)),
            path_.string());
      }
      // A short direct write ends on a block: the rest cannot follow aligned (disk full).
      if (w == 0 || static_cast<std::uint64_t>(w) % kPage != 0) {
        ThrowIoError(fmt::format("short write at byte {} ({} of {} bytes; disk full?)",
                                 offset + done + put, w, n - put),
                     path_.string());
      }
      put += static_cast<std::size_t>(w);
      direct_->bytes += static_cast<std::uint64_t>(w);
    }
    done += n;
  }
  return true;
}

void SharedFile::WriteThroughMpi(std::uint64_t offset, std::span<const unsigned char> bytes) {
  // In pieces below MPI's int count limit.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < bytes.size();) {
    const std::size_t n = std::min(kPiece, bytes.size() - done);
    MPI_Status status;
    const int rc = MPI_File_write_at(file_, static_cast<MPI_Offset>(offset + done),
                                     bytes.data() + done, static_cast<int>(n), MPI_BYTE, &status);
    int written = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&status, MPI_BYTE, &written);
    if (rc != MPI_SUCCESS || static_cast<std::size_t>(written) != n) {
      ThrowIoError(rc != MPI_SUCCESS
                       ? fmt::format("write failed at byte {}: {}", offset + done, MpiErrorText(rc))
                       : fmt::format("short write at byte {} ({} of {} bytes; disk full?)",
                                     offset + done, written, n),
                   path_.string());
    }
    done += n;
  }
}

void SharedFile::Close() {
  // The direct descriptor first: its writes are on the device already, and MPI-IO's sync
  // below flushes the device's cache for the whole file.
  const int direct_rc = direct_->fd >= 0 ? ::close(direct_->fd) : 0;
  const int direct_errno = errno;
  direct_->fd = -1;
  const int sync_rc = MPI_File_sync(file_);
  const int close_rc = MPI_File_close(&file_);
  file_ = MPI_FILE_NULL;
  if (direct_rc != 0) {
    ThrowIoError(fmt::format("cannot close: {}", std::strerror(direct_errno)), path_.string());
  }
  if (sync_rc != MPI_SUCCESS || close_rc != MPI_SUCCESS) {
    ThrowIoError(
        "cannot flush and close: " + MpiErrorText(sync_rc != MPI_SUCCESS ? sync_rc : close_rc),
        path_.string());
  }
}

}  // namespace homodyne
