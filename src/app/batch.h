// `homodyne batch BATCH.yaml` (also `homodyne --batch BATCH.yaml`): many fits in one MPI
// job. Tasks are grouped by their rank count (from the data size or given); for each such
// class the world is split into rank groups, and each group draws the next task from a
// shared counter (largest data first), runs it on its own sub-communicator and writes the
// task's output directory; a failing task is recorded and the others go on. At the end
// rank 0 writes <output_root>/batch_summary.{json,csv}. A task that finished writes
// batch_task_done.json into its directory last (atomically); a rerun skips it while its
// definition is unchanged. Schema and exit codes: docs/batch.md.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/batch_spec.h"
#include "runtime/environment.h"

namespace homodyne::batch {

// Exit code of a batch in which at least one task failed (the others completed).
inline constexpr int kSomeTasksFailed = 3;

// One line of the summary.
struct TaskRow {
  int index = 0;
  std::string name;
  std::string status;  // ok | failed | skipped (completed by an earlier run)
  int exit_code = 0;   // the task's own exit code (0 ok, 1 internal/not usable, 2 bad input)
  std::string error;
  config::FitMethod method = config::FitMethod::kNlsq;
  std::string data_file;
  std::optional<double> q;
  std::string output_dir;
  int ranks = 0;   // ranks of the group that ran it (0: did not run)
  int group = -1;  // group index (-1: did not run)
  double wall_seconds = 0.0;
  std::optional<double> chi2;
  std::optional<double> reduced_chi2;
  std::string convergence;  // NLSQ convergence status
  std::optional<double> cmc_max_rhat;
  // NLSQ physical parameters (name, value); CMC posterior means as cmc_<name>.
  std::vector<std::pair<std::string, double>> parameters;
};

std::string TaskRowJson(const TaskRow& row);
TaskRow TaskRowFromJson(const std::string& json_text);

// <output_dir>/batch_task_done.json
std::filesystem::path CompletionMarkerPath(const std::string& output_dir);
// Written atomically, after every other output of the task.
void WriteCompletionMarker(const PreparedTask& task, const TaskRow& row);
// The row stored by an earlier run if the marker exists and its fingerprint matches.
std::optional<TaskRow> ReadCompletionMarker(const PreparedTask& task);

// Tasks run in classes of equal group size (largest first); each class splits the
// world into groups of its size.
struct GroupClass {
  int group_size = 0;
  int groups = 0;
  int tasks = 0;
};

struct BatchTotals {
  int world_ranks = 0;
  std::vector<GroupClass> classes;
  double wall_seconds = 0.0;
  int exit_code = 0;
};

// batch_summary.json and batch_summary.csv under `root` (atomic each).
void WriteBatchSummary(const std::filesystem::path& root, const std::string& batch_file,
                       const std::vector<TaskRow>& rows, const BatchTotals& totals);
std::string BatchSummaryCsv(const std::vector<TaskRow>& rows);

// True when `args` (argv[0] first) ask for batch mode: first argument "batch", or a
// --batch option anywhere.
bool IsBatchCommand(const std::vector<std::string>& args);

// Ranks for one task: `forced` (--group-size) if > 0, else the task's group_size, else
// the file's `file_size`, else ⌈data bytes / bytes_per_rank⌉ rounded up to a power of
// two; always within [1, world].
int TaskGroupSize(const PreparedTask& task, int forced, int file_size, double bytes_per_rank,
                  int world);

// The batch run on every rank. Returns 0 (all tasks ok or skipped), kSomeTasksFailed,
// or throws an agreed Error for a bad batch file / command line (exit 2).
int RunBatch(Environment& env, const std::vector<std::string>& args);

}  // namespace homodyne::batch
