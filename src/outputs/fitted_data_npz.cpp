// fitted_data.npz: homodyne's arrays and names (physics spec §5.2–5.3) as numpy.load reads
// them; the values are those of fitted_data.h5 bit for bit (outputs/fitted_arrays.h).
//
// Stored members (numpy.savez, the default): every member's size is known from the metadata,
// so the archive's layout is fixed before a value is computed (outputs/stored_zip.h). Each
// rank computes its angles (k ≡ rank mod ranks, as fitted_data.h5) and writes each slab at
// its place in the one file (MPI-IO); rank 0 writes the small arrays, the headers and the
// directory once the slabs' CRC-32s are gathered. One pass over the data, no copy.
//
// Deflated members (output.compress_hdf5): a deflated member's size is known only once it is
// compressed, so rank 0 writes the members to .npy files beside the archive and libzip
// deflates them into it.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "config/config_bridge.h"
#include "core/atomic_file.h"
#include "core/huge_pages.h"
#include "core/phase_timer.h"
#include "core/progress.h"
#include "io/dataset.h"
#include "model/kernel_factory.h"
#include "outputs/fitted_arrays.h"
#include "outputs/fitted_data.h"
#include "outputs/npz_file.h"
#include "outputs/stored_zip.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"
#include "parallel/shared_file.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {

