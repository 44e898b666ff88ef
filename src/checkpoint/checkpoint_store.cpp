#include "checkpoint/checkpoint_store.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <sstream>

#include <fmt/format.h>

#include "checkpoint/interrupt.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "core/fnv1a.h"
#include "core/library_versions.h"
#include "io/h5_handles.h"
#include "io/read_crash_guard.h"
#include "parallel/collective.h"

namespace homodyne::checkpoint {
namespace fs = std::filesystem;
namespace h5 = io::h5;

namespace {

constexpr const char* kFormat = "homodyne-hpc checkpoint";
constexpr int kFormatVersion = 1;
constexpr hsize_t kChunkElements = 1 << 16;  // 512 KiB of doubles

void CheckName(const std::string& name) {
  HOMODYNE_CHECK(!name.empty() && name.find('/') == std::string::npos,
                 fmt::format("bad checkpoint dataset name '{}'", name));
}

const CheckpointRecord::Entry& Find(const std::map<std::string, CheckpointRecord::Entry>& m,
                                    const std::string& name, CheckpointRecord::Type type) {
  auto it = m.find(name);
  if (it == m.end() || it->second.type != type) {
    ThrowInternal(fmt::format("checkpoint dataset '{}' is missing or has another type", name));
  }
  return it->second;
}

// "name\ttype\towner\tsize\n" for every dataset this rank knows.
std::string Describe(const CheckpointRecord& r) {
  std::string out;
  for (const auto& [name, e] : r.entries()) {
    const std::size_t n =
        e.type == CheckpointRecord::Type::kDouble ? e.doubles.size() : e.ints.size();
    out += fmt::format("{}\t{}\t{}\t{}\n", name, static_cast<int>(e.type), e.owner, n);
  }
  return out;
}

struct Layout {
  std::string name;
  CheckpointRecord::Type type;
  int owner;
  hsize_t size;
};

// Every rank's descriptions merged; the owner's size wins. Collective.
std::vector<Layout> AgreeOnLayout(const Comm& comm, const CheckpointRecord& r) {
  const std::string mine = Describe(r);
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(comm.size()));
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm.get());
  std::vector<int> displs(lens.size(), 0);
  for (std::size_t i = 1; i < lens.size(); ++i) displs[i] = displs[i - 1] + lens[i - 1];
  std::string all(static_cast<std::size_t>(displs.back() + lens.back()), '\0');
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                 comm.get());
  std::map<std::string, Layout> merged;
  for (int rank = 0; rank < comm.size(); ++rank) {
    std::istringstream in(
        all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(rank)]),
                   static_cast<std::size_t>(lens[static_cast<std::size_t>(rank)])));
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      Layout l;
      int type = 0;
      std::getline(f, l.name, '\t');
      f >> type >> l.owner >> l.size;
      l.type = static_cast<CheckpointRecord::Type>(type);
      auto it = merged.find(l.name);
      if (it == merged.end() || l.owner == rank) merged[l.name] = l;
    }
  }
  std::vector<Layout> out;
  for (auto& [k, v] : merged) out.push_back(v);
  return out;
}

hid_t FileType(CheckpointRecord::Type t) {
  return t == CheckpointRecord::Type::kDouble  ? H5T_IEEE_F64LE
         : t == CheckpointRecord::Type::kInt64 ? H5T_STD_I64LE
                                               : H5T_STD_U8LE;
}

// The owner's values of dataset `l` (nullptr elsewhere; `bytes` holds the byte type's
// copy). Throws on the owner alone when the record disagrees with the agreed layout.
const void* OwnerBuffer(const Layout& l, const CheckpointRecord& r, int rank,
                        std::vector<std::uint8_t>& bytes) {
  if (rank != l.owner || l.size == 0) return nullptr;
  const auto& e = r.entries().at(l.name);
  HOMODYNE_CHECK(
      (e.type == CheckpointRecord::Type::kDouble ? e.doubles.size() : e.ints.size()) == l.size,
      "checkpoint dataset size differs from its layout");
  if (l.type == CheckpointRecord::Type::kDouble) return e.doubles.data();
  if (l.type == CheckpointRecord::Type::kInt64) return e.ints.data();
  bytes.assign(e.ints.begin(), e.ints.end());
  return bytes.data();
}

