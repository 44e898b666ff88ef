// A unique temporary directory for one test, removed with everything in it when the test
// ends, also when a failed assertion returns early. Tests write their files only there.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace homodyne::testing {

// Creates a new directory homodyne_<stem>_XXXXXX (mkdtemp: unique, mode 0700) under
// std::filesystem::temp_directory_path() ($TMPDIR, else /tmp) and returns its path.
inline std::filesystem::path MakeUniqueTempDir(const std::string& stem) {
  const std::string pattern =
      (std::filesystem::temp_directory_path() / ("homodyne_" + stem + "_XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  return std::filesystem::path(name.data());
}

class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& stem = "test") : path_(MakeUniqueTempDir(stem)) {}
  ~ScopedTempDir() {
    std::error_code ec;  // a destructor does not throw
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  // The directory (it exists until the destructor).
  const std::filesystem::path& path() const { return path_; }
  // The path of `name` (a file or folder, not created) inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace homodyne::testing
