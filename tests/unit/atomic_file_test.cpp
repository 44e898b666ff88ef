#include "homodyne/atomic_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "homodyne/error.h"

namespace homodyne {
namespace {

std::filesystem::path FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("homodyne_atomic_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries) {
  const auto dir = FreshDir("replace");
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
  const auto dir = FreshDir("mkdir") / "a" / "b";
  EnsureDirectory(dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  const auto file = FreshDir("notdir") / "plain";
  WriteFileAtomically(file, "x");
  EXPECT_THROW(EnsureDirectory(file), Error);
}

}  // namespace
}  // namespace homodyne