// Rank 0 alone, in a file it alone has open: the dataset with all its values.
void WriteDataset(hid_t file, const std::string& path, const Layout& l, const void* buf) {
  const h5::Where where{path, l.name};
  const hsize_t dims[1] = {l.size};
  const hsize_t maxdims[1] = {H5S_UNLIMITED};
  auto space = h5::Own<h5::Dataspace>(H5Screate_simple(1, dims, maxdims), "dataspace", where);
  auto dcpl = h5::Own<h5::PropList>(H5Pcreate(H5P_DATASET_CREATE), "dcpl", where);
  const hsize_t chunk[1] = {std::clamp<hsize_t>(l.size, 1, kChunkElements)};
  h5::Check(H5Pset_chunk(dcpl.get(), 1, chunk), "chunking", where);
  h5::Check(H5Pset_fletcher32(dcpl.get()), "fletcher32", where);
  auto ds = h5::Own<h5::Dataset>(H5Dcreate2(file, l.name.c_str(), FileType(l.type), space.get(),
                                            H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                                 "creating the dataset", where);
  if (l.size == 0) return;
  const hid_t mem_type = l.type == CheckpointRecord::Type::kDouble  ? H5T_NATIVE_DOUBLE
                         : l.type == CheckpointRecord::Type::kInt64 ? H5T_NATIVE_INT64
                                                                    : H5T_NATIVE_UINT8;
  h5::Check(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "writing", where);
  ds.Close(where);
}

// Collective: rank 0 receives dataset `l`'s values from their owner (its own are `buf`).
// Returns where rank 0 finds them (`received` holds another owner's); nullptr elsewhere.
const void* GatherToRoot(const Comm& comm, const Layout& l, const void* buf,
                         std::vector<std::uint8_t>& received) {
  if (l.size == 0) return nullptr;
  const std::size_t elem = l.type == CheckpointRecord::Type::kBytes ? 1 : 8;
  const std::size_t bytes = static_cast<std::size_t>(l.size) * elem;
  if (l.owner == 0) return comm.is_root() ? buf : nullptr;
  // Large datasets in pieces: MPI counts are ints.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  if (comm.rank() == l.owner) {
    const auto* p = static_cast<const std::uint8_t*>(buf);
    for (std::size_t off = 0; off < bytes; off += kPiece) {
      MPI_Send(p + off, static_cast<int>(std::min(kPiece, bytes - off)), MPI_BYTE, 0, 0,
               comm.get());
    }
    return nullptr;
  }
  if (!comm.is_root()) return nullptr;
  received.resize(bytes);
  for (std::size_t off = 0; off < bytes; off += kPiece) {
    MPI_Recv(received.data() + off, static_cast<int>(std::min(kPiece, bytes - off)), MPI_BYTE,
             l.owner, 0, comm.get(), MPI_STATUS_IGNORE);
  }
  return received.data();
}

void WriteIntAttribute(hid_t obj, const std::string& name, std::int64_t v, const h5::Where& w) {
  auto space = h5::Own<h5::Dataspace>(H5Screate(H5S_SCALAR), "scalar space", w);
  auto a = h5::Own<h5::Attribute>(
      H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
      "creating attribute " + name, w);
  h5::Check(H5Awrite(a.get(), H5T_NATIVE_INT64, &v), "writing attribute " + name, w);
}

std::int64_t ReadIntAttribute(hid_t obj, const std::string& name, const h5::Where& w) {
  auto a = h5::Own<h5::Attribute>(H5Aopen(obj, name.c_str(), H5P_DEFAULT),
                                  "opening attribute " + name, w);
  std::int64_t v = 0;
  h5::Check(H5Aread(a.get(), H5T_NATIVE_INT64, &v), "reading attribute " + name, w);
  return v;
}

