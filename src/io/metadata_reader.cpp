// Format detection, q/phi/frame selection and shape validation (no matrix data read).
#include <unistd.h>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/dataset.h"
#include "io/h5_handles.h"
#include "io/metadata_internal.h"
#include "io/read_crash_guard.h"
#include "io/selection.h"

namespace homodyne::io {
namespace {

constexpr const char* kApsUQ = "/xpcs/qmap/dynamic_v_list_dim0";
constexpr const char* kApsUPhi = "/xpcs/qmap/dynamic_v_list_dim1";
constexpr const char* kApsUBins = "/xpcs/twotime/processed_bins";
constexpr const char* kApsUMaps = "/xpcs/twotime/correlation_map";
constexpr const char* kOldQ = "/xpcs/dqlist";
constexpr const char* kOldPhi = "/xpcs/dphilist";
constexpr const char* kOldMaps = "/exchange/C2T_all";
// q/phi lists and bin lists have at most a few thousand entries; a header claiming more
// than this is corrupt and is refused before anything is allocated.
constexpr std::uint64_t kMaxListEntries = 1ULL << 20;

// A q or phi list: (M,) or (R, M) of which row 0 is used (homodyne reads `[0]`).
std::vector<double> ReadList(hid_t file, const std::string& name, const std::string& path) {
  auto ds = h5::OpenDataset(file, name, path);
  const h5::Where where{name, path};
  const auto dims = h5::DatasetDims(ds.get(), where);
  if (dims.empty() || dims.size() > 2) {
    ThrowBadInput(
        fmt::format("expected a 1-D (M,) or 2-D (1, M) list, found a {}-D dataset", dims.size()),
        name, path);
  }
  auto type = h5::Own<h5::Datatype>(H5Dget_type(ds.get()), "reading the datatype", where);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
    ThrowBadInput(fmt::format("expected a numeric (float or integer) list, found {}",
                              cls == H5T_STRING ? "strings" : "a non-numeric datatype"),
                  name, path);
  }
  std::vector<double> values = h5::ReadAllDoubles(ds.get(), where, kMaxListEntries);
  if (dims.size() == 2) values.resize(static_cast<std::size_t>(dims[1]));  // row 0
  return values;
}

void RequireFinite(const std::vector<double>& values, const std::string& file,
                   const std::string& path) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      ThrowBadInput(fmt::format("expected finite values, entry {} is {}", i, values[i]), file,
                    path);
    }
  }
}

struct Candidate {
  std::int64_t bin;
  std::string dataset;
  double q;
  double phi;
};

std::vector<Candidate> SelectApsOld(hid_t file, const LoadOptions& o, const Logger& logger) {
  const std::string& name = o.path;
  const std::vector<double> dq = ReadList(file, name, kOldQ);
  const std::vector<double> dphi = ReadList(file, name, kOldPhi);
  RequireFinite(dq, name, kOldQ);
  RequireFinite(dphi, name, kOldPhi);
  if (dq.size() != dphi.size()) {
    ThrowBadInput(fmt::format("mismatched list lengths: {} has {} entries but {} has {}", kOldQ,
                              dq.size(), kOldPhi, dphi.size()),
                  name, kOldPhi);
  }
  auto group = h5::OpenGroup(file, name, kOldMaps);
  const std::vector<std::string> keys = h5::GroupKeysInH5pyOrder(group.get(), {name, kOldMaps});
  if (keys.size() != dq.size()) {
    ThrowBadInput(fmt::format("mismatched bin count: {} lists {} (q, phi) bins but the group "
                              "holds {} matrices",
                              kOldQ, dq.size(), keys.size()),
                  name, kOldMaps);
  }
  if (dq.empty()) ThrowBadInput("no (q, phi) bins in the file (empty list)", name, kOldQ);
  std::vector<Candidate> out;
  for (std::size_t m : SelectApsOldBins(dq, o.target_q, o.q_tolerance_fraction)) {
    out.push_back(
        {static_cast<std::int64_t>(m), std::string(kOldMaps) + "/" + keys[m], dq[m], dphi[m]});
  }
  logger.Debug("aps_old: {} bins in file, {} selected around q={}", dq.size(), out.size(),
               o.target_q);
  return out;
}

