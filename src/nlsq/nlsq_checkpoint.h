// NLSQ with checkpoints: the solver's complete state (lsq::SolverState) written every
// checkpoint_frequency accepted steps and when the solve ends, resume from the newest valid
// checkpoint, and a graceful stop on SIGTERM/SIGUSR1 (checkpoint, exit 75).
//
// The solve is one uninterrupted Levenberg–Marquardt iteration whether checkpoints are on or
// off; writing a checkpoint only copies the state out. A resumed run continues from the same
// state (damping, scaling, equations at x), so it takes the same steps bit for bit.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "config/config.h"
#include "core/log.h"
#include "lsq/bounded_solver.h"
#include "parallel/comm.h"

namespace homodyne::checkpoint {

struct CheckpointSettings {
  bool enabled = false;  // periodic checkpoints (enable_checkpoints or --checkpoint-dir)
  bool resume = false;   // --resume or resume_from_checkpoint
  std::filesystem::path dir = "./checkpoints";
  int frequency = 10;  // iterations between NLSQ checkpoints
  int keep_last = 3;
  bool stop_on_signal = true;       // SIGTERM/SIGUSR1 → checkpoint at the next safe point
  bool fatal_write_errors = false;  // a failed periodic checkpoint ends the run
  std::string config_description;   // DescribeConfig(…) of the run

  // optimization.streaming.* with the command-line overrides (non-empty dir_override
  // enables checkpoints in that directory, a relative one taken from the working
  // directory as any command-line path). A relative checkpoint_dir of the config is taken
  // inside `output_dir` when that is given: every template says ./checkpoints, and a
  // run's checkpoints belong with its results, not in whatever folder the job started in.
  // Validates (bad input names the key).
  static CheckpointSettings FromConfig(const config::Config& cfg, const std::string& dir_override,
                                       bool resume_flag, std::string config_description,
                                       const std::filesystem::path& output_dir = {});
  void Validate() const;
};

// The same settings for one solve of a fit with several (restarts, refinements): its
// checkpoints go to the subfolder `name`, so a resume continues each solve where it was.
inline std::optional<CheckpointSettings> InSubfolder(const std::optional<CheckpointSettings>& s,
                                                     const std::string& name) {
  std::optional<CheckpointSettings> sub = s;
  if (sub) sub->dir /= name;
  return sub;
}

// The solver state at an iteration boundary, as a checkpoint holds it.
struct NlsqSolverState {
  std::string tag;  // which solve ("fit", …)
  lsq::SolverState solver;
  bool finished = false;  // written after the solve ended

  void Store(CheckpointRecord& r, const std::string& prefix) const;
  static NlsqSolverState Load(const CheckpointRecord& r, const std::string& prefix);
};

// Collective over `comm`. Like lsq::SolveBounded, with checkpoints/resume/signals as
// `settings` say (checkpoints need the lm method: bad input otherwise). A stop request writes a
// checkpoint and throws the agreed ErrorKind::kCheckpointed error (exit 75) whose message says how
// to resume.
lsq::SolverSummary SolveWithCheckpoints(
    const Comm& comm, lsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const lsq::SolverOptions& options, const lsq::IterationCallback& callback,
    const CheckpointSettings& settings, const std::string& data_description, const Logger& logger);

}  // namespace homodyne::checkpoint
