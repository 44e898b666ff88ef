#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries) {
  const testing::ScopedTempDir tmp("atomic_replace");
  const auto dir = tmp.path();
  const auto file = dir / "parameters.json";
  WriteFileAtomically(file, "first");
  EXPECT_EQ(Slurp(file), "first");
  WriteFileAtomically(file, "second, longer content");
  EXPECT_EQ(Slurp(file), "second, longer content");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(AtomicFile, UnwritableDirectoryIsAnIoErrorNamingThePath) {
  const auto file = std::filesystem::path("/proc/no_such_dir/x.json");
  try {
    WriteFileAtomically(file, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("/proc/no_such_dir"), std::string::npos);
  }
}

TEST(AtomicFile, EnsureDirectoryCreatesParents) {
  const testing::ScopedTempDir tmp("atomic_mkdir");
  const auto dir = tmp.path() / "mkdir" / "a" / "b";
  EnsureDirectory(dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  const auto file = tmp.path() / "plain";
  WriteFileAtomically(file, "x");
  EXPECT_THROW(EnsureDirectory(file), Error);
}

}  // namespace
}  // namespace homodyne