// FNV-1a over everything a rank read from a checkpoint: the attributes that identify it and
// every entry's name, type and values.
std::uint64_t ContentDigest(const LoadedCheckpoint& c) {
  std::uint64_t h = kFnv1aBasis;
  auto mix = [&h](const void* data, std::size_t n) { h = Fnv1a(data, n, h); };
  mix(&c.sequence, sizeof c.sequence);
  mix(&c.ranks_at_write, sizeof c.ranks_at_write);
  mix(c.code_version.data(), c.code_version.size());
  for (const auto& [name, e] : c.record.entries()) {
    mix(name.data(), name.size());
    mix(&e.type, sizeof e.type);
    mix(e.doubles.data(), e.doubles.size() * sizeof(double));
    mix(e.ints.data(), e.ints.size() * sizeof(std::int64_t));
  }
  return h;
}

// Reads one checkpoint on this rank alone, with the serial HDF5 driver: every rank opens the
// file itself and the caller agrees on the outcome. No HDF5 call inside is collective, so a
// read that fails on one rank only (its node sees a damaged or missing file, a checksum
// fails there) cannot leave the other ranks waiting inside a collective read: with
// collective metadata and transfers such a job hung. A checkpoint is small (solver states),
// so each rank reading all of it costs little. Throws on any failure.
LoadedCheckpoint ReadCheckpoint(const fs::path& path, const std::string& kind,
                                std::string* config_hash, std::string* data_hash,
                                std::string* config_text, std::string* data_text) {
  const std::string p = path.string();
  const io::ReadCrashGuard guard(p, "the checkpoint");
  h5::PropList fapl = h5::MakeFileAccess(p);
  auto file = h5::Own<h5::File>(H5Fopen(p.c_str(), H5F_ACC_RDONLY, fapl.get()), "opening", {p, ""});
  const h5::Where root{p, "/"};
  if (h5::ReadStringAttribute(file.get(), "format", root) != kFormat ||
      ReadIntAttribute(file.get(), "format_version", root) != kFormatVersion) {
    ThrowIoError("not a homodyne-hpc checkpoint of this format version", p, "/format");
  }
  const std::string k = h5::ReadStringAttribute(file.get(), "kind", root);
  if (k != kind) ThrowIoError(fmt::format("kind '{}', expected '{}'", k, kind), p, "/kind");
  LoadedCheckpoint out;
  out.path = path;
  out.sequence = ReadIntAttribute(file.get(), "sequence", root);
  out.ranks_at_write = static_cast<int>(ReadIntAttribute(file.get(), "ranks_at_write", root));
  out.code_version = h5::ReadStringAttribute(file.get(), "code_version", root);
  *config_hash = h5::ReadStringAttribute(file.get(), "config_hash", root);
  *data_hash = h5::ReadStringAttribute(file.get(), "data_hash", root);
  h5::Group root_group = h5::OpenGroup(file.get(), p, "/");
  for (const std::string& name : h5::GroupKeysInH5pyOrder(root_group.get(), root)) {
    const h5::Where where{p, name};
    h5::Dataset ds = h5::OpenDataset(file.get(), p, name);
    auto type = h5::Own<h5::Datatype>(H5Dget_type(ds.get()), "type", where);
    const auto dims = h5::DatasetDims(ds.get(), where);
    const std::size_t n = dims.empty() ? 1 : static_cast<std::size_t>(dims[0]);
    CheckpointRecord::Entry e;
    const H5T_class_t cls = H5Tget_class(type.get());
    if (cls == H5T_FLOAT) {
      e.type = CheckpointRecord::Type::kDouble;
      e.doubles.resize(n);
      if (n > 0) {
        h5::Check(
            H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.doubles.data()),
            "reading (checksum)", where);
      }
    } else if (cls == H5T_INTEGER && H5Tget_size(type.get()) == 8) {
      e.type = CheckpointRecord::Type::kInt64;
      e.ints.resize(n);
      if (n > 0) {
        h5::Check(H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.ints.data()),
                  "reading (checksum)", where);
      }
    } else {
      e.type = CheckpointRecord::Type::kBytes;
      std::vector<std::uint8_t> bytes(n);
      if (n > 0) {
        h5::Check(H5Dread(ds.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
                  "reading (checksum)", where);
      }
      e.ints.assign(bytes.begin(), bytes.end());
    }
    out.record.mutable_entries()[name] = std::move(e);
  }
  root_group.Reset();
  *config_text = out.record.Has("identity.config") ? out.record.Text("identity.config") : "";
  *data_text = out.record.Has("identity.data") ? out.record.Text("identity.data") : "";
  file.Close({p, ""});
  return out;
}

}  // namespace