std::vector<Candidate> SelectApsU(hid_t file, const LoadOptions& o, const Logger& logger) {
  const std::string& name = o.path;
  const std::vector<double> qv = ReadList(file, name, kApsUQ);
  const std::vector<double> phiv = ReadList(file, name, kApsUPhi);
  RequireFinite(qv, name, kApsUQ);
  RequireFinite(phiv, name, kApsUPhi);
  auto bins_ds = h5::OpenDataset(file, name, kApsUBins);
  const std::vector<std::int64_t> processed =
      h5::ReadAllInt64(bins_ds.get(), {name, kApsUBins}, kMaxListEntries);
  if (phiv.empty()) ThrowBadInput("expected at least one phi value", name, kApsUPhi);
  auto group = h5::OpenGroup(file, name, kApsUMaps);
  std::vector<std::string> keys = h5::GroupKeysInH5pyOrder(group.get(), {name, kApsUMaps});
  std::sort(keys.begin(), keys.end());  // APS-U: explicitly sorted key names

  const auto n_phi = static_cast<std::int64_t>(phiv.size());
  const auto n_q = static_cast<std::int64_t>(qv.size());
  std::vector<std::pair<std::int64_t, std::pair<std::size_t, std::size_t>>> pairs;
  for (std::int64_t id : processed) {
    // Ids count from 1; Python floor division makes id < 1 a negative q index (invalid).
    // (Checked before subtracting: id - 1 overflows for the smallest int64.)
    const std::int64_t b = id >= 1 ? id - 1 : -1;
    const std::int64_t qi = b >= 0 ? b / n_phi : -1;
    if (qi < 0 || qi >= n_q) {
      logger.Warn("{}: {}: processed bin {} maps to q index {} outside [0, {}); skipped", name,
                  kApsUBins, id, qi, n_q);
      continue;
    }
    pairs.push_back({id, {static_cast<std::size_t>(qi), static_cast<std::size_t>(b % n_phi)}});
  }
  if (pairs.size() != keys.size()) {
    logger.Warn("{}: {} valid processed bins but {} matrices in {}; using the first {}", name,
                pairs.size(), keys.size(), kApsUMaps, std::min(pairs.size(), keys.size()));
  }
  const std::size_t n = std::min(pairs.size(), keys.size());
  if (n == 0) {
    ThrowBadInput(fmt::format("no usable (q, phi) bin: {} valid processed bins, {} matrices",
                              pairs.size(), keys.size()),
                  name, kApsUMaps);
  }
  std::vector<double> pair_q(n);
  for (std::size_t i = 0; i < n; ++i) pair_q[i] = qv[pairs[i].second.first];
  std::vector<Candidate> out;
  for (std::size_t i : SelectApsUPairs(pair_q, o.target_q)) {
    out.push_back({pairs[i].first, std::string(kApsUMaps) + "/" + keys[i], pair_q[i],
                   phiv[pairs[i].second.second]});
  }
  return out;
}

// Shape F of one matrix dataset; validates type, rank and squareness.
std::int64_t MatrixSide(hid_t file, const std::string& name, const std::string& path,
                        std::int64_t max_frames) {
  auto ds = h5::OpenDataset(file, name, path);
  const h5::Where where{name, path};
  auto type = h5::Own<h5::Datatype>(H5Dget_type(ds.get()), "reading the datatype", where);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
    ThrowBadInput("expected a numeric (float or integer) matrix", name, path);
  }
  if (H5Tget_size(type.get()) > 16) {  // conversion buffers scale with the stored size
    ThrowBadInput(fmt::format("expected numbers of at most 16 bytes, found {}-byte elements",
                              H5Tget_size(type.get())),
                  name, path);
  }
  const auto dims = h5::DatasetDims(ds.get(), where);
  if (dims.size() != 2) {
    ThrowBadInput(
        fmt::format("expected a 2-D square two-time matrix, found a {}-D dataset", dims.size()),
        name, path);
  }
  if (dims[0] != dims[1]) {
    ThrowBadInput(
        fmt::format("expected a square two-time matrix, found shape ({}, {})", dims[0], dims[1]),
        name, path);
  }
  if (dims[0] == 0) ThrowBadInput("expected a non-empty matrix, found shape (0, 0)", name, path);
  if (dims[0] > static_cast<hsize_t>(max_frames)) {
    ThrowBadInput(fmt::format("matrix declares {} x {} frames, more than the limit of {} frames "
                              "(max_frames); refusing to allocate",
                              dims[0], dims[1], max_frames),
                  name, path);
  }
  h5::CheckStorageMatchesShape(ds.get(), static_cast<std::uint64_t>(dims[0]) * dims[1], where);
  H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
  h5::Check(H5Dget_space_status(ds.get(), &status), "reading the allocation status", where);
  if (status == H5D_SPACE_STATUS_NOT_ALLOCATED) {
    ThrowBadInput(fmt::format("the matrix stores no values: its {} x {} elements were never "
                              "written (every one would read as the fill value); expected "
                              "measured data",
                              dims[0], dims[1]),
                  name, path);
  }
  return static_cast<std::int64_t>(dims[0]);
}

}  // namespace

std::string_view ToString(DataFormat format) {
  return format == DataFormat::kApsU ? "aps_u" : "aps_old";
}

std::vector<double> DatasetMetadata::q_values() const {
  std::vector<double> out;
  for (const auto& b : bins) out.push_back(b.q);
  return out;
}

