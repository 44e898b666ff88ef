#include "outputs/stored_zip.h"

#include <libdeflate.h>
#include <zlib.h>

#include "core/errors.h"

namespace homodyne::outputs {

namespace {

// APPNOTE signatures and fixed sizes.
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint64_t kLocalFixed = 30, kZip64EndBytes = 56;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint16_t kVersion20 = 20, kVersion45 = 45;  // 2.0; 4.5 (ZIP64)
constexpr std::uint16_t kMadeByUnix = 3 << 8;
constexpr std::uint16_t kDosDate1980 = (1 << 5) | 1;       // 1980-01-01
constexpr std::uint32_t kRegularFile644 = 0100644U << 16;  // st_mode in the high half
constexpr std::uint32_t kFull32 = 0xffffffffU;
constexpr std::uint16_t kFull16 = 0xffffU;

void Put16(std::string& out, std::uint64_t v) {
  for (int b = 0; b < 2; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}
void Put32(std::string& out, std::uint64_t v) {
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}
void Put64(std::string& out, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}

std::uint64_t LocalExtraBytes(bool zip64) { return zip64 ? 4 + 16 : 0; }

}  // namespace

StoredZipLayout::StoredZipLayout(std::vector<Member> members, std::uint64_t zip64_from)
    : members_(std::move(members)), zip64_from_(zip64_from) {
  HOMODYNE_CHECK(zip64_from_ > 0 && zip64_from_ <= kZip64Threshold, "zip: bad ZIP64 threshold");
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    HOMODYNE_CHECK(!members_[i].name.empty() && members_[i].name.size() < kFull16,
                   "zip: a member's name is empty or too long");
    Placed p;
    p.header = at;
    p.data = at + kLocalFixed + members_[i].name.size() + LocalExtraBytes(Zip64Sizes(i));
    at = p.data + members_[i].bytes;
    placed_.push_back(p);
  }
}

std::uint64_t StoredZipLayout::central_directory_offset() const {
  return members_.empty() ? 0 : placed_.back().data + members_.back().bytes;
}

std::string StoredZipLayout::LocalHeader(std::size_t i, std::uint32_t crc) const {
  const Member& m = members_.at(i);
  const bool zip64 = Zip64Sizes(i);
  std::string out;
  Put32(out, kLocalSignature);
  Put16(out, zip64 ? kVersion45 : kVersion20);
  Put16(out, 0);  // flags: sizes and CRC in this header, name in ASCII/CP437 range
  Put16(out, 0);  // stored
  Put16(out, 0);  // 00:00
  Put16(out, kDosDate1980);
  Put32(out, crc);
  Put32(out, zip64 ? kFull32 : m.bytes);  // compressed size
  Put32(out, zip64 ? kFull32 : m.bytes);  // uncompressed size
  Put16(out, m.name.size());
  Put16(out, LocalExtraBytes(zip64));
  out += m.name;
  if (zip64) {
    Put16(out, kZip64ExtraId);
    Put16(out, 16);
    Put64(out, m.bytes);  // uncompressed
    Put64(out, m.bytes);  // compressed
  }
  return out;
}

std::string StoredZipLayout::CentralEntry(std::size_t i, std::uint32_t crc) const {
  const Member& m = members_[i];
  const bool sizes64 = Zip64Sizes(i), offset64 = Zip64Offset(i);
  std::string extra;
  if (sizes64 || offset64) {
    // Only the fields whose 32-bit slot holds 0xffffffff, in APPNOTE's order.
    std::string fields;
    if (sizes64) {
      Put64(fields, m.bytes);
      Put64(fields, m.bytes);
    }
    if (offset64) Put64(fields, placed_[i].header);
    Put16(extra, kZip64ExtraId);
    Put16(extra, fields.size());
    extra += fields;
  }
  const bool zip64 = sizes64 || offset64;
  std::string out;
  Put32(out, kCentralSignature);
  Put16(out, kMadeByUnix | kVersion45);
  Put16(out, zip64 ? kVersion45 : kVersion20);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, kDosDate1980);
  Put32(out, crc);
  Put32(out, sizes64 ? kFull32 : m.bytes);
  Put32(out, sizes64 ? kFull32 : m.bytes);
  Put16(out, m.name.size());
  Put16(out, extra.size());
  Put16(out, 0);  // comment
  Put16(out, 0);  // disk
  Put16(out, 0);  // internal attributes
  Put32(out, kRegularFile644);
  Put32(out, offset64 ? kFull32 : placed_[i].header);
  out += m.name;
  out += extra;
  return out;
}

std::string StoredZipLayout::EndRecords(std::uint64_t directory_bytes) const {
  const std::uint64_t n = members_.size();
  const std::uint64_t at = central_directory_offset();
  const bool zip64 = n >= kFull16 || directory_bytes >= zip64_from_ || at >= zip64_from_;
  std::string out;
  if (zip64) {
    Put32(out, kZip64EndSignature);
    Put64(out, kZip64EndBytes - 12);  // the record's size after this field
    Put16(out, kMadeByUnix | kVersion45);
    Put16(out, kVersion45);
    Put32(out, 0);  // this disk
    Put32(out, 0);  // the directory's disk
    Put64(out, n);
    Put64(out, n);
    Put64(out, directory_bytes);
    Put64(out, at);
    Put32(out, kZip64LocatorSignature);
    Put32(out, 0);
    Put64(out, at + directory_bytes);  // where the ZIP64 end record starts
    Put32(out, 1);                     // disks
  }
  Put32(out, kEndSignature);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, zip64 ? kFull16 : n);
  Put16(out, zip64 ? kFull16 : n);
  Put32(out, zip64 ? kFull32 : directory_bytes);
  Put32(out, zip64 ? kFull32 : at);
  Put16(out, 0);  // comment
  return out;
}

std::string StoredZipLayout::CentralDirectory(std::span<const std::uint32_t> crcs) const {
  HOMODYNE_CHECK(crcs.size() == members_.size(), "zip: one CRC per member");
  std::string out;
  for (std::size_t i = 0; i < members_.size(); ++i) out += CentralEntry(i, crcs[i]);
  return out + EndRecords(out.size());
}

std::uint64_t StoredZipLayout::total_bytes() const {
  std::uint64_t directory = 0;
  for (std::size_t i = 0; i < members_.size(); ++i) directory += CentralEntry(i, 0).size();
  return central_directory_offset() + directory + EndRecords(directory).size();
}

std::uint32_t Crc32(std::uint32_t crc, std::span<const unsigned char> bytes) {
  // libdeflate's (size_t lengths: no 4 GiB split); the same CRC-32 as zlib's.
  return libdeflate_crc32(crc, bytes.data(), bytes.size());
}

std::uint32_t Crc32Combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) {
  static_assert(sizeof(z_off64_t) == 8);
  return static_cast<std::uint32_t>(
      crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(length_b)));
}

}  // namespace homodyne::outputs