void CheckpointRecord::PutDoubles(const std::string& name, std::vector<double> values, int owner) {
  CheckName(name);
  Entry& e = entries_[name];
  e = Entry{Type::kDouble, owner, std::move(values), {}};
}

void CheckpointRecord::PutInts(const std::string& name, std::vector<std::int64_t> values,
                               int owner) {
  CheckName(name);
  entries_[name] = Entry{Type::kInt64, owner, {}, std::move(values)};
}

void CheckpointRecord::PutText(const std::string& name, const std::string& text, int owner) {
  CheckName(name);
  Entry e{Type::kBytes, owner, {}, {}};
  for (unsigned char c : text) e.ints.push_back(c);
  entries_[name] = std::move(e);
}

bool CheckpointRecord::Has(const std::string& name) const { return entries_.count(name) > 0; }
const std::vector<double>& CheckpointRecord::Doubles(const std::string& name) const {
  return Find(entries_, name, Type::kDouble).doubles;
}
const std::vector<std::int64_t>& CheckpointRecord::Ints(const std::string& name) const {
  return Find(entries_, name, Type::kInt64).ints;
}
std::string CheckpointRecord::Text(const std::string& name) const {
  const auto& v = Find(entries_, name, Type::kBytes).ints;
  return std::string(v.begin(), v.end());
}
double CheckpointRecord::Double(const std::string& name) const {
  const auto& v = Doubles(name);
  HOMODYNE_CHECK(v.size() == 1, fmt::format("checkpoint dataset '{}' is not a scalar", name));
  return v[0];
}
std::int64_t CheckpointRecord::Int(const std::string& name) const {
  const auto& v = Ints(name);
  HOMODYNE_CHECK(v.size() == 1, fmt::format("checkpoint dataset '{}' is not a scalar", name));
  return v[0];
}

void StoreOptions::Validate() const {
  if (keep_last < 1) {
    ThrowBadInput(fmt::format("keep_last_checkpoints must be ≥ 1 (got {})", keep_last), {},
                  "keep_last_checkpoints");
  }
  if (dir.empty()) ThrowBadInput("checkpoint_dir is empty", {}, "checkpoint_dir");
}

namespace {

// `dir` is a writable folder, or one that can be created (its nearest existing ancestor is a
// writable folder).
void CheckUsableFolder(const fs::path& dir) {
  const std::string key = "checkpoint_dir";
  std::error_code ec;
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) {
    const fs::path parent = existing.parent_path();
    if (parent == existing) break;
    existing = parent;
  }
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec)) {
    ThrowBadInput(existing == dir ? "expected a folder for the checkpoints, found a file"
                                  : fmt::format("cannot create the checkpoint folder: {} is a "
                                                "file, expected a folder",
                                                existing.string()),
                  dir.string(), key);
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    ThrowIoError(fmt::format("the checkpoint folder cannot be written: {} is not writable",
                             existing.string()),
                 dir.string(), key);
  }
}

}  // namespace

