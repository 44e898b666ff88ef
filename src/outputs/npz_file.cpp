#include "outputs/npz_file.h"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace homodyne::outputs {

static_assert(std::endian::native == std::endian::little,
              "the .npy members are written as little-endian arrays");

std::string NpyHeader(const std::string& descr, const std::vector<std::uint64_t>& shape) {
  std::string dims;
  for (std::uint64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (3, 4) but (3,) and ()
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // magic (6) + version (2) + header length (2) + dict + padding + '\n' ≡ 0 mod 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  HOMODYNE_CHECK(dict.size() < 65536, "npy header too long");
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

namespace {

std::uint64_t Count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

// UTF-8 → code points (NumPy's str arrays hold UTF-32); a malformed byte is taken as is.
std::u32string Utf32(const std::string& s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    char32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    bool ok = i + static_cast<std::size_t>(extra) < s.size();
    for (int k = 1; ok && k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
    } else {
      out.push_back(cp);
      i += static_cast<std::size_t>(extra) + 1;
    }
  }
  return out;
}

[[noreturn]] void ThrowZip(zip_t* archive, const std::string& what, const std::string& file) {
  ThrowIoError(fmt::format("{}: {}", what, archive != nullptr ? zip_strerror(archive) : "libzip"),
               file);
}

}  // namespace

NpyStream::NpyStream(std::filesystem::path path, std::vector<std::uint64_t> shape)
    : path_(std::move(path)), expected_(Count(shape)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    ThrowIoError(fmt::format("cannot create: {}", std::strerror(errno)), path_.string());
  }
  const std::string header = NpyHeader("<f8", shape);
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size()) {
    ThrowIoError("write failed", path_.string());
  }
}

NpyStream::~NpyStream() {
  if (file_ != nullptr) std::fclose(file_);
}

void NpyStream::Append(std::span<const double> values) {
  HOMODYNE_CHECK(file_ != nullptr && written_ + values.size() <= expected_,
                 "npy stream: more values than its shape");
  if (std::fwrite(values.data(), sizeof(double), values.size(), file_) != values.size()) {
    ThrowIoError("write failed", path_.string());
  }
  written_ += values.size();
}

void NpyStream::Close() {
  HOMODYNE_CHECK(written_ == expected_, "npy stream: fewer values than its shape");
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) ThrowIoError("write failed", path_.string());
}

struct NpzArchive::Member {
  std::string name;
  std::string bytes;           // the .npy content, or empty with `file`
  std::filesystem::path file;  // a .npy file on disk
};

NpzArchive::NpzArchive(std::filesystem::path path, int deflate_level)
    : path_(std::move(path)), deflate_level_(deflate_level) {}
NpzArchive::~NpzArchive() = default;

void NpzArchive::AddBytes(const std::string& name, std::string bytes) {
  auto m = std::make_unique<Member>();
  m->name = name;
  m->bytes = std::move(bytes);
  members_.push_back(std::move(m));
}

void NpzArchive::AddDoubles(const std::string& name, const std::vector<std::uint64_t>& shape,
                            std::span<const double> values) {
  HOMODYNE_CHECK(Count(shape) == values.size(), "npz: array size differs from its shape");
  std::string bytes = NpyHeader("<f8", shape);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  AddBytes(name, std::move(bytes));
}

void NpzArchive::AddInt64(const std::string& name, const std::vector<std::uint64_t>& shape,
                          std::span<const std::int64_t> values) {
  HOMODYNE_CHECK(Count(shape) == values.size(), "npz: array size differs from its shape");
  std::string bytes = NpyHeader("<i8", shape);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  AddBytes(name, std::move(bytes));
}

void NpzArchive::AddStrings(const std::string& name, const std::vector<std::string>& values,
                            bool scalar) {
  HOMODYNE_CHECK(!scalar || values.size() == 1, "npz: a 0-d string array holds one string");
  std::vector<std::u32string> wide;
  std::size_t width = 1;  // NumPy's narrowest str dtype is <U1
  for (const std::string& v : values) {
    wide.push_back(Utf32(v));
    width = std::max(width, wide.back().size());
  }
  const std::vector<std::uint64_t> shape =
      scalar ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{values.size()};
  std::string bytes = NpyHeader(fmt::format("<U{}", width), shape);
  for (std::u32string& w : wide) {
    w.resize(width, U'\0');  // NUL-padded to the dtype's width
    bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(char32_t));
  }
  AddBytes(name, std::move(bytes));
}

void NpzArchive::AddNpyFile(const std::string& name, const std::filesystem::path& npy_file) {
  auto m = std::make_unique<Member>();
  m->name = name;
  m->file = npy_file;
  members_.push_back(std::move(m));
}

void NpzArchive::Commit() {
  const std::filesystem::path tmp = TemporaryPathFor(path_);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  int error = 0;
  zip_t* archive = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (archive == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string message = zip_error_strerror(&e);
    zip_error_fini(&e);
    ThrowIoError("cannot create the archive: " + message, path_.string());
  }
  try {
    for (const auto& m : members_) {
      zip_source_t* source = m->file.empty()
                                 ? zip_source_buffer(archive, m->bytes.data(), m->bytes.size(), 0)
                                 : zip_source_file(archive, m->file.c_str(), 0, -1);
      if (source == nullptr) ThrowZip(archive, "cannot add " + m->name, path_.string());
      const zip_int64_t index =
          zip_file_add(archive, (m->name + ".npy").c_str(), source, ZIP_FL_ENC_UTF_8);
      if (index < 0) {
        zip_source_free(source);
        ThrowZip(archive, "cannot add " + m->name, path_.string());
      }
      const auto i = static_cast<zip_uint64_t>(index);
      // Deflated (libzip's level 0 is zlib's default, numpy.savez_compressed's) or stored;
      // members dated 1980-01-01 00:00 (as NumPy dates them), so that equal arrays give
      // equal archives.
      const bool stored = deflate_level_ == 0;
      const auto level = static_cast<zip_uint32_t>(std::max(deflate_level_, 0));
      if (zip_set_file_compression(archive, i, stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE,
                                   stored ? 0 : level) != 0 ||
          zip_file_set_dostime(archive, i, 0, (1 << 5) | 1, 0) != 0) {
        ThrowZip(archive, "cannot set up " + m->name, path_.string());
      }
    }
    if (zip_close(archive) != 0) ThrowZip(archive, "cannot write the archive", path_.string());
  } catch (...) {
    zip_discard(archive);
    std::filesystem::remove(tmp, ec);
    throw;
  }
  PublishAtomically(tmp, path_);
  members_.clear();
}

}  // namespace homodyne::outputs