namespace {

using outputs::FittedCube;

// The N×N members besides c2_exp, and what each holds.
struct Cube {
  const char* name;
  FittedCube which;
};

std::vector<Cube> CubesOf(bool cmc) {
  std::vector<Cube> cubes = {{"c2_theoretical_raw", FittedCube::kRaw},
                             {"c2_theoretical_scaled", FittedCube::kScaled},
                             {"residuals", FittedCube::kResiduals},
                             {"residuals_normalized", FittedCube::kNormalized}};
  if (!cmc) cubes.push_back({"c2_solver_scaled", FittedCube::kSolver});
  return cubes;
}

// What every writer needs: the dataset, the model at the fitted physics and the shapes.
struct NpzJob {
  io::DatasetMetadata meta;
  std::size_t n = 0;     // angles
  std::size_t nf = 0;    // frames
  std::uint64_t nn = 0;  // points of one angle's matrix
  bool cmc = false;      // the CMC convention (raw = g1², no solver arrays)
  double one = 1.0;      // raw = one + g1²
  std::vector<double> phi;
};

// One angle: its data, g1², and the pairs (post-hoc a, b; the solver's contrast, offset).
struct AngleArrays {
  std::vector<double> c, g;
  outputs::PostHocScaling s;
  double contrast = 0.0, offset = 0.0;
};

// Angle k into `a`, whose matrices (and the read buffer) keep their memory from angle to angle.
void ComputeAngle(const NpzJob& job, FittedG1& model, const FittedModel& fitted, std::size_t k,
                  AngleArrays& a, std::vector<double>& buffer) {
  io::LoadAngleMatrixInto(job.meta, k, buffer, a.c);
  model.AtAngle(job.phi[k], a.g);
  a.s = outputs::FitPostHocScaling(a.c, a.g, job.one, job.cmc);
  a.contrast = fitted.contrast.at(k);
  a.offset = fitted.offset.at(k);
}

void FillCube(const NpzJob& job, const AngleArrays& a, FittedCube which,
              std::vector<double>& slab) {
  for (std::uint64_t p = 0; p < job.nn; ++p) {
    slab[p] = outputs::FittedCubeValue(which, a.c[p], a.g[p], job.one, a.s, a.contrast, a.offset,
                                       job.cmc);
  }
}

std::span<const unsigned char> Bytes(std::span<const double> values) {
  return {reinterpret_cast<const unsigned char*>(values.data()), values.size_bytes()};
}
std::span<const unsigned char> Bytes(const std::string& text) {
  return {reinterpret_cast<const unsigned char*>(text.data()), text.size()};
}

// The archive's members in homodyne's order. The N×N ones carry `cube`, their index in the
// order of the slabs (c2_exp, then CubesOf's); the others (-1) are rank 0's small arrays.
struct Member {
  std::string name;
  std::vector<std::uint64_t> shape;
  int cube = -1;
  std::uint64_t values() const {
    std::uint64_t count = 1;
    for (std::uint64_t d : shape) count *= d;
    return count;
  }
  std::string NpyHeader() const { return outputs::NpyHeader("<f8", shape); }
};

std::vector<Member> MembersOf(const NpzJob& job) {
  const std::vector<std::uint64_t> cube{job.n, job.nf, job.nf};
  const std::vector<Cube> cubes = CubesOf(job.cmc);
  const auto cube_index = [&](const char* name) {
    for (std::size_t i = 0; i < cubes.size(); ++i) {
      if (std::string(cubes[i].name) == name) return static_cast<int>(i) + 1;
    }
    return -1;
  };
  std::vector<Member> m = {{"phi_angles", {job.n}},
                           {"c2_exp", cube, 0},
                           {"c2_theoretical_raw", cube, cube_index("c2_theoretical_raw")},
                           {"c2_theoretical_scaled", cube, cube_index("c2_theoretical_scaled")},
                           {"per_angle_scaling", {job.n, 2}}};
  if (!job.cmc) m.push_back({"per_angle_scaling_solver", {job.n, 2}});
  m.push_back({"residuals", cube, cube_index("residuals")});
  m.push_back({"residuals_normalized", cube, cube_index("residuals_normalized")});
  m.push_back({"t1", {job.nf}});
  m.push_back({"t2", {job.nf}});
  m.push_back({"q", {1}});
  if (!job.cmc) m.push_back({"c2_solver_scaled", cube, cube_index("c2_solver_scaled")});
  return m;
}

// The small members' values, from the per-angle pairs (4k..4k+3: post-hoc a, b; the solver's
// contrast, offset).
std::map<std::string, std::vector<double>> SmallArrays(const NpzJob& job,
                                                       const std::vector<double>& time_axis,
                                                       const std::vector<double>& pairs) {
  std::vector<double> scaling, solver;
  for (std::size_t k = 0; k < job.n; ++k) {
    scaling.insert(scaling.end(), {pairs[4 * k], pairs[4 * k + 1]});
    solver.insert(solver.end(), {pairs[4 * k + 2], pairs[4 * k + 3]});
  }
  return {{"phi_angles", job.phi},
          {"per_angle_scaling", scaling},
          {"per_angle_scaling_solver", solver},
          {"t1", time_axis},
          {"t2", time_axis},
          {"q", {job.meta.q_physics}}};
}

void StorePairs(const AngleArrays& a, std::size_t k, std::vector<double>& pairs) {
  pairs[4 * k] = a.s.a;
  pairs[4 * k + 1] = a.s.b;
  pairs[4 * k + 2] = a.contrast;
  pairs[4 * k + 3] = a.offset;
}

// ---- Deflated: rank 0, through .npy files and libzip ------------------------------------

void WriteDeflated(const std::filesystem::path& path, const NpzJob& job, FittedG1& model,
                   const FittedModel& fitted, int level) {
  namespace fs = std::filesystem;
  const std::vector<Cube> cubes = CubesOf(job.cmc);
  const std::vector<Member> members = MembersOf(job);
  const fs::path parts = path.parent_path() / (path.filename().string() + ".parts");
  struct RemoveParts {
    fs::path dir;
    ~RemoveParts() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{parts};
  EnsureDirectory(parts);
  const auto npy_file = [&](const Member& m) { return parts / (m.name + ".npy"); };
  // One .npy file per N×N member, indexed by its `cube`.
  std::vector<std::unique_ptr<outputs::NpyStream>> streams(1 + cubes.size());
  for (const Member& m : members) {
    if (m.cube >= 0) {
      streams[static_cast<std::size_t>(m.cube)] =
          std::make_unique<outputs::NpyStream>(npy_file(m), m.shape);
    }
  }
  std::vector<double> pairs(4 * job.n), buffer;
  std::vector<double> slab = VectorOnHugePages<double>(job.nn);
  AngleArrays a;
  for (std::size_t k = 0; k < job.n; ++k) {
    ComputeAngle(job, model, fitted, k, a, buffer);
    StorePairs(a, k, pairs);
    streams[0]->Append(a.c);
    for (std::size_t i = 0; i < cubes.size(); ++i) {
      FillCube(job, a, cubes[i].which, slab);
      streams[i + 1]->Append(slab);
    }
  }
  for (auto& stream : streams) stream->Close();
  const std::map<std::string, std::vector<double>> small =
      SmallArrays(job, model.time_axis(), pairs);
  outputs::NpzArchive npz(path, level);
  for (const Member& m : members) {
    if (m.cube >= 0) {
      npz.AddNpyFile(m.name, npy_file(m));
    } else {
      npz.AddDoubles(m.name, m.shape, small.at(m.name));
    }
  }
  npz.Commit();
}

// ---- Stored: every rank, in place -------------------------------------------------------

outputs::StoredZipLayout LayoutOf(const std::vector<Member>& members) {
  std::vector<outputs::StoredZipLayout::Member> zip;
  for (const Member& m : members) {
    zip.push_back({m.name + ".npy", m.NpyHeader().size() + 8 * m.values()});
  }
  return outputs::StoredZipLayout(std::move(zip));
}

// This rank's angles: each slab written at its place, its CRC-32 into crcs[cube·n + k], its
// pairs into pairs[4k..4k+3].
void WriteOwnSlabs(const Comm& comm, SharedFile& file, const NpzJob& job, FittedG1& model,
                   const FittedModel& fitted, const std::vector<Member>& members,
                   const outputs::StoredZipLayout& layout, std::vector<std::uint64_t>& crcs,
                   std::vector<double>& pairs, Progress& progress, PhaseTimes& parts) {
  const std::vector<Cube> cubes = CubesOf(job.cmc);
  const std::uint64_t slab_bytes = 8 * job.nn;
  // Where each cube's values start in the file.
  std::vector<std::uint64_t> values_at(1 + cubes.size(), 0);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].cube >= 0) {
      values_at[static_cast<std::size_t>(members[i].cube)] =
          layout.data_offset(i) + members[i].NpyHeader().size();
    }
  }
  const auto put = [&](int cube, std::size_t k, std::span<const double> values) {
    const auto c = static_cast<std::size_t>(cube);
    {
      PhaseTimes::Scope t(parts, "crc");
      crcs[c * job.n + k] = outputs::Crc32(0, Bytes(values));
    }
    PhaseTimes::Scope t(parts, "write");
    file.WriteAt(values_at[c] + k * slab_bytes, Bytes(values));
  };
  std::vector<double> slab = VectorOnHugePages<double>(job.nn), buffer;
  AngleArrays a;
  const auto ranks = static_cast<std::size_t>(comm.size());
  for (std::size_t k = static_cast<std::size_t>(comm.rank()); k < job.n; k += ranks) {
    {
      PhaseTimes::Scope t(parts, "compute");
      ComputeAngle(job, model, fitted, k, a, buffer);
    }
    StorePairs(a, k, pairs);
    put(0, k, a.c);
    for (std::size_t i = 0; i < cubes.size(); ++i) {
      {
        PhaseTimes::Scope t(parts, "compute");
        FillCube(job, a, cubes[i].which, slab);
      }
      put(static_cast<int>(i) + 1, k, slab);
    }
    if (comm.is_root()) {
      progress.Update(fmt::format("angle {} of {}", std::min(k + ranks, job.n), job.n));
    }
  }
}

