#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {
namespace {

[[noreturn]] void ThrowErrno(const std::string& what, const std::filesystem::path& path) {
  ThrowIoError(fmt::format("{}: {}", what, std::strerror(errno)), path.string());
}

void FsyncPath(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) ThrowErrno("cannot open for fsync", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) ThrowErrno("fsync failed", path);
}

}  // namespace

std::filesystem::path TemporaryPathFor(const std::filesystem::path& path) {
  return path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
}

void PublishAtomically(const std::filesystem::path& tmp, const std::filesystem::path& path) {
  FsyncPath(tmp, O_RDONLY);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    errno = saved;
    ThrowErrno("cannot rename the temporary file into place", path);
  }
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

void WriteFileAtomically(const std::filesystem::path& path, std::string_view content) {
  const auto tmp = TemporaryPathFor(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) ThrowErrno("cannot create file", tmp);
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      ThrowErrno("write failed", tmp);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    ThrowErrno("cannot flush file", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    ThrowErrno("cannot rename the temporary file into place", path);
  }
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

void EnsureDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    ThrowIoError(fmt::format("cannot create directory: {}", ec ? ec.message() : "not a directory"),
                 dir.string());
  }
}

}  // namespace homodyne
