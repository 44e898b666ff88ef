// NumPy's .npz archive, as numpy.savez_compressed writes it and numpy.load reads it: a zip
// archive (written by libzip) holding one deflated member NAME.npy per array, each in NumPy's
// documented .npy format (version 1.0 header, little-endian, C order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace homodyne::outputs {

// The .npy header of a little-endian float64 (`descr` "<f8"), int64 ("<i8") or unicode
// ("<U<width>") array of `shape`, C order, padded so that the data start on a 64-byte
// boundary.
std::string NpyHeader(const std::string& descr, const std::vector<std::uint64_t>& shape);

// One .npy file written piece by piece (large arrays, e.g. one angle's matrix at a time):
// the header first, then the values in C order. Close() checks that exactly the shape's
// number of values arrived.
class NpyStream {
 public:
  NpyStream(std::filesystem::path path, std::vector<std::uint64_t> shape);
  ~NpyStream();
  NpyStream(const NpyStream&) = delete;
  NpyStream& operator=(const NpyStream&) = delete;
  void Append(std::span<const double> values);
  void Close();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::uint64_t expected_ = 0, written_ = 0;
  std::FILE* file_ = nullptr;
};

// An .npz archive built member by member and written at Commit(). Small arrays are held in
// memory; large ones are .npy files written beforehand (NpyStream) and read by libzip while
// it compresses. Commit writes a temporary file beside `path` and renames it: a failure
// leaves no archive. Without Commit nothing is written.
class NpzArchive {
 public:
  // Members deflated at zlib's default level, as numpy.savez_compressed writes them.
  static constexpr int kNumpyDeflate = -1;
  // deflate_level: kNumpyDeflate, 1 (fastest) … 9 (smallest), or 0: stored uncompressed, as
  // numpy.savez writes them (numpy.load reads either the same way).
  explicit NpzArchive(std::filesystem::path path, int deflate_level = kNumpyDeflate);
  ~NpzArchive();
  NpzArchive(const NpzArchive&) = delete;
  NpzArchive& operator=(const NpzArchive&) = delete;

  void AddDoubles(const std::string& name, const std::vector<std::uint64_t>& shape,
                  std::span<const double> values);
  void AddInt64(const std::string& name, const std::vector<std::uint64_t>& shape,
                std::span<const std::int64_t> values);
  // A 1-D array of UTF-8 strings, stored as NumPy stores a str array ("<U<longest>",
  // UTF-32); a 0-d array when `scalar` (one string).
  void AddStrings(const std::string& name, const std::vector<std::string>& values,
                  bool scalar = false);
  // A member whose .npy file is already written (NpyStream, closed).
  void AddNpyFile(const std::string& name, const std::filesystem::path& npy_file);
  void Commit();

 private:
  struct Member;
  void AddBytes(const std::string& name, std::string bytes);
  std::filesystem::path path_;
  int deflate_level_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace homodyne::outputs
