// DatasetMetadata <-> bytes, for broadcasting rank 0's metadata to every rank.
#include <cstring>
#include <type_traits>

#include "core/errors.h"
#include "io/metadata_internal.h"

namespace homodyne::io {
namespace {

constexpr std::uint32_t kMagic = 0x4d455441;  // "META"

class Writer {
 public:
  template <typename T>
  void Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<std::uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void PutDoubles(const std::vector<double>& v) {
    Put<std::uint64_t>(v.size());
    for (double x : v) Put(x);
  }
  std::vector<char> Take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const char> bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto n = Get<std::uint64_t>();
    Need(n);
    std::string s(bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  std::vector<double> GetDoubles() {
    const auto n = Get<std::uint64_t>();
    Need(n * sizeof(double));
    std::vector<double> v(n);
    for (auto& x : v) x = Get<double>();
    return v;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  void Need(std::uint64_t n) const {
    if (n > bytes_.size() - pos_) ThrowInternal("truncated dataset metadata message");
  }
  std::span<const char> bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<char> EncodeMetadata(const DatasetMetadata& meta) {
  Writer w;
  w.Put(kMagic);
  w.PutString(meta.file);
  w.Put<std::int32_t>(meta.format == DataFormat::kApsU ? 1 : 0);
  w.Put<std::uint64_t>(meta.bins.size());
  for (const SelectedBin& b : meta.bins) {
    w.Put(b.bin);
    w.PutString(b.dataset);
    w.Put(b.q);
    w.Put(b.phi_raw);
    w.Put(b.phi);
  }
  w.Put<std::uint64_t>(meta.loader_bin_count);
  w.Put(meta.q_physics);
  w.Put(meta.file_frames);
  w.Put(meta.frame_begin);
  w.Put(meta.n_frames);
  w.Put(meta.start_frame);
  w.Put(meta.end_frame);
  w.Put(meta.dt);
  w.PutDoubles(meta.t);
  return w.Take();
}

DatasetMetadata DecodeMetadata(std::span<const char> bytes) {
  Reader r(bytes);
  if (r.Get<std::uint32_t>() != kMagic) ThrowInternal("corrupt dataset metadata message");
  DatasetMetadata meta;
  meta.file = r.GetString();
  meta.format = r.Get<std::int32_t>() == 1 ? DataFormat::kApsU : DataFormat::kApsOld;
  const auto n = r.Get<std::uint64_t>();
  for (std::uint64_t k = 0; k < n; ++k) {
    SelectedBin b;
    b.bin = r.Get<std::int64_t>();
    b.dataset = r.GetString();
    b.q = r.Get<double>();
    b.phi_raw = r.Get<double>();
    b.phi = r.Get<double>();
    meta.bins.push_back(std::move(b));
  }
  meta.loader_bin_count = r.Get<std::uint64_t>();
  meta.q_physics = r.Get<double>();
  meta.file_frames = r.Get<std::int64_t>();
  meta.frame_begin = r.Get<std::int64_t>();
  meta.n_frames = r.Get<std::int64_t>();
  meta.start_frame = r.Get<std::int64_t>();
  meta.end_frame = r.Get<std::int64_t>();
  meta.dt = r.Get<double>();
  meta.t = r.GetDoubles();
  if (!r.AtEnd()) ThrowInternal("trailing bytes in dataset metadata message");
  return meta;
}

}  // namespace homodyne::io
