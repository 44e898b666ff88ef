#include "outputs/fitted_data.h"

#include <mpi.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "config/choices.h"
#include "config/config_bridge.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "core/huge_pages.h"
#include "core/phase_timer.h"
#include "core/progress.h"
#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "io/writers.h"
#include "model/kernel_factory.h"
#include "outputs/fitted_arrays.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"
#include "parallel/transfer.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {

double FittedDataLimit(const nlsq::NlsqRunResult& result) {
  const nlsq::MemoryPlan& plan = result.memory;
  if (plan.strategy != nlsq::FitStrategy::kStreaming) return kFittedDataMaxBytes;
  const double headroom =
      static_cast<double>(plan.budget.bytes) - static_cast<double>(plan.chosen().total());
  return std::max(0.0, headroom);
}

void WriteFittedData(const Comm& comm, const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const nlsq::NlsqRunResult& result,
                     const Logger& logger, const FittedDataThreads& threads) {
  WriteFittedData(comm, path, cfg, data_file, NlsqFittedModel(result), logger,
                  FittedDataLimit(result), threads);
}

FittedModel NlsqFittedModel(const nlsq::NlsqRunResult& result) {
  return FittedModel{result.report.analysis_mode, result.report.physical_values,
                     result.report.contrast, result.report.offset};
}

std::string_view ToString(FittedDataLevel level) { return config::ChoiceName(level); }

FittedDataLevel FittedDataLevelOf(const config::Config& cfg) { return cfg.fitted_data; }

FittedG1::FittedG1(const config::Config& cfg, const io::DatasetMetadata& meta,
                   const FittedModel& fitted)
    : time_axis_(cfg.analysis_mode == config::AnalysisMode::kTwoComponent
                     ? model::TwoComponentTimes(meta.t, meta.dt)
                     : meta.t) {
  model_.mode = cfg.analysis_mode;
  model_.geometry = GeometryFromConfig(cfg, meta.q_physics);
  model_.physical = fitted.physical;
  model_.contrast.assign(1, 1.0);
  model_.offset.assign(1, 0.0);
  model_.frames = static_cast<int>(meta.n_frames);
}

void FittedG1::AtAngle(double phi_deg, std::vector<double>& g) {
  model_.phi_deg = {phi_deg};
  // The fit's own fast transcendentals: the fitted model as the fit evaluated it.
  synth::ModelMatrixInto(model_, /*exact=*/false, scratch_, g);
}

void BroadcastFittedModel(const Comm& comm, FittedModel& fitted, double& max_bytes) {
  Broadcast(comm, fitted.physical);
  Broadcast(comm, fitted.contrast);
  Broadcast(comm, fitted.offset);
  Broadcast(comm, fitted.analysis_mode);
  int convention = static_cast<int>(fitted.convention);
  MPI_Bcast(&convention, 1, MPI_INT, 0, comm.get());
  fitted.convention = static_cast<FittedDataConvention>(convention);
  MPI_Bcast(&max_bytes, 1, MPI_DOUBLE, 0, comm.get());
}

namespace {

// fn on every rank with its errors agreed (parallel/collective.h), or fn alone.
template <typename Fn>
auto Together(const Comm* comm, Fn&& fn) {
  if (comm != nullptr) return RunCollectively(*comm, std::forward<Fn>(fn));
  return fn();
}

// Runs `attempt` unless an earlier one failed (whose error is kept): rank 0 goes on
// receiving every rank's compressed slabs after a failed write, so that no sender is left
// waiting.
template <typename Fn>
void Attempt(std::exception_ptr& failed, Fn&& attempt) {
  if (failed) return;
  try {
    attempt();
  } catch (...) {
    failed = std::current_exception();
  }
}

// The file of the ranks of `comm` (each computes the angles k ≡ rank mod size and writes
// them into the shared file, or, compressed, sends their chunks to rank 0, which writes the
// file), or of one process (comm = nullptr).
constexpr const char* kCubes[] = {
    "/c2_exp",           "/c2_theoretical_raw", "/c2_theoretical_scaled",
    "/c2_solver_scaled", "/residuals",          "/residuals_normalized"};

// One fitted_data.h5 being written: its shape, storage, which rank computes which angle, the
// file (rank 0) and where the time goes.
struct FittedWrite {
  const Comm* comm = nullptr;
  int rank = 0;
  int ranks = 1;
  std::size_t n = 0;     // angles
  std::uint64_t nn = 0;  // points of one angle's matrix
  bool cmc = false;      // the CMC convention (raw = g1²)
  bool full = false;     // the level "full": the four derived cubes too
  bool packed = false;   // compressed slab by slab here (chunks inside one angle)
  bool shared = false;   // every rank writes its own angles (uncompressed)
  double one = 1.0;      // raw = one + g1²
  io::ArrayStorage storage;
  std::vector<std::uint64_t> cube, chunk;
  std::optional<io::ArrayFileWriter> file;  // every rank when shared, else rank 0
  PhaseTimes parts;
  std::vector<double> read_buffer, c, g;  // one angle's stored matrix, data and g1², reused