std::int64_t SequenceOf(const std::string& file_name, const std::string& kind) {
  const std::string prefix = kind + "_";
  if (file_name.rfind(prefix, 0) != 0 || file_name.size() < prefix.size() + 4 ||
      file_name.substr(file_name.size() - 3) != ".h5") {
    return -1;
  }
  const std::string digits = file_name.substr(prefix.size(), file_name.size() - prefix.size() - 3);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

CheckpointStore::CheckpointStore(const Comm& comm, StoreOptions options, RunIdentity identity,
                                 const Logger& logger)
    : comm_(comm), options_(std::move(options)), identity_(std::move(identity)), logger_(logger) {
  options_.Validate();
  if (options_.run_folder) options_.dir /= RunFolderName(identity_);
  // The folder is checked now, not at the first checkpoint (hours into a large fit).
  RunCollectively(comm_, [&] {
    if (comm_.is_root()) CheckUsableFolder(options_.dir);
  });
  const auto files = List();
  if (!files.empty())
    next_sequence_ = SequenceOf(files.back().filename().string(), options_.kind) + 1;
}

std::vector<fs::path> CheckpointStore::List() const {
  std::string joined;
  if (comm_.is_root()) {
    std::vector<std::pair<std::int64_t, fs::path>> found;
    std::error_code ec;
    if (fs::is_directory(options_.dir, ec)) {
      for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
        const std::int64_t seq = SequenceOf(entry.path().filename().string(), options_.kind);
        if (seq < 0) continue;
        if (!entry.is_regular_file(ec)) {
          logger_.Warn("{}: named like a checkpoint but not a file; ignored",
                       entry.path().string());
          continue;
        }
        found.emplace_back(seq, entry.path());
      }
    }
    std::sort(found.begin(), found.end());
    for (const auto& [seq, path] : found) joined += path.string() + "\n";
  }
  int len = static_cast<int>(joined.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm_.get());
  joined.resize(static_cast<std::size_t>(len));
  MPI_Bcast(joined.data(), len, MPI_CHAR, 0, comm_.get());
  std::vector<fs::path> out;
  std::istringstream in(joined);
  for (std::string line; std::getline(in, line);) out.emplace_back(line);
  return out;
}

fs::path CheckpointStore::Write(const CheckpointRecord& record) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path final_path =
      options_.dir / fmt::format("{}_{:06d}.h5", options_.kind, next_sequence_);
  const fs::path tmp = options_.dir / fmt::format(".{}.tmp", final_path.filename().string());
  // The whole write is the fault tests' unit of work (a slow rank is slow throughout).
  std::optional<FaultScope> fault;
  RunCollectively(comm_, [&] {
    fault.emplace("checkpoint", comm_.rank());
    if (comm_.is_root()) EnsureDirectory(options_.dir);
  });
  CheckpointRecord full = record;
  full.PutText("identity.config", identity_.config_description);
  full.PutText("identity.data", identity_.data_description);
  const std::vector<Layout> layout = AgreeOnLayout(comm_, full);
  // Each owner's values go to rank 0, which alone writes the file (serial HDF5). A write
  // that fails — a full disk, a quota — then fails on one rank outside any collective call,
  // and is agreed on after it. In a collectively written file such a failure left the ranks
  // in different collective calls inside HDF5 and MPI-IO, waiting for each other forever.
  // A checkpoint holds the solvers' states (parameters, matrices, chains), not the data:
  // one writer is enough.
  std::vector<std::vector<std::uint8_t>> owned(layout.size()), received(layout.size());
  std::vector<const void*> values(layout.size(), nullptr);
  RunCollectively(comm_, [&] {
    for (std::size_t i = 0; i < layout.size(); ++i) {
      values[i] = OwnerBuffer(layout[i], full, comm_.rank(), owned[i]);
      // Test hook: an owner's part of the checkpoint fails on that rank alone.
      if (comm_.rank() == layout[i].owner) MaybeInjectFailure("checkpoint_dataset", comm_.rank());
    }
  });
  for (std::size_t i = 0; i < layout.size(); ++i) {
    values[i] = GatherToRoot(comm_, layout[i], values[i], received[i]);
  }
  RunCollectively(comm_, [&] {
    if (!comm_.is_root()) return;
    const std::string p = tmp.string();
    h5::PropList fapl = h5::MakeFileAccess(p);
    h5::File file;
    try {
      file = h5::Own<h5::File>(H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                               "creating the checkpoint", {p, ""});
      const h5::Where root{p, "/"};
      h5::WriteStringAttribute(file.get(), "format", kFormat, root);
      WriteIntAttribute(file.get(), "format_version", kFormatVersion, root);
      h5::WriteStringAttribute(file.get(), "kind", options_.kind, root);
      WriteIntAttribute(file.get(), "sequence", next_sequence_, root);
      WriteIntAttribute(file.get(), "ranks_at_write", comm_.size(), root);
      h5::WriteStringAttribute(file.get(), "code_version", std::string(Version()), root);
      h5::WriteStringAttribute(file.get(), "config_hash", identity_.config_hash(), root);
      h5::WriteStringAttribute(file.get(), "data_hash", identity_.data_hash(), root);
      h5::WriteStringAttribute(file.get(), "created", IsoTimestampNow(), root);
      for (std::size_t i = 0; i < layout.size(); ++i) {
        WriteDataset(file.get(), p, layout[i], values[i]);
      }
      h5::Check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "flushing", root);
      file.Close({p, ""});
    } catch (...) {
      // Close (after freeing the space, so that HDF5 holds no half-closed file at exit) and
      // remove the temporary; the agreement then ends the write on every rank.
      h5::DiscardFile(file, p);
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw;
    }
  });
  comm_.Barrier();
  MaybeKill("checkpoint_write", writes_ + 1);  // test hook: die between write and rename
  RunCollectively(comm_, [&] {
    if (!comm_.is_root()) return;
    PublishAtomically(tmp, final_path);
    // Keep the newest keep_last.
    std::vector<std::pair<std::int64_t, fs::path>> found;
    for (const auto& entry : fs::directory_iterator(options_.dir)) {
      const std::int64_t seq = SequenceOf(entry.path().filename().string(), options_.kind);
      if (seq >= 0) found.emplace_back(seq, entry.path());
    }
    std::sort(found.begin(), found.end());
    const int excess = static_cast<int>(found.size()) - options_.keep_last;
    for (int i = 0; i < excess; ++i) {
      std::error_code ec;
      fs::remove(found[static_cast<std::size_t>(i)].second, ec);
    }
  });
  ++next_sequence_;
  ++writes_;
  write_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return final_path;
}

