// The stored-zip layout (outputs/stored_zip.h) read back by libzip, an independent reader:
// names, sizes, CRC-32s and content, with and without ZIP64 fields, and the CRC-32 of a
// member combined from its pieces.
#include "outputs/stored_zip.h"

#include <zip.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace homodyne::outputs {
namespace {

std::span<const unsigned char> Bytes(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

// The archive of `contents` as a writer places it: each member's data at data_offset(i),
// written in two pieces whose CRC-32s are combined, then the headers and the directory.
std::string BuildArchive(const std::vector<std::pair<std::string, std::string>>& contents,
                         std::uint64_t zip64_from) {
  std::vector<StoredZipLayout::Member> members;
  for (const auto& [name, data] : contents) members.push_back({name, data.size()});
  const StoredZipLayout layout(members, zip64_from);
  std::string file(layout.total_bytes(), '\xee');
  std::vector<std::uint32_t> crcs;
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const std::string& data = contents[i].second;
    const std::string a = data.substr(0, data.size() / 3), b = data.substr(data.size() / 3);
    crcs.push_back(Crc32Combine(Crc32(0, Bytes(a)), Crc32(0, Bytes(b)), b.size()));
    file.replace(layout.data_offset(i), data.size(), data);
    const std::string header = layout.LocalHeader(i, crcs.back());
    EXPECT_EQ(layout.header_offset(i) + header.size(), layout.data_offset(i));
    file.replace(layout.header_offset(i), header.size(), header);
  }
  const std::string directory = layout.CentralDirectory(crcs);
  EXPECT_EQ(layout.central_directory_offset() + directory.size(), layout.total_bytes());
  file.replace(layout.central_directory_offset(), directory.size(), directory);
  EXPECT_EQ(file.size(), layout.total_bytes());
  return file;
}

void ExpectLibzipReads(const std::string& archive,
                       const std::vector<std::pair<std::string, std::string>>& contents) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(archive.data(), archive.size(), 0, &error);
  ASSERT_NE(source, nullptr);
  // ZIP_CHECKCONS: libzip compares every local header with the central directory.
  zip_t* z = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  ASSERT_NE(z, nullptr) << zip_error_strerror(&error);
  ASSERT_EQ(zip_get_num_entries(z, 0), static_cast<zip_int64_t>(contents.size()));
  for (std::size_t i = 0; i < contents.size(); ++i) {
    zip_stat_t st;
    ASSERT_EQ(zip_stat_index(z, i, 0, &st), 0);
    EXPECT_EQ(std::string(st.name), contents[i].first);
    EXPECT_EQ(st.size, contents[i].second.size());
    EXPECT_EQ(st.comp_method, ZIP_CM_STORE);
    zip_file_t* f = zip_fopen_index(z, i, 0);  // checks the CRC-32 at the end of the read
    ASSERT_NE(f, nullptr) << zip_strerror(z);
    std::string read(contents[i].second.size() + 1, '\0');
    const zip_int64_t got = zip_fread(f, read.data(), read.size());
    ASSERT_EQ(got, static_cast<zip_int64_t>(contents[i].second.size())) << zip_file_strerror(f);
    read.resize(static_cast<std::size_t>(got));
    EXPECT_EQ(read, contents[i].second);
    zip_fclose(f);
  }
  zip_discard(z);
}

std::vector<std::pair<std::string, std::string>> Contents() {
  std::string big;
  for (int i = 0; i < 5000; ++i) big.push_back(static_cast<char>((i * 7919) % 251));
  return {{"phi_angles.npy", "abc"}, {"c2_exp.npy", big}, {"empty.npy", ""}, {"q.npy", "xyz12"}};
}

TEST(OutputsStoredZip, LibzipReadsTheArchiveWithoutZip64) {
  const auto contents = Contents();
  ExpectLibzipReads(BuildArchive(contents, StoredZipLayout::kZip64Threshold), contents);
}

TEST(OutputsStoredZip, LibzipReadsTheZip64FieldsAndEndRecords) {
  // From 100 bytes on every size and offset is a ZIP64 field: the large member's sizes,
  // the later members' offsets, and the directory's offset (ZIP64 end record + locator).
  const auto contents = Contents();
  const std::string plain = BuildArchive(contents, StoredZipLayout::kZip64Threshold);
  const std::string wide = BuildArchive(contents, 100);
  EXPECT_GT(wide.size(), plain.size());
  EXPECT_NE(wide.find(std::string("PK\x06\x06", 4)), std::string::npos);
  EXPECT_NE(wide.find(std::string("PK\x06\x07", 4)), std::string::npos);
  EXPECT_EQ(plain.find(std::string("PK\x06\x06", 4)), std::string::npos);
  ExpectLibzipReads(wide, contents);
}

TEST(OutputsStoredZip, CombinedCrcEqualsTheWholeOnesAtEverySplit) {
  const std::string data = "homodyne-hpc writes each angle's slab at its place";
  const std::uint32_t whole = Crc32(0, Bytes(data));
  for (std::size_t cut = 0; cut <= data.size(); ++cut) {
    const std::string a = data.substr(0, cut), b = data.substr(cut);
    EXPECT_EQ(Crc32Combine(Crc32(0, Bytes(a)), Crc32(0, Bytes(b)), b.size()), whole) << cut;
  }
  // The standard check value of CRC-32 (ISO-HDLC): "123456789" → 0xCBF43926.
  EXPECT_EQ(Crc32(0, Bytes("123456789")), 0xCBF43926u);
}

// Long buffers take the library's vector code: the same CRC as zlib's, from any start.
TEST(OutputsStoredZip, CrcOfLongBuffersIsZlibs) {
  std::vector<unsigned char> bytes((1u << 20) + 13);
  std::uint32_t x = 12345;
  for (unsigned char& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  for (std::size_t from : {std::size_t{0}, std::size_t{1}, std::size_t{4095}}) {
    const std::span<const unsigned char> part(bytes.data() + from, bytes.size() - from);
    EXPECT_EQ(Crc32(0, part), crc32_z(0, part.data(), part.size())) << from;
    EXPECT_EQ(Crc32(0x1234u, part), crc32_z(0x1234u, part.data(), part.size())) << from;
  }
}

TEST(OutputsStoredZip, RejectsAnEmptyName) { EXPECT_ANY_THROW(StoredZipLayout({{"", 3}})); }

}  // namespace
}  // namespace homodyne::outputs