// Rank 0: the small members, the N×N members' .npy headers, every local header and the
// central directory.
void WriteRootParts(SharedFile& file, const NpzJob& job, const std::vector<double>& time_axis,
                    const std::vector<Member>& members, const outputs::StoredZipLayout& layout,
                    const std::vector<std::uint64_t>& slab_crcs, const std::vector<double>& pairs) {
  const std::map<std::string, std::vector<double>> small = SmallArrays(job, time_axis, pairs);
  const std::uint64_t slab_bytes = 8 * job.nn;
  std::vector<std::uint32_t> crcs;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    const std::string npy_header = m.NpyHeader();
    std::uint32_t crc = outputs::Crc32(0, Bytes(npy_header));
    if (m.cube < 0) {
      const std::vector<double>& values = small.at(m.name);
      HOMODYNE_CHECK(values.size() == m.values(),
                     "npz: a small array's size differs from its shape");
      crc = outputs::Crc32(crc, Bytes(values));
      file.WriteAt(layout.data_offset(i) + npy_header.size(), Bytes(values));
    } else {
      for (std::size_t k = 0; k < job.n; ++k) {
        const auto piece =
            static_cast<std::uint32_t>(slab_crcs[static_cast<std::size_t>(m.cube) * job.n + k]);
        crc = outputs::Crc32Combine(crc, piece, slab_bytes);
      }
    }
    file.WriteAt(layout.data_offset(i), Bytes(npy_header));
    file.WriteAt(layout.header_offset(i), Bytes(layout.LocalHeader(i, crc)));
    crcs.push_back(crc);
  }
  file.WriteAt(layout.central_directory_offset(), Bytes(layout.CentralDirectory(crcs)));
}

