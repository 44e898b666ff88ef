// The batch file of `homodyne batch BATCH.yaml` (schema: docs/batch.md): a list of
// tasks, each a base homodyne config plus a data file, a q-ring, a method and config
// overrides, with its own output directory. Parsing is strict: an unknown key, a missing
// required key or a bad value rejects the whole file (bad input, exit 2) naming the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace homodyne::batch {

struct TaskSpec {
  int index = 0;            // position in the file (0-based)
  std::string name;         // unique, [A-Za-z0-9._-]+
  std::string config;       // base config (relative paths: to the batch file's directory)
  std::string data_file;    // overrides the config's data path ("" = the config's)
  std::optional<double> q;  // q-ring: analyzer_parameters.scattering.wavevector_q
  config::FitMethod method = config::FitMethod::kNlsq;
  std::string overrides_yaml;  // defaults.overrides merged with the task's, YAML ("" none)
  std::string output_dir;      // default: <output_root>/<name>
  int group_size = 0;          // ranks for this task; 0 = the batch's rule
};

struct BatchSpec {
  std::string source;       // the batch file
  std::string output_root;  // batch_summary.{json,csv} go here
  int group_size = 0;       // ranks per task group; 0 = from the data sizes
  double group_bytes_per_rank = 2.0 * (1ULL << 30);  // data-file bytes per rank (auto size)
  std::vector<TaskSpec> tasks;
};

// Reads and validates a batch file. Relative paths are resolved against `base_dir`
// (ReadBatchFile: the batch file's directory).
BatchSpec ParseBatchYaml(const std::string& yaml_text, const std::string& source,
                         const std::filesystem::path& base_dir);
BatchSpec ReadBatchFile(const std::string& path);

// A task made ready to run: its config text (base config + overrides + q), or the
// reason why it cannot run (unreadable base config, YAML syntax error).
struct PreparedTask {
  TaskSpec spec;
  std::string config_text;
  std::string error;             // non-empty: the task fails without running
  int exit_code = 0;             // of that failure
  std::uint64_t data_bytes = 0;  // size of the data file (0 if unknown)
  std::string fingerprint;       // hash of everything that defines the task's result
};

PreparedTask PrepareTask(const TaskSpec& spec);

// For the broadcast from rank 0 to every rank.
std::string PreparedTasksToJson(const std::vector<PreparedTask>& tasks);
std::vector<PreparedTask> PreparedTasksFromJson(const std::string& json_text);

}  // namespace homodyne::batch