  // Round r computes angle r·ranks + rank on each rank (none past the last angle).
  std::size_t AngleOf(std::size_t round, int r) const {
    return round * static_cast<std::size_t>(ranks) + static_cast<std::size_t>(r);
  }
};

// Every rank (shared) or rank 0 creates every dataset of the file.
void CreateFittedDatasets(FittedWrite& w, const std::filesystem::path& path,
                          const io::DatasetMetadata& meta, const char* time_axis_note) {
  const auto nf = static_cast<std::uint64_t>(meta.n_frames);
  const std::vector<std::uint64_t> pairs{w.n, 2};
  Together(w.comm, [&] {
    if (w.shared) {
      w.file.emplace(path.string(), w.comm->get());
    } else if (w.rank == 0) {
      w.file.emplace(path.string());
    } else {
      return;
    }
    io::ArrayFileWriter& out = *w.file;
    const bool cmc = w.cmc;
    out.Create(kCubes[0], w.cube, "diagonal-corrected data", w.storage);
    out.Create(kCubes[1], w.cube, cmc ? "g1^2" : "1 + g1^2", w.storage);
    out.Create("/per_angle_scaling", pairs,
               cmc ? "[a_k, b_k] post-hoc least squares on g1^2, clipped to [0.01, 1] x [0.5, 1.5]"
                   : "[a_k, b_k] post-hoc least squares");
    out.Create("/per_angle_scaling_solver", pairs, "[contrast_k, offset_k]");
    if (w.full) {
      out.Create(kCubes[2], w.cube, "a_k * raw + b_k (post-hoc)", w.storage);
      out.Create(kCubes[3], w.cube, "offset_k + contrast_k * g1^2", w.storage);
      out.Create(kCubes[4], w.cube, "c2_exp - c2_theoretical_scaled", w.storage);
      out.Create(kCubes[5], w.cube,
                 cmc ? "residuals / (0.05 * c2_exp), c2_exp taken as 1 where it is 0"
                     : "residuals / (0.05 * c2_exp), 0 where c2_exp == 0",
                 w.storage);
    }
    out.Create("/t1", {nf}, time_axis_note);
    out.Create("/t2", {nf}, time_axis_note);
    out.Create("/q", {1}, "1/Angstrom");
    out.Create("/phi_angles", {w.n}, "degrees, normalised");
  });
}

// One array's slab of every rank of the round into the file. Shared: every rank writes its
// own (independently; errors agreed after). Otherwise every rank compresses its slab at once (rank
// 0 included); rank 0 writes its own, then each other rank's in rank order (or, one process, writes
// it).
void DeliverSlab(FittedWrite& w, std::size_t round, bool mine, const char* name,
                 std::span<const double> values) {
  PhaseTimes::Scope t(w.parts, "deliver");
  if (w.shared) {
    Together(w.comm, [&] {
      if (mine) w.file->WriteSlab(name, w.AngleOf(round, w.rank), values);
    });
    return;
  }
  std::vector<std::vector<unsigned char>> chunks;
  Together(w.comm, [&] {
    if (mine && w.packed) chunks = io::PackSlab(w.cube, w.chunk, values, w.storage);
  });
  Together(w.comm, [&] {
    if (w.rank != 0) {
      if (!mine) return;
      // Several ranks without a shared file: compressed (w.packed).
      SendBuffers(*w.comm, 0, chunks);
      return;
    }
    std::exception_ptr failed;
    for (int r = 0; r < w.ranks && w.AngleOf(round, r) < w.n; ++r) {
      const std::size_t kr = w.AngleOf(round, r);
      if (w.packed) {
        if (r > 0) chunks = RecvBuffers(*w.comm, r);
        Attempt(failed, [&] { w.file->WritePackedSlab(name, kr, chunks); });
      } else {
        Attempt(failed, [&] { w.file->WriteSlab(name, kr, values); });
      }
    }
    if (failed) std::rethrow_exception(failed);
  });
}

// One round: this rank's angle read, its model and per-angle pairs (into per_angle), then
// every cube of the level delivered.
void WriteRound(FittedWrite& w, std::size_t round, const io::DatasetMetadata& meta, FittedG1& model,
                const std::vector<double>& phi, const FittedModel& result,
                std::vector<double>& per_angle, std::vector<double>& slab) {
  const std::size_t n = w.n;
  const std::size_t k = w.AngleOf(round, w.rank);
  const bool mine = k < n;
  // The previous round's matrices: their pages are reused (fresh pages cost more than the
  // read and the model; docs/performance.md, "Large buffers on transparent huge pages").
  std::vector<double>& c = w.c;
  std::vector<double>& g = w.g;
  double a = 0.0, b = 0.0, contrast = 0.0, offset = 0.0;
  Together(w.comm, [&] {
    if (!mine) return;
    {
      PhaseTimes::Scope t(w.parts, "read");
      io::LoadAngleMatrixInto(meta, k, w.read_buffer, c);
    }
    PhaseTimes::Scope t(w.parts, "model");
    model.AtAngle(phi[k], g);
    const outputs::PostHocScaling s = outputs::FitPostHocScaling(c, g, w.one, w.cmc);
    a = s.a;
    b = s.b;
    per_angle[4 * n + k] = s.a_unclipped;
    contrast = result.contrast.at(k);
    offset = result.offset.at(k);
    per_angle[k] = a;
    per_angle[n + k] = b;
    per_angle[2 * n + k] = contrast;
    per_angle[3 * n + k] = offset;
  });
  const auto write = [&](const char* name, outputs::FittedCube which) {
    if (mine) {
      const outputs::PostHocScaling s{a, b};
      for (std::uint64_t p = 0; p < w.nn; ++p) {
        slab[p] = outputs::FittedCubeValue(which, c[p], g[p], w.one, s, contrast, offset, w.cmc);
      }
    }
    DeliverSlab(w, round, mine, name, slab);
  };
  DeliverSlab(w, round, mine, kCubes[0], c);
  write(kCubes[1], outputs::FittedCube::kRaw);
  if (w.full) {
    write(kCubes[2], outputs::FittedCube::kScaled);
    write(kCubes[3], outputs::FittedCube::kSolver);
    write(kCubes[4], outputs::FittedCube::kResiduals);
    write(kCubes[5], outputs::FittedCube::kNormalized);
  }
}

// The per-angle pairs (summed over the ranks: each angle's from its rank, 0 from the others,
// x + 0 = x exactly), the axes, q and the angles; from rank 0, into the file.
void WriteSmallArrays(FittedWrite& w, const io::DatasetMetadata& meta,
                      const std::vector<double>& time_axis, const std::vector<double>& phi,
                      std::vector<double>& per_angle) {
  const std::size_t n = w.n;
  if (w.comm != nullptr) {
    MPI_Allreduce(MPI_IN_PLACE, per_angle.data(), static_cast<int>(per_angle.size()), MPI_DOUBLE,
                  MPI_SUM, w.comm->get());
  }
  Together(w.comm, [&] {
    if (w.rank != 0) return;
    for (std::size_t k = 0; k < n; ++k) {
      w.file->WriteSlab("/per_angle_scaling", k,
                        std::vector<double>{per_angle[k], per_angle[n + k]});
      w.file->WriteSlab("/per_angle_scaling_solver", k,
                        std::vector<double>{per_angle[2 * n + k], per_angle[3 * n + k]});
    }
    w.file->WriteSlab("/t1", 0, time_axis);
    w.file->WriteSlab("/t2", 0, time_axis);
    w.file->WriteSlab("/q", 0, std::vector<double>{meta.q_physics});
    w.file->WriteSlab("/phi_angles", 0, phi);
  });
}

// CMC: a least-squares contrast on g1² outside (0, 1] was clipped; say so per angle.
void WarnClippedContrasts(const FittedWrite& w, const std::filesystem::path& path,
                          const std::vector<double>& phi, const std::vector<double>& per_angle,
                          const Logger& logger) {
  for (std::size_t k = 0; w.cmc && k < w.n; ++k) {
    const double a = per_angle[4 * w.n + k];
    if (a > 1.0 || a <= 0.0) {
      logger.Warn(
          "{}: angle {} (phi = {:.2f} deg): least-squares contrast {:.4g} on g1^2 is "
          "unphysical; clipped to {}",
          path.string(), k, phi[k], a, a > 1.0 ? "1" : "0.01");
    }
  }
}

// Who writes which angles of `path`, and how: compression, chunks, one shared file.
void ChooseStorage(FittedWrite& w, std::size_t nf, const config::Config& cfg,
                   const FittedDataThreads& threads, const std::filesystem::path& path,
                   const Logger& logger) {
  const Comm* comm = w.comm;
  w.rank = comm != nullptr ? comm->rank() : 0;
  w.ranks = comm != nullptr ? comm->size() : 1;
  // The N×N arrays compressed as the config says (output.compress_hdf5, compression_level),
  // by the rank that computed them (in its threads), in chunks inside one angle when several
  // ranks share the work.
  w.storage = io::ArrayStorage{cfg.Hdf5DeflateLevel(), std::max(1, threads.count), threads.start,
                               /*chunks_in_slab=*/w.ranks > 1};
  if (w.storage.deflate_level > 0 && !io::DeflateAvailable()) {
    logger.Warn("{}: written uncompressed (this HDF5 library has no deflate filter)",
                path.string());
  }
  w.cube = {w.n, nf, nf};
  w.chunk = io::ChunkShape(w.cube, w.storage);
  // Compressed slab by slab here (chunks inside one angle), or by HDF5 (small angles of one
  // process, several to a chunk).
  w.packed = !w.chunk.empty() && w.chunk[0] == 1;
  // The ranks write their angles into one shared file (rank 0 lays it out, io/writers.h),
  // one rank too: its large slabs then go to the device directly. Compressed arrays are
  // not shared: each rank compresses its angles' chunks and rank 0 writes them (HDF5's
  // direct chunk writes are serial).
  w.shared = comm != nullptr && w.chunk.empty();
}

void WriteOn(const Comm* comm, const std::filesystem::path& path, const config::Config& cfg,
             const std::string& data_file, FittedModel result, const Logger& logger,
             double max_bytes, const FittedDataThreads& threads) {
  const FittedDataLevel level = FittedDataLevelOf(cfg);
  if (level == FittedDataLevel::kNone) return;
  if (comm != nullptr) BroadcastFittedModel(*comm, result, max_bytes);
  // The size check comes before the data are read (from the metadata alone).
  const io::LoadOptions load = LoadOptionsFromConfig(cfg, data_file);
  const io::DatasetMetadata meta = comm != nullptr
                                       ? io::BroadcastMetadata(*comm, load, Logger::Silent())
                                       : io::ReadDatasetMetadata(load, Logger::Silent());
  FittedWrite w;
  w.comm = comm;
  w.n = meta.n_angles();
  const auto nf = static_cast<std::size_t>(meta.n_frames);
  w.nn = nf * nf;
  // A progress line for files above 1 GiB (minutes on a slow file system), per angle.
  const double cubes = level == FittedDataLevel::kFull ? 6.0 : 2.0;
  const double file_gib = 8.0 * cubes * static_cast<double>(w.n) * static_cast<double>(w.nn) /
                          static_cast<double>(1ULL << 30);
  Progress progress(file_gib > 1.0 ? logger : Logger::Silent(),
                    "writing " + path.filename().string());
  const std::vector<double> phi = meta.phi_values();
  const bool two_component = cfg.analysis_mode == config::AnalysisMode::kTwoComponent;
  const char* time_axis_note =
      two_component ? "seconds, dt*[1..N] (two_component grid)" : "seconds from 0";
  // g1² on the loader grid at the fitted physics, one angle at a time.
  FittedG1 model(cfg, meta, result);
  const std::vector<double>& time_axis = model.time_axis();

  w.cmc = result.convention == FittedDataConvention::kCmc;
  ChooseStorage(w, nf, cfg, threads, path, logger);
  // The file is written one angle at a time: the angle's data, its read buffer, its g1² and
  // one output matrix are held at once, whatever the number of angles, and its compressed
  // chunks.
  const double matrices = !w.chunk.empty() ? 5.0 : 4.0;
  const double working = 8.0 * matrices * static_cast<double>(w.nn);
  if (working > max_bytes) {
    logger.Warn("{} not written: one angle's matrices would take {:.2f} GiB (limit {:.2f} GiB)",
                path.string(), working / (1ULL << 30), max_bytes / (1ULL << 30));
    return;
  }
  // The level "model" stores the data and the model; the four other cubes are one
  // multiply-add of those and the per-angle pairs (docs/outputs.md).
  w.full = level == FittedDataLevel::kFull;
  CreateFittedDatasets(w, path, meta, time_axis_note);
  w.one = w.cmc ? 0.0 : 1.0;
  // Per angle: the post-hoc a_k, b_k, the solver's contrast and offset, and the unclipped
  // least-squares contrast (for the warnings).
  std::vector<double> per_angle(5 * w.n, 0.0);
  std::vector<double> slab = VectorOnHugePages<double>(w.nn);
  const std::size_t rounds =
      (w.n + static_cast<std::size_t>(w.ranks) - 1) / static_cast<std::size_t>(w.ranks);
  for (std::size_t round = 0; round < rounds; ++round) {
    WriteRound(w, round, meta, model, phi, result, per_angle, slab);
    if (w.rank == 0) {
      const std::size_t done = std::min(w.n, w.AngleOf(round, w.ranks));
      progress.Update(fmt::format(
          "angle {} of {}, {:.2f} of {:.2f} GiB", done, w.n,
          file_gib * static_cast<double>(done - 1) / static_cast<double>(w.n), file_gib));
    }
  }
  WriteSmallArrays(w, meta, time_axis, phi, per_angle);
  WarnClippedContrasts(w, path, phi, per_angle, logger);
  io::GroupAttributes attrs;
  attrs.strings.emplace_back("analysis_mode", result.analysis_mode);
  attrs.strings.emplace_back("source", meta.file);
  attrs.strings.emplace_back("fitted_data", std::string(ToString(level)));
  {
    // Flush, fsync and rename: on a slow disk most of the write's time.
    PhaseTimes::Scope t(w.parts, "commit");
    Together(comm, [&] {
      if (w.rank == 0 || w.shared) w.file->Commit(attrs);
    });
  }
  progress.Done(
      fmt::format("{} angles, {:.2f} GiB in {:.1f} s", w.n, file_gib, progress.elapsed()));
  logger.Debug(
      "{}: rank {}: reading the data {:.3f} s, the model and the per-angle pairs {:.3f} s, "
      "the arrays' slabs (compressed, sent, written) {:.3f} s, closing, syncing and renaming "
      "the file {:.3f} s",
      path.filename().string(), w.rank, w.parts.Of("read"), w.parts.Of("model"),
      w.parts.Of("deliver"), w.parts.Of("commit"));
}

}  // namespace

void WriteFittedData(const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const FittedModel& fitted, const Logger& logger,
                     double max_bytes, const FittedDataThreads& threads) {
  WriteOn(nullptr, path, cfg, data_file, fitted, logger, max_bytes, threads);
}

void WriteFittedData(const Comm& comm, const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const FittedModel& fitted, const Logger& logger,
                     double max_bytes, const FittedDataThreads& threads) {
  WriteOn(&comm, path, cfg, data_file, fitted, logger, max_bytes, threads);
}

FittedModel PosteriorMeanModel(const cmc::CmcRunResult& r) {
  FittedModel m;
  m.analysis_mode = r.analysis_mode;
  m.convention = FittedDataConvention::kCmc;
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0) {
      m.contrast.push_back(p.mean);
    } else if (p.name.rfind("offset_", 0) == 0) {
      m.offset.push_back(p.mean);
    } else {
      m.physical.push_back(p.mean);
    }
  }
  return m;
}

}  // namespace homodyne