std::optional<fs::path> CheckpointStore::TryWrite(const CheckpointRecord& record, bool fatal) {
  try {
    return Write(record);
  } catch (const Error& e) {
    if (fatal || !IsAgreed(e)) throw;
    ++failed_writes_;
    logger_.Warn(
        "checkpoint not written ({}); the previous checkpoint stays valid and the run goes on "
        "(optimization.streaming.fatal_checkpoint_errors: true ends the run instead)",
        e.what());
    return std::nullopt;
  }
}

std::optional<LoadedCheckpoint> CheckpointStore::LoadNewest() {
  const auto files = List();
  bool noted_foreign = false;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    std::optional<LoadedCheckpoint> loaded;
    std::string cfg_hash, data_hash, cfg_text, data_text, why;
    try {
      loaded = ReadCheckpoint(*it, options_.kind, &cfg_hash, &data_hash, &cfg_text, &data_text);
    } catch (const std::exception& e) {
      why = e.what();
    }
    int failed = loaded ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm_.get());
    if (failed) {
      logger_.Warn("checkpoint {} is unusable and skipped ({}); trying the previous one",
                   it->string(), why.empty() ? "failed on another rank" : why);
      continue;
    }
    // Every rank read the file itself: the ranks resume one state only if they read the
    // same bytes (a node with a stale or different copy is a skip, as a damaged one is).
    std::uint64_t lo = ContentDigest(*loaded), hi = lo;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, comm_.get());
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, comm_.get());
    if (lo != hi) {
      logger_.Warn(
          "checkpoint {} is unusable and skipped (the ranks read different contents: a node "
          "sees another copy of the file); trying the previous one",
          it->string());
      continue;
    }
    // Another run's checkpoint (a hash collision of the run folders, files copied in, or a
    // store without run folders): never resumed, and never an error.
    std::string foreign;
    if (cfg_hash != identity_.config_hash()) {
      foreign = fmt::format("written with another config: {}",
                            FirstDifference(cfg_text, identity_.config_description));
    } else if (data_hash != identity_.data_hash()) {
      foreign = fmt::format("written for other input data: {}",
                            FirstDifference(data_text, identity_.data_description));
    }
    if (!foreign.empty()) {
      if (!noted_foreign) {
        logger_.Warn("checkpoint {} belongs to another run ({}); not resumed", it->string(),
                     foreign);
      }
      noted_foreign = true;
      continue;
    }
    return loaded;
  }
  return std::nullopt;
}

}  // namespace homodyne::checkpoint
