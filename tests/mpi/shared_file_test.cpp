// SharedFile at 1 and 2 ranks: ranges of every size and alignment, written by the ranks side
// by side, land byte for byte whether their whole pages go through O_DIRECT or through
// MPI-IO; a rank whose direct write fails (a full disk) gets an I/O error naming the file;
// an existing file opened to be written keeps the bytes no rank writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/errors.h"
#include "file_size_limit.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "parallel/shared_file.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;
using homodyne::testing::FileSizeLimit;
using homodyne::testing::MpiTempDir;
using homodyne::testing::TestEnvironment;

// The byte expected at position p of a file.
unsigned char ByteAt(std::uint64_t p) {
  return static_cast<unsigned char>((p * 2654435761ULL) >> 13);
}

std::vector<unsigned char> Pattern(std::uint64_t from, std::uint64_t n) {
  std::vector<unsigned char> bytes(n);
  for (std::uint64_t i = 0; i < n; ++i) bytes[i] = ByteAt(from + i);
  return bytes;
}

std::vector<unsigned char> ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether this directory's file system takes O_DIRECT (tmpfs does not).
bool DirectIoAccepted(const fs::path& dir) {
  const fs::path probe = dir / "direct_probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
  fs::remove(probe);
  return fd >= 0;
}

// Sets HOMODYNE_NO_DIRECT_IO while it lives.
class NoDirectIo {
 public:
  explicit NoDirectIo(bool on) : on_(on) {
    if (on_) ::setenv("HOMODYNE_NO_DIRECT_IO", "1", 1);
  }
  ~NoDirectIo() {
    if (on_) ::unsetenv("HOMODYNE_NO_DIRECT_IO");
  }
  NoDirectIo(const NoDirectIo&) = delete;
  NoDirectIo& operator=(const NoDirectIo&) = delete;

 private:
  bool on_;
};

// Ranges that tile [0, end): a 37-byte header, then pieces of 1 MiB ± odd amounts (below and
// above the direct threshold, starting and ending off the page grid), the last one short.
std::vector<std::pair<std::uint64_t, std::uint64_t>> Ranges(std::uint64_t& end) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges{{0, 37}};
  const std::uint64_t sizes[] = {(1u << 20) - 3,   (3u << 20) + 4095, 4096,
                                 (1u << 20) + 1,   (5u << 20) + 777,  12288,
                                 (2u << 20) + 4096};
  std::uint64_t at = 37;
  for (std::uint64_t size : sizes) {
    ranges.emplace_back(at, size);
    at += size;
  }
  end = at;
  return ranges;
}

void WriteAndCheck(bool no_direct) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, no_direct ? "shared_mpi" : "shared_direct", /*create=*/true);
  const fs::path out = dir.path() / "out.bin";
  std::uint64_t end = 0;
  const auto ranges = Ranges(end);
  std::uint64_t direct = 0;
  {
    NoDirectIo env(no_direct);
    SharedFile file(world, out);
    // Range i is rank (i mod ranks)'s: neighbours written by different ranks.
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (static_cast<int>(i % static_cast<std::size_t>(world.size())) != world.rank()) continue;
      const auto [at, n] = ranges[i];
      const std::vector<unsigned char> bytes = Pattern(at, n);
      file.WriteAt(at, bytes);
    }
    direct = file.direct_bytes();
    file.Close();
  }
  world.Barrier();
  if (no_direct || !DirectIoAccepted(dir.path())) {
    EXPECT_EQ(direct, 0u);
  } else {
    // Every rank has at least one range above the threshold whose whole pages went direct.
    EXPECT_GT(direct, 0u) << "rank " << world.rank();
    EXPECT_EQ(direct % 4096, 0u);
  }
  const std::vector<unsigned char> got = ReadAll(out);
  ASSERT_EQ(got.size(), end);
  EXPECT_TRUE(got == Pattern(0, end)) << "the file's bytes differ from what the ranks wrote";
}

TEST(SharedFile, RangesOfEveryAlignmentLandByteForByteWithDirectPages) { WriteAndCheck(false); }

TEST(SharedFile, RangesLandByteForByteThroughMpiIoAlone) { WriteAndCheck(true); }

TEST(SharedFile, ExistingFileKeepsTheBytesNoRankWrites) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "shared_existing", /*create=*/true);
  const fs::path out = dir.path() / "out.bin";
  const std::uint64_t size = (4u << 20) + 100;
  if (world.is_root()) {
    const std::vector<unsigned char> zeros(size, 0);
    std::ofstream(out, std::ios::binary)
        .write(reinterpret_cast<const char*>(zeros.data()), static_cast<std::streamsize>(size));
  }
  world.Barrier();
  const std::uint64_t from = 4096 + 11, n = (3u << 20) + 5;
  {
    SharedFile file(world, out, SharedFile::Open::kExisting);
    if (world.is_root()) file.WriteAt(from, Pattern(from, n));
    file.Close();
  }
  world.Barrier();
  const std::vector<unsigned char> got = ReadAll(out);
  ASSERT_EQ(got.size(), size);
  std::vector<unsigned char> expected(size, 0);
  const std::vector<unsigned char> written = Pattern(from, n);
  std::copy(written.begin(), written.end(), expected.begin() + static_cast<std::ptrdiff_t>(from));
  EXPECT_TRUE(got == expected);
}

// A rank whose files may not grow past `limit` bytes (as on a full disk) writes `size`
// bytes: it gets an I/O error naming the file, from the write (its first direct piece failed,
// or a queued one before the last) or from Close (a later piece failed in the writer
// thread); the others write theirs, and the file is closed together.
void ExpectFullDiskIsAnIoError(std::uint64_t limit, std::uint64_t size) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "shared_full", /*create=*/true);
  const fs::path out = dir.path() / "out.bin";
  const bool failing = world.rank() == world.size() - 1;
  FileSizeLimit limited(failing ? limit : 0);
  if (failing) {
    ASSERT_TRUE(limited.active());
  }
  int errors = 0;
  const auto expect_io = [&](const Error& e) {
    ++errors;
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(out.string()), std::string::npos) << e.what();
  };
  {
    SharedFile file(world, out);
    if (failing) {
      const std::uint64_t at = 4096u * 3 + 5;
      try {
        file.WriteAt(at, Pattern(at, size));
      } catch (const Error& e) {
        expect_io(e);
      }
    }
    try {
      file.Close();
    } catch (const Error& e) {
      expect_io(e);
    }
  }
  // The failing rank hears of it at least once (a write's failure stays the file's, so Close
  // reports it again after a WriteAt did); the others never.
  if (failing) {
    EXPECT_GE(errors, 1);
  } else {
    EXPECT_EQ(errors, 0) << "rank " << world.rank();
  }
}

TEST(SharedFile, FullDiskDuringTheFirstLargeWriteIsAnIoErrorNamingTheFile) {
  ExpectFullDiskIsAnIoError(1u << 20, 6u << 20);
}

TEST(SharedFile, FullDiskBehindQueuedWritesIsAnIoErrorNamingTheFile) {
  ExpectFullDiskIsAnIoError(12u << 20, 40u << 20);
}

}  // namespace
}  // namespace homodyne
