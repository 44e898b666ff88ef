// Options of the `homodyne` command and their parsing (private to src/app).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/plots.h"
#include "config/config.h"
#include "runtime/environment.h"

namespace homodyne {

struct HomodyneCliOptions {
  bool show_version = false;
  int verbosity = 0;
  bool quiet = false;
  std::string config = "./homodyne_config.yaml";
  bool config_given = false;
  bool strict = false;  // unknown config keys are errors, not warnings
  config::FitMethod method = config::FitMethod::kNlsq;
  std::string output_dir = "./homodyne_results";
  bool output_dir_given = false;  // --output-dir: wins over output.directory
  std::string data_file;
  bool static_mode = false;
  bool laminar_flow = false;
  int threads = 0;  // 0: the autotune cache, else one per core of the rank's cpuset
  bool no_autotune_cache = false;
  std::map<std::string, double> initial;
  std::string command_line;
  // CMC
  int n_samples = -1;
  int n_warmup = -1;
  int n_chains = -1;
  int cmc_num_shards = -1;
  bool no_nlsq_warmstart = false;
  bool dense_mass_matrix = false;
  std::string nlsq_result;
  // Memory (docs/streaming.md)
  std::string strategy = "auto";
  std::string memory_limit;
  bool dry_run = false;
  PlotRequest plots;
  // Checkpoints (docs/checkpoints.md)
  bool resume = false;
  std::string checkpoint_dir;
  // homodyne's and xpcsjax's flags (docs/migrating.md): config overrides, and one-line
  // notes for flags that mean nothing here.
  std::optional<int> max_iterations;    // optimization.nlsq.max_iterations
  std::optional<double> tolerance;      // optimization.nlsq.tolerance
  std::optional<bool> multistart;       // optimization.nlsq.multi_start.enable
  std::optional<int> multistart_n;      // optimization.nlsq.multi_start.n_starts
  std::string output_format = "json";   // homodyne_results.<format>
  bool require_two_component = false;   // xpcsjax's --mode two_component
  std::vector<double> phi;              // xpcsjax's --phi: the data's angles to fit (degrees)
  std::vector<std::string> flag_notes;  // printed once by rank 0
};

// Parses on every rank (the result is identical everywhere); rank 0 prints help and
// parse errors. Returns an exit code when the program should stop right away.
std::optional<int> ParseHomodyneOptions(Environment& env, const std::vector<std::string>& args,
                                        HomodyneCliOptions& opts);

}  // namespace homodyne