std::vector<double> DatasetMetadata::phi_values() const {
  std::vector<double> out;
  for (const auto& b : bins) out.push_back(b.phi);
  return out;
}

std::uint64_t MaxLoadBytes(const LoadOptions& options) {
  if (options.max_bytes != 0) return options.max_bytes;
  constexpr std::uint64_t kCap = 64ULL << 30;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return kCap;
  const auto physical = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  return std::min(kCap, physical / 10 * 8);
}

DataFormat DetectFormat(hid_t file, const std::string& name) {
  if (h5::PathExists(file, kApsUQ) && h5::PathExists(file, kApsUMaps)) return DataFormat::kApsU;
  if (h5::PathExists(file, kOldQ) && h5::PathExists(file, kOldPhi) &&
      h5::PathExists(file, kOldMaps)) {
    return DataFormat::kApsOld;
  }
  ThrowBadInput(fmt::format("unknown XPCS layout: expected either aps_u ({} and {}) or aps_old "
                            "({}, {} and {})",
                            kApsUQ, kApsUMaps, kOldQ, kOldPhi, kOldMaps),
                name);
}

DatasetMetadata ReadMetadataFromFile(hid_t file, const LoadOptions& options, const Logger& logger) {
  options.Validate();
  const std::string& name = options.path;
  DatasetMetadata meta;
  meta.file = name;
  meta.format = DetectFormat(file, name);
  const std::vector<Candidate> selected = meta.format == DataFormat::kApsU
                                              ? SelectApsU(file, options, logger)
                                              : SelectApsOld(file, options, logger);
  if (selected.empty()) ThrowBadInput("no (q, phi) bin selected", name);

  // All kept matrices must be square and of the same size.
  std::int64_t side = -1;
  for (const Candidate& c : selected) {
    const std::int64_t f = MatrixSide(file, name, c.dataset, options.max_frames);
    if (side >= 0 && f != side) {
      ThrowBadInput(fmt::format("expected all selected matrices to be {} x {}, found {} x {}", side,
                                side, f, f),
                    name, c.dataset);
    }
    side = f;
  }
  meta.file_frames = side;
  const FrameRange frames = ResolveFrames(options.start_frame, options.end_frame, side, name);
  meta.frame_begin = frames.begin;
  meta.n_frames = frames.count;
  meta.start_frame = frames.start_frame;
  meta.end_frame = frames.end_frame;
  if (options.end_frame > side) {
    logger.Warn("{}: end_frame {} is beyond the file's {} frames; fitting frames {}..{}", name,
                options.end_frame, side, meta.start_frame, meta.end_frame);
  }
  // Per-frame vectors (time grid, diagonals) must fit long before any matrix does.
  if (static_cast<std::uint64_t>(meta.n_frames) * 4 * sizeof(double) > MaxLoadBytes(options)) {
    ThrowBadInput(fmt::format("{} frames after slicing exceed the memory limit of {} bytes",
                              meta.n_frames, MaxLoadBytes(options)),
                  name, selected.front().dataset);
  }
  meta.dt = options.dt;
  meta.t = LoaderTimeGrid(options.dt, meta.n_frames);
  meta.loader_bin_count = selected.size();
  meta.q_physics = selected.front().q;
  // homodyne takes the nearest ring whatever its distance; a request far from every ring in
  // the file (a typo, another sample's config) is worth a warning.
  const double q_off = std::abs(meta.q_physics - options.target_q) / options.target_q;
  if (q_off > std::max(options.q_tolerance_fraction, 0.1)) {
    logger.Warn(
        "{}: wavevector_q = {:.6g} 1/A, but the nearest q in the file is {:.6g} 1/A "
        "({:.0f} % away, beyond q_tolerance_fraction {:.3g}); fitting that ring",
        name, options.target_q, meta.q_physics, 100.0 * q_off, options.q_tolerance_fraction);
  }

  std::vector<double> phi_norm;
  for (const Candidate& c : selected) phi_norm.push_back(NormalizePhi(c.phi));
  for (std::size_t k : FilterPhi(phi_norm, options.phi_filter, logger)) {
    const Candidate& c = selected[k];
    meta.bins.push_back({c.bin, c.dataset, c.q, c.phi, phi_norm[k]});
  }
  logger.Info("{}: {} layout, {} angle(s) at q={:.6g} 1/A, frames {}..{} of {} (N={})", name,
              ToString(meta.format), meta.bins.size(), meta.q_physics, meta.start_frame,
              meta.end_frame, side, meta.n_frames);
  return meta;
}

DatasetMetadata ReadDatasetMetadata(const LoadOptions& options, const Logger& logger) {
  options.Validate();
  const ReadCrashGuard guard(options.path, "its metadata");
  h5::File file = h5::OpenForRead(options.path);
  return ReadMetadataFromFile(file.get(), options, logger);
}

}  // namespace homodyne::io
