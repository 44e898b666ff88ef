// DIR/nlsq/fitted_data.h5 (and .npz): what homodyne writes to fitted_data.npz (physics spec §5.2),
// on the full loader grid (t = 0 included): c2_exp, c2_theoretical_raw (1 + g1²),
// c2_theoretical_scaled (post-hoc per-angle least squares), c2_solver_scaled,
// per_angle_scaling, per_angle_scaling_solver, residuals, residuals_normalized, t1, t2,
// q, phi_angles.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cmc/cmc_fit.h"
#include "config/config.h"
#include "core/log.h"
#include "io/dataset.h"
#include "nlsq/xpcs_fit.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {

class Comm;

// homodyne's two conventions for the post-hoc arrays (physics spec §5.2 and §5.3):
//   kNlsq: c2_theoretical_raw = 1 + g1², (a_k, b_k) the least squares of c2_exp on it,
//          residuals_normalized 0 where c2_exp = 0;
//   kCmc:  c2_theoretical_raw = g1², (a_k, b_k) the least squares of c2_exp on g1² with a_k
//          clipped to [0.01, 1] and b_k to [0.5, 1.5] (a warning per angle whose a_k is out of
//          range), residuals_normalized divided by 0.05·1 where c2_exp = 0.
// c2_theoretical_scaled = a_k·raw + b_k and residuals = c2_exp − c2_theoretical_scaled in
// both; c2_solver_scaled and per_angle_scaling_solver (the model's own contrast/offset) too.
enum class FittedDataConvention { kNlsq, kCmc };

// output.fitted_data: which arrays the file holds.
//   kFull:  homodyne's set (the six N×N arrays per angle and the small ones);
//   kModel: c2_exp, c2_theoretical_raw and the small arrays (per-angle pairs, t1, t2, q,
//           phi_angles): the four other N×N arrays are one multiply-add of those, bit for bit
//           (docs/outputs.md), and cost four times the data's size to store;
//   kNone:  no file.
using FittedDataLevel = config::FittedDataLevel;
std::string_view ToString(FittedDataLevel level);  // the config's name
// The config's level (output.fitted_data).
FittedDataLevel FittedDataLevelOf(const config::Config& cfg);

inline constexpr double kFittedDataMaxBytes = 4.0 * (1ULL << 30);  // one angle's matrices

// The threads that compress a one-process file's chunks: `count` (the caller's included);
// `start(t)` runs first in thread t ≥ 1, e.g. to pin it to the rank's core t.
struct FittedDataThreads {
  int count = 1;
  std::function<void(int thread_index)> start;
};

// The model whose c2 the file holds: physical parameters and per-angle contrast/offset.
struct FittedModel {
  std::string analysis_mode;
  std::vector<double> physical, contrast, offset;
  FittedDataConvention convention = FittedDataConvention::kNlsq;
};

// The fitted physics with contrast 1 and offset 0 on the file's grid, one definition for
// fitted_data.h5 and fitted_data.npz: g1² of one angle as the fit evaluated it (its fast
// transcendentals), and the frames' times as the model labels them, dt·[0 … N−1], or
// dt·[1 … N] for two_component (xpcsjax's grid), so that the figures' axes are the model's.
class FittedG1 {
 public:
  FittedG1(const config::Config& cfg, const io::DatasetMetadata& meta, const FittedModel& fitted);
  // g1² of angle phi_deg (degrees) into g, N×N (g keeps its memory when it has it).
  void AtAngle(double phi_deg, std::vector<double>& g);
  const std::vector<double>& time_axis() const { return time_axis_; }

 private:
  synth::SynthTruth model_;
  std::vector<double> time_axis_;
  std::vector<double> scratch_;  // the upper triangle's values, kept from angle to angle
};

// One process. Written one angle at a time: the angle's matrix is read from the file
// (io::LoadAngleMatrixInto), its g1² evaluated and its N×N slabs written, so the memory held is
// four N×N matrices whatever the number of angles. When those exceed `max_bytes` the file is
// not written (a warning says so). Atomic: a failure leaves neither the file nor its
// temporary. The N×N arrays are compressed as the config says (output.compress_hdf5,
// compression_level), in a file of one process by `threads` (io::ArrayStorage).
void WriteFittedData(const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const FittedModel& fitted, const Logger& logger,
                     double max_bytes = kFittedDataMaxBytes, const FittedDataThreads& threads = {});
// The same file written by the ranks of `comm` together (collective): each rank computes the
// angles k ≡ rank (mod ranks), so the time and the memory per rank shrink with the ranks; the
// values do not depend on them. Uncompressed (the default), every rank writes its angles into
// the one file (rank 0 lays it out, io::ArrayFileWriter; rank 0 renames it once every rank
// synced it); compressed, each rank compresses its angles' chunks (`threads` threads when
// comm has one rank, one per rank otherwise) and rank 0 writes them.
void WriteFittedData(const Comm& comm, const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const FittedModel& fitted, const Logger& logger,
                     double max_bytes = kFittedDataMaxBytes, const FittedDataThreads& threads = {});
// DIR/nlsq/fitted_data.h5 of an NLSQ run (homodyne and batch tasks; collective over `comm`):
// the limit is FittedDataLimit(result).
void WriteFittedData(const Comm& comm, const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const nlsq::NlsqRunResult& result,
                     const Logger& logger, const FittedDataThreads& threads = {});
// 4 GiB, or after a streaming fit what the fit's own memory estimate left of its budget (the
// run stays within the budget it chose to stream for).
double FittedDataLimit(const nlsq::NlsqRunResult& result);
// The fitted model of an NLSQ result (kNlsq convention).
FittedModel NlsqFittedModel(const nlsq::NlsqRunResult& result);

// DIR/<method>/fitted_data.npz: homodyne's arrays under its names (physics spec §5.2–5.3),
// as numpy.load reads them: for kNlsq phi_angles, c2_exp, c2_theoretical_raw,
// c2_theoretical_scaled, per_angle_scaling, per_angle_scaling_solver, residuals,
// residuals_normalized, t1, t2, q, c2_solver_scaled; for kCmc the same without the solver's
// two. Every array at any output.fitted_data level but none (then no file); the values are
// fitted_data.h5's bit for bit. Collective over `comm` (rank 0's `fitted` and `max_bytes`
// count). Stored members (the default): each rank computes the angles k ≡ rank (mod ranks)
// and writes their slabs in place in the one file (parallel/shared_file.h), holding three N×N
// matrices (none above `max_bytes`: a warning, no file). Deflated members (output.compress_hdf5):
// rank 0 alone, with the members uncompressed on disk beside the archive until it is written.
// Atomic: a failure leaves neither the file nor its temporary.
void WriteFittedDataNpz(const Comm& comm, const std::filesystem::path& path,
                        const config::Config& cfg, const std::string& data_file, FittedModel fitted,
                        const Logger& logger, double max_bytes = kFittedDataMaxBytes);
// Rank 0's model and limit on every rank (the fit's result is complete on rank 0 only, and
// the memory limit is rank 0's: all ranks must take the same decisions).
void BroadcastFittedModel(const Comm& comm, FittedModel& fitted, double& max_bytes);

// The model at the posterior mean (physical parameters and per-angle contrast/offset from
// `parameters`, expanded order) for DIR/cmc/fitted_data.h5.
FittedModel PosteriorMeanModel(const cmc::CmcRunResult& result);

}  // namespace homodyne