void WriteStored(const Comm& comm, const std::filesystem::path& path, const NpzJob& job,
                 FittedG1& model, const FittedModel& fitted, const Logger& logger) {
  const std::vector<Member> members = MembersOf(job);
  const outputs::StoredZipLayout layout = LayoutOf(members);
  const double file_gib =
      static_cast<double>(layout.total_bytes()) / static_cast<double>(1ULL << 30);
  Progress progress(file_gib > 1.0 && comm.is_root() ? logger : Logger::Silent(),
                    "writing " + path.filename().string());
  // Rank 0's temporary name for the file, on every rank; removed by rank 0 unless published.
  std::string tmp = comm.is_root() ? TemporaryPathFor(path).string() : std::string();
  Broadcast(comm, tmp);
  struct RemoveUnpublished {
    const Comm& comm;
    std::string tmp;
    bool published = false;
    ~RemoveUnpublished() {
      std::error_code ec;
      if (comm.is_root() && !published) std::filesystem::remove(tmp, ec);
    }
  } guard{comm, tmp};
  PhaseTimes parts;
  std::optional<SharedFile> file;
  RunCollectively(comm, [&] { file.emplace(comm, tmp); });
  const std::size_t n_cubes = 1 + CubesOf(job.cmc).size();
  std::vector<std::uint64_t> crcs(n_cubes * job.n, 0);
  std::vector<double> pairs(4 * job.n, 0.0);
  RunCollectively(comm, [&] {
    WriteOwnSlabs(comm, *file, job, model, fitted, members, layout, crcs, pairs, progress, parts);
  });
  // Each angle's entries come from its rank, 0 from the others: the sums are the values.
  MPI_Allreduce(MPI_IN_PLACE, crcs.data(), static_cast<int>(crcs.size()), MPI_UINT64_T, MPI_SUM,
                comm.get());
  MPI_Allreduce(MPI_IN_PLACE, pairs.data(), static_cast<int>(pairs.size()), MPI_DOUBLE, MPI_SUM,
                comm.get());
  RunCollectively(comm, [&] {
    if (comm.is_root()) {
      WriteRootParts(*file, job, model.time_axis(), members, layout, crcs, pairs);
    }
  });
  {
    PhaseTimes::Scope t(parts, "close");
    RunCollectively(comm, [&] { file->Close(); });
  }
  {
    PhaseTimes::Scope t(parts, "publish");
    RunCollectively(comm, [&] {
      if (comm.is_root()) {
        PublishAtomically(tmp, path);
        guard.published = true;
      }
    });
  }
  progress.Done(
      fmt::format("{} angles, {:.2f} GiB in {:.1f} s", job.n, file_gib, progress.elapsed()));
  logger.Debug(
      "{}: rank {}: reading the data and computing the arrays {:.3f} s, their CRC-32s {:.3f} s, "
      "writing the slabs {:.3f} s, flushing and closing the file {:.3f} s, syncing and renaming "
      "it {:.3f} s",
      path.filename().string(), comm.rank(), parts.Of("compute"), parts.Of("crc"),
      parts.Of("write"), parts.Of("close"), parts.Of("publish"));
}

}  // namespace

void WriteFittedDataNpz(const Comm& comm, const std::filesystem::path& path,
                        const config::Config& cfg, const std::string& data_file, FittedModel fitted,
                        const Logger& logger, double max_bytes) {
  if (FittedDataLevelOf(cfg) == FittedDataLevel::kNone) return;
  BroadcastFittedModel(comm, fitted, max_bytes);
  NpzJob job;
  job.meta = io::BroadcastMetadata(comm, LoadOptionsFromConfig(cfg, data_file), Logger::Silent());
  job.n = job.meta.n_angles();
  job.nf = static_cast<std::size_t>(job.meta.n_frames);
  job.nn = static_cast<std::uint64_t>(job.nf) * job.nf;
  // The angle's data, its g1² and one output matrix.
  const double working = 8.0 * 3.0 * static_cast<double>(job.nn);
  if (working > max_bytes) {
    logger.Warn("{} not written: one angle's matrices would take {:.2f} GiB (limit {:.2f} GiB)",
                path.string(), working / (1ULL << 30), max_bytes / (1ULL << 30));
    return;
  }
  job.phi = job.meta.phi_values();
  job.cmc = fitted.convention == FittedDataConvention::kCmc;
  job.one = job.cmc ? 0.0 : 1.0;
  FittedG1 model(cfg, job.meta, fitted);
  // The N×N arrays compressed only as output.compress_hdf5 and compression_level say, as
  // fitted_data.h5's: deflate took ~90 % of a 23 × 200 job's time (6.3 of 7.2 s) for a file
  // a fifth smaller. Stored members read in numpy.load as deflated ones do.
  const int level = cfg.Hdf5DeflateLevel();
  if (level != 0) {
    RunCollectively(comm, [&] {
      if (comm.is_root()) WriteDeflated(path, job, model, fitted, level);
    });
    return;
  }
  WriteStored(comm, path, job, model, fitted, logger);
}

}  // namespace homodyne
