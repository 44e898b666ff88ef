#include "parallel/shared_file.h"

#include <algorithm>
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

}  // namespace

SharedFile::SharedFile(const Comm& comm, std::filesystem::path path) : path_(std::move(path)) {
  // MPI_File_open is collective and reports the same outcome on every rank.
  const int rc = MPI_File_open(comm.get(), path_.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY,
                               MPI_INFO_NULL, &file_);
  if (rc != MPI_SUCCESS) {
    file_ = MPI_FILE_NULL;
    ThrowIoError("cannot create: " + MpiErrorText(rc), path_.string());
  }
  // An existing file of the same name keeps its bytes past what is written: drop them.
  const int size_rc = MPI_File_set_size(file_, 0);
  if (size_rc != MPI_SUCCESS) {
    MPI_File_close(&file_);
    ThrowIoError("cannot truncate: " + MpiErrorText(size_rc), path_.string());
  }
}

SharedFile::~SharedFile() {
  if (file_ != MPI_FILE_NULL) MPI_File_close(&file_);
}

void SharedFile::WriteAt(std::uint64_t offset, std::span<const unsigned char> bytes) {
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
  const int sync_rc = MPI_File_sync(file_);
  const int close_rc = MPI_File_close(&file_);
  file_ = MPI_FILE_NULL;
  if (sync_rc != MPI_SUCCESS || close_rc != MPI_SUCCESS) {
    ThrowIoError(
        "cannot flush and close: " + MpiErrorText(sync_rc != MPI_SUCCESS ? sync_rc : close_rc),
        path_.string());
  }
}

}  // namespace homodyne
