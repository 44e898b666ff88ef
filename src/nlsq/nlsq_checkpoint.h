// NLSQ with checkpoints: the bounded solve in segments of checkpoint_frequency
// iterations, the solver state written after each segment, resume from the newest valid
// checkpoint, and a graceful stop on SIGTERM/SIGUSR1 (checkpoint, exit 75).
//
// Each segment restarts TAO from the saved point with the saved trust radius and the
// saved normal equations; a resumed run therefore repeats exactly the path of the
// uninterrupted one. (With checkpoints off the solve is one segment, as before.)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "config/config.h"
#include "core/log.h"
#include "nlsq/bounded_solver.h"
#include "parallel/comm.h"

namespace homodyne::checkpoint {

struct CheckpointSettings {
  bool enabled = false;  // periodic checkpoints (enable_checkpoints or --checkpoint-dir)
  bool resume = false;   // --resume or resume_from_checkpoint
  std::filesystem::path dir = "./checkpoints";
  int frequency = 10;  // iterations between NLSQ checkpoints
  int keep_last = 3;
  bool stop_on_signal = true;      // SIGTERM/SIGUSR1 → checkpoint at the next safe point
  std::string config_description;  // DescribeConfig(…) of the run

  // optimization.streaming.* with the command-line overrides (non-empty dir_override
  // enables checkpoints in that directory). Validates (bad input names the key).
  static CheckpointSettings FromConfig(const config::Config& cfg, const std::string& dir_override,
                                       bool resume_flag, std::string config_description);
  void Validate() const;
};

// The solver state between two segments.
struct NlsqSolverState {
  std::string tag;  // which solve ("fit", "multistart.<i>", …)
  int iteration = 0;
  std::vector<double> x;
  double trust_radius = 0.0;
  nlsq::NormalEquations equations;  // at x
  std::vector<double> chi2_history;
  int evaluations = 0;
  int objective_evaluations = 0;
  bool finished = false;
  int termination = 0;  // static_cast<int>(Termination) when finished
  std::string message;

  void Store(CheckpointRecord& r, const std::string& prefix) const;
  static NlsqSolverState Load(const CheckpointRecord& r, const std::string& prefix);
};

// Collective over `comm`. Like nlsq::SolveBounded, with checkpoints/resume/signals as
// `settings` say. A stop request writes a checkpoint and throws the agreed
// ErrorKind::kCheckpointed error (exit 75) whose message says how to resume.
nlsq::SolverSummary SolveWithCheckpoints(
    const Comm& comm, nlsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const nlsq::SolverOptions& options, const nlsq::IterationCallback& callback,
    const CheckpointSettings& settings, const std::string& data_description, const Logger& logger);

}  // namespace homodyne::checkpoint
