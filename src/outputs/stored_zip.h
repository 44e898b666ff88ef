// The layout of a zip archive whose members are stored (not compressed) and whose sizes are
// known before any byte is written: every member's data has a fixed place in the file, so
// its pieces can be written there directly, in any order and by any process, with no copy
// through a temporary file. The CRC-32 of a member is combined from its pieces' (zlib's
// crc32_combine), and the headers, which hold it, are written last.
//
// The format is PKWARE's APPNOTE: local file headers, the members' bytes, the central
// directory and its end record; ZIP64 extra fields and end records where a size or offset
// does not fit in 32 bits (Python's zipfile, hence numpy.load, and Info-ZIP read them).
// Members are dated 1980-01-01 00:00, as NumPy dates them, so equal content gives equal
// archives.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace homodyne::outputs {

class StoredZipLayout {
 public:
  struct Member {
    std::string name;         // inside the archive (e.g. "c2_exp.npy"), UTF-8
    std::uint64_t bytes = 0;  // the member's size
  };
  // zip64_from: sizes and offsets from this value on are written as ZIP64 fields (tests
  // lower it to exercise the ZIP64 layout on small archives; the format's limit otherwise).
  explicit StoredZipLayout(std::vector<Member> members, std::uint64_t zip64_from = kZip64Threshold);

  static constexpr std::uint64_t kZip64Threshold = 0xffffffffULL;

  std::size_t size() const { return members_.size(); }
  // Where member i's local header starts, and where its data start.
  std::uint64_t header_offset(std::size_t i) const { return placed_[i].header; }
  std::uint64_t data_offset(std::size_t i) const { return placed_[i].data; }
  // The archive's size in bytes, central directory included.
  std::uint64_t total_bytes() const;

  // Member i's local file header (written at header_offset(i)), given its CRC-32.
  std::string LocalHeader(std::size_t i, std::uint32_t crc) const;
  // The central directory and its end records (written at the end of the last member's
  // data), given every member's CRC-32.
  std::string CentralDirectory(std::span<const std::uint32_t> crcs) const;
  std::uint64_t central_directory_offset() const;

 private:
  struct Placed {
    std::uint64_t header = 0, data = 0;
  };
  bool Zip64Sizes(std::size_t i) const { return members_[i].bytes >= zip64_from_; }
  bool Zip64Offset(std::size_t i) const { return placed_[i].header >= zip64_from_; }
  std::string CentralEntry(std::size_t i, std::uint32_t crc) const;
  std::string EndRecords(std::uint64_t directory_bytes) const;

  std::vector<Member> members_;
  std::vector<Placed> placed_;
  std::uint64_t zip64_from_;
};

// The CRC-32 (zip's) of `bytes`, continuing `crc` (0 to start).
std::uint32_t Crc32(std::uint32_t crc, std::span<const unsigned char> bytes);
// The CRC-32 of A followed by B, from CRC(A), CRC(B) and B's length.
std::uint32_t Crc32Combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b);

}  // namespace homodyne::outputs
