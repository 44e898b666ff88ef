#include "parallel/shared_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
// Directly written bytes are copied into aligned buffers (O_DIRECT wants the memory aligned
// too) and written by a thread of their own while the caller computes the next ones: a ring
// of kBuffers buffers of kBuffer bytes, so that a rank's device writes overlap its work.
constexpr std::size_t kBuffer = std::size_t{8} << 20;
constexpr std::size_t kBuffers = 4;

bool DirectIoWanted() {
  const char* off = std::getenv("HOMODYNE_NO_DIRECT_IO");
  return off == nullptr || off[0] == '\0' || std::string(off) == "0";
}

// pwrite of all of `n` bytes at `offset`; "" or what went wrong (errno's text, or a short
// write off the block grid: a full disk).
std::string WriteAll(int fd, const unsigned char* data, std::size_t n, std::uint64_t offset,
                     int& error) {
  for (std::size_t put = 0; put < n;) {
    const ssize_t w = ::pwrite(fd, data + put, n - put, static_cast<off_t>(offset + put));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      error = errno;
      return fmt::format("write failed at byte {}: {}", offset + put, std::strerror(errno));
    }
    if (w == 0 || static_cast<std::uint64_t>(w) % kPage != 0) {
      error = ENOSPC;
      return fmt::format("short write at byte {} ({} of {} bytes; disk full?)", offset + put, w,
                         n - put);
    }
    put += static_cast<std::size_t>(w);
  }
  return {};
}

}  // namespace

// This rank's O_DIRECT descriptor of the file (-1: refused or not wanted), its buffers and
// the thread that writes them.
struct SharedFile::Direct {
  int fd = -1;
  std::uint64_t bytes = 0;
  bool probed = false;  // a first write went through (the file system takes the alignment)
  std::vector<unsigned char*> buffers;
  struct Job {
    std::size_t buffer;
    std::uint64_t offset;
    std::size_t size;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Job> jobs;
  std::vector<std::size_t> free;
  std::string failure;  // the first failed write's message ("" while none failed)
  bool stop = false;
  std::thread writer;

  ~Direct() {
    Stop();
    if (fd >= 0) ::close(fd);
    for (unsigned char* b : buffers) std::free(b);
  }
  // Waits for every queued write, then ends the thread.
  void Stop() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    changed.notify_all();
    if (writer.joinable()) writer.join();
  }
  void Run() {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stop || !jobs.empty(); });
      if (jobs.empty()) return;
      const Job job = jobs.front();
      jobs.pop_front();
      if (failure.empty()) {
        lock.unlock();
        int error = 0;
        std::string what = WriteAll(fd, buffers[job.buffer], job.size, job.offset, error);
        lock.lock();
        if (!what.empty() && failure.empty()) failure = std::move(what);
      }
      free.push_back(job.buffer);
      changed.notify_all();
    }
  }
  // A free buffer (waits for one).
  std::size_t Take() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return !free.empty(); });
    const std::size_t b = free.back();
    free.pop_back();
    return b;
  }
  void Queue(Job job) {
    {
      std::lock_guard lock(mutex);
      jobs.push_back(job);
    }
    changed.notify_all();
  }
  std::string Failure() {
    std::lock_guard lock(mutex);
    return failure;
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
  if (DirectIoWanted()) direct_->fd = ::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
}

SharedFile::~SharedFile() {
  direct_.reset();
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
  Direct& d = *direct_;
  if (!d.probed) {
    // The first piece in this thread: a file system that opens with O_DIRECT but refuses
    // the write's alignment (EINVAL) leaves the rank on MPI-IO; then the writer thread.
    while (d.buffers.size() < kBuffers) {
      d.buffers.push_back(static_cast<unsigned char*>(std::aligned_alloc(kPage, kBuffer)));
      if (d.buffers.back() == nullptr) ThrowInternal("cannot allocate an aligned write buffer");
    }
    const std::size_t n = std::min(kBuffer, bytes.size());
    std::memcpy(d.buffers[0], bytes.data(), n);
    int error = 0;
    const std::string what = WriteAll(d.fd, d.buffers[0], n, offset, error);
    if (error == EINVAL) {
      ::close(d.fd);
      d.fd = -1;
      return false;
    }
    if (!what.empty()) ThrowIoError(what, path_.string());
    d.bytes += n;
    d.probed = true;
    for (std::size_t b = 0; b < kBuffers; ++b) d.free.push_back(b);
    d.writer = std::thread([&d] { d.Run(); });
    offset += n;
    bytes = bytes.subspan(n);
  }
  for (std::size_t done = 0; done < bytes.size();) {
    // A write that failed earlier (in the writer thread) is reported at the next one.
    const std::string failure = d.Failure();
    if (!failure.empty()) ThrowIoError(failure, path_.string());
    const std::size_t n = std::min(kBuffer, bytes.size() - done);
    const std::size_t b = d.Take();
    std::memcpy(d.buffers[b], bytes.data() + done, n);
    d.Queue({b, offset + done, n});
    d.bytes += n;
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
  // The direct writes first (queued ones finished, the thread ended, the descriptor closed):
  // their bytes are then on the device, and MPI-IO's sync below flushes the device's cache
  // for the whole file.
  direct_->Stop();
  std::string failure = direct_->Failure();
  if (direct_->fd >= 0 && ::close(direct_->fd) != 0 && failure.empty()) {
    failure = fmt::format("cannot close: {}", std::strerror(errno));
  }
  direct_->fd = -1;
  const int sync_rc = MPI_File_sync(file_);
  const int close_rc = MPI_File_close(&file_);
  file_ = MPI_FILE_NULL;
  if (!failure.empty()) ThrowIoError(failure, path_.string());
  if (sync_rc != MPI_SUCCESS || close_rc != MPI_SUCCESS) {
    ThrowIoError(
        "cannot flush and close: " + MpiErrorText(sync_rc != MPI_SUCCESS ? sync_rc : close_rc),
        path_.string());
  }
}

}  // namespace homodyne
