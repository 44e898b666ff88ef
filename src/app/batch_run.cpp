// homodyne batch: reading and preparing the tasks, rank groups, dynamic assignment
// (SharedTaskCounter), the summary. One task on its group: batch_task.cpp.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/batch.h"
#include "app/command_line.h"
#include "batch_task.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/placement.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"
#include "parallel/placement_report.h"
#include "parallel/task_counter.h"

namespace homodyne::batch {
namespace {

struct BatchCliOptions {
  std::string batch_file;
  std::string output_root;  // overrides the file's output_root
  int group_size = 0;       // overrides the file's group_size
  int threads = 0;
  int verbosity = 0;
  bool quiet = false;
  std::string command_line;
};

std::optional<int> ParseBatchCommandLine(const Environment& env, std::vector<std::string> args,
                                         BatchCliOptions& opts) {
  for (const auto& a : args) opts.command_line += (opts.command_line.empty() ? "" : " ") + a;
  if (args.size() > 1 && args[1] == "batch") args.erase(args.begin() + 1);
  CLI::App app{"homodyne batch: many fits in one MPI job (docs/batch.md)", "homodyne batch"};
  std::string positional;
  app.add_option("batch_file", positional, "batch YAML file");
  app.add_option("--batch", opts.batch_file, "batch YAML file (same as the positional argument)");
  app.add_option("--output-dir,-o", opts.output_root,
                 "directory of batch_summary.{json,csv} (overrides output_root)");
  app.add_option("--group-size", opts.group_size,
                 "ranks per task for every task (overrides the tasks' and the file's "
                 "group_size; default: per task from its data size)")
      ->check(PositiveCount());
  app.add_option("--threads", opts.threads, "compute threads per rank (default: one per core)")
      ->check(PositiveCount());
  app.add_flag("-v,--verbose", opts.verbosity, "more output (each fit logs at -v)");
  app.add_flag("-q,--quiet", opts.quiet, "errors only");
  app.footer(fmt::format(
      "Exit codes: 0 every task ok or skipped, {} some tasks failed (see batch_summary.json),\n"
      "2 bad batch file or command line, 1 internal error.",
      kSomeTasksFailed));
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
  if (const auto code = TryParseCommandLine(
          app, [&] { app.parse(reversed); }, env.rank() == 0)) {
    return *code;
  }
  if (!positional.empty() && !opts.batch_file.empty() && positional != opts.batch_file) {
    if (env.rank() == 0) std::fprintf(stderr, "error: two batch files given\n");
    return static_cast<int>(ExitCode::kBadInput);
  }
  if (opts.batch_file.empty()) opts.batch_file = positional;
  if (opts.batch_file.empty()) {
    if (env.rank() == 0) std::fprintf(stderr, "error: no batch file (homodyne batch FILE)\n");
    return static_cast<int>(ExitCode::kBadInput);
  }
  return std::nullopt;
}

// Every rank's string, on rank 0 (empty elsewhere).
std::vector<std::string> GatherStrings(const Comm& comm, const std::string& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<std::size_t>(comm.size()));
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm.get());
  std::vector<int> offsets(sizes.size(), 0);
  int total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    offsets[i] = total;
    total += sizes[i];
  }
  std::string all(static_cast<std::size_t>(comm.is_root() ? total : 0), '\0');
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              comm.get());
  std::vector<std::string> out;
  if (comm.is_root()) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      out.push_back(
          all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(sizes[i])));
    }
  }
  return out;
}

}  // namespace

int TaskGroupSize(const PreparedTask& task, int forced, int file_size, double bytes_per_rank,
                  int world) {
  int size = forced > 0 ? forced : task.spec.group_size > 0 ? task.spec.group_size : file_size;
  if (size <= 0) {
    const int need =
        static_cast<int>(std::ceil(static_cast<double>(task.data_bytes) / bytes_per_rank));
    size = 1;
    while (size < need && size < world) size *= 2;
  }
  return std::clamp(size, 1, world);
}

bool IsBatchCommand(const std::vector<std::string>& args) {
  if (args.size() > 1 && args[1] == "batch") return true;
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--batch" || a.rfind("--batch=", 0) == 0;
  });
}

namespace {

// The batch file read and every task prepared on rank 0; every rank gets the result.
struct PreparedBatch {
  BatchSpec spec;  // on rank 0; elsewhere output_root, group_size, group_bytes_per_rank only
  std::vector<PreparedTask> tasks;
};

PreparedBatch PrepareBatch(const Comm& world, const BatchCliOptions& opts) {
  PreparedBatch b;
  std::string tasks_json;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    b.spec = ReadBatchFile(opts.batch_file);
    if (!opts.output_root.empty()) {
      b.spec.output_root = std::filesystem::absolute(opts.output_root).lexically_normal().string();
    }
    // The results folder is made now: a path under a file fails before any task runs.
    try {
      EnsureDirectory(b.spec.output_root);
    } catch (const Error& e) {
      ThrowBadInput(
          fmt::format("cannot create the results folder {}: {}", b.spec.output_root, e.message()),
          opts.batch_file, "output_root");
    }
    std::vector<PreparedTask> prepared;
    for (const auto& t : b.spec.tasks) prepared.push_back(PrepareTask(t));
    tasks_json = PreparedTasksToJson(prepared);
  });
  Broadcast(world, tasks_json);
  Broadcast(world, b.spec.output_root);
  MPI_Bcast(&b.spec.group_size, 1, MPI_INT, 0, world.get());
  MPI_Bcast(&b.spec.group_bytes_per_rank, 1, MPI_DOUBLE, 0, world.get());
  b.tasks = PreparedTasksFromJson(tasks_json);
  return b;
}

// Which tasks run: rank 0 sets aside the tasks that cannot run and those done earlier (their
// rows) and orders the rest largest data first, so that the long tasks do not come last;
// every rank gets the order.
struct RunPlan {
  std::vector<TaskRow> rows;  // rank 0: the tasks that do not run
  std::vector<int> to_run;
};

RunPlan PlanRuns(const Comm& world, const std::vector<PreparedTask>& tasks, const Logger& log) {
  RunPlan plan;
  if (world.is_root()) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const PreparedTask& t = tasks[i];
      if (!t.error.empty()) {
        TaskRow r = RowFor(t);
        r.status = "failed";
        r.exit_code = t.exit_code;
        r.error = t.error;
        log.Warn("[batch] task {} FAILED before it started: {}", t.spec.name, t.error);
        plan.rows.push_back(r);
      } else if (auto done = ReadCompletionMarker(t)) {
        done->status = "skipped";
        log.Info("[batch] task {} skipped: finished earlier ({})", t.spec.name,
                 CompletionMarkerPath(t.spec.output_dir).string());
        plan.rows.push_back(*done);
      } else {
        plan.to_run.push_back(static_cast<int>(i));
      }
    }
    std::stable_sort(plan.to_run.begin(), plan.to_run.end(), [&](int a, int b) {
      return tasks[static_cast<std::size_t>(a)].data_bytes >
             tasks[static_cast<std::size_t>(b)].data_bytes;
    });
  }
  int n_run = static_cast<int>(plan.to_run.size());
  MPI_Bcast(&n_run, 1, MPI_INT, 0, world.get());
  plan.to_run.resize(static_cast<std::size_t>(n_run));
  MPI_Bcast(plan.to_run.data(), n_run, MPI_INT, 0, world.get());
  return plan;
}

// The tasks of one group size, in run order.
struct SizeClass {
  int group_size = 0;
  std::vector<int> order;  // task indices, largest data first
};

// Group size per task; classes of equal size run one after the other, largest first.
std::vector<SizeClass> SizeClasses(const PreparedBatch& b, const std::vector<int>& to_run,
                                   const BatchCliOptions& opts, int world_size) {
  const std::size_t n_run = to_run.size();
  std::vector<int> sizes(n_run);
  for (std::size_t k = 0; k < n_run; ++k) {
    sizes[k] = TaskGroupSize(b.tasks[static_cast<std::size_t>(to_run[k])], opts.group_size,
                             b.spec.group_size, b.spec.group_bytes_per_rank, world_size);
  }
  std::vector<int> class_sizes(sizes.begin(), sizes.end());
  std::sort(class_sizes.begin(), class_sizes.end(), std::greater<>());
  class_sizes.erase(std::unique(class_sizes.begin(), class_sizes.end()), class_sizes.end());
  std::vector<SizeClass> classes;
  for (const int group_size : class_sizes) {
    SizeClass c{group_size, {}};
    for (std::size_t k = 0; k < n_run; ++k) {
      if (sizes[k] == group_size) c.order.push_back(to_run[k]);
    }
    classes.push_back(std::move(c));
  }
  return classes;
}

// One class: the world split into groups of its size, each group taking the next task from
// a shared counter until none is left. Returns this group root's rows.
std::vector<TaskRow> RunClass(Environment& env, const SizeClass& c, const PreparedBatch& b,
                              const BatchCliOptions& opts, const PlacementPlan& placement, bool pin,
                              std::vector<GroupClass>& classes) {
  const Comm& world = env.world();
  Logger& log = env.logger();
  const int groups = std::max(1, world.size() / c.group_size);
  const int color = std::min(world.rank() / c.group_size, groups - 1);
  const Comm group = world.Split(color, world.rank());
  classes.push_back({c.group_size, groups, static_cast<int>(c.order.size())});
  log.Info("[batch] {} task(s) on {} group(s) of {} rank(s)", c.order.size(), groups, c.group_size);
  GroupContext g{env,
                 group,
                 color,
                 placement,
                 GatherPlacements(group, placement),
                 pin,
                 opts.verbosity > 0 ? LogLevel::kInfo : LogLevel::kWarning,
                 Logger(group.rank(), log.level()),
                 opts.command_line};
  SharedTaskCounter counter(world);
  const long long n_class = static_cast<long long>(c.order.size());
  std::vector<TaskRow> mine;
  while (true) {
    long long next = 0;
    if (group.is_root()) next = counter.Next();
    MPI_Bcast(&next, 1, MPI_LONG_LONG, 0, group.get());
    if (next >= n_class) break;
    TaskRow row =
        RunTask(g, b.tasks[static_cast<std::size_t>(c.order[static_cast<std::size_t>(next)])]);
    if (group.is_root()) mine.push_back(std::move(row));
  }
  return mine;
}

// Every group root's rows gathered on rank 0 with the rows of the tasks that did not run;
// rank 0 writes the summary. Returns the batch's exit code on every rank.
int FinishBatch(const Comm& world, const Logger& log, const PreparedBatch& b,
                const BatchCliOptions& opts, std::vector<TaskRow> rows,
                const std::vector<TaskRow>& mine, const std::vector<GroupClass>& classes,
                std::chrono::steady_clock::time_point t0) {
  nlohmann::json mine_json = nlohmann::json::array();
  for (const auto& r : mine) mine_json.push_back(nlohmann::json::parse(TaskRowJson(r)));
  const std::vector<std::string> gathered = GatherStrings(world, mine_json.dump());

  int exit_code = 0;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    for (const auto& s : gathered) {
      for (const auto& j : nlohmann::json::parse(s)) rows.push_back(TaskRowFromJson(j.dump()));
    }
    std::sort(rows.begin(), rows.end(),
              [](const TaskRow& a, const TaskRow& c) { return a.index < c.index; });
    int failed = 0;
    int ok = 0;
    int skipped = 0;
    for (const auto& r : rows) {
      failed += r.status == "failed" ? 1 : 0;
      ok += r.status == "ok" ? 1 : 0;
      skipped += r.status == "skipped" ? 1 : 0;
    }
    exit_code = failed > 0 ? kSomeTasksFailed : 0;
    BatchTotals totals;
    totals.world_ranks = world.size();
    totals.classes = classes;
    totals.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    totals.exit_code = exit_code;
    WriteBatchSummary(b.spec.output_root, opts.batch_file, rows, totals);
    log.Info(
        "[batch] done in {:.1f} s: {} ok, {} skipped, {} failed; summary in {}/batch_summary.json",
        totals.wall_seconds, ok, skipped, failed, b.spec.output_root);
  });
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, world.get());
  return exit_code;
}

}  // namespace

int RunBatch(Environment& env, const std::vector<std::string>& args) {
  BatchCliOptions opts;
  if (auto code = ParseBatchCommandLine(env, args, opts)) return *code;
  Logger& log = env.logger();
  log.set_level(LogLevelFromVerbosity(0, opts.quiet));
  const Comm& world = env.world();
  const auto t0 = std::chrono::steady_clock::now();

  const PreparedBatch batch = PrepareBatch(world, opts);
  RunPlan plan = PlanRuns(world, batch.tasks, log);
  log.Info("[batch] {}: {} task(s), {} to run on {} rank(s)", opts.batch_file, batch.tasks.size(),
           plan.to_run.size(), world.size());
  const std::vector<SizeClass> size_classes = SizeClasses(batch, plan.to_run, opts, world.size());

  // Threads and placement as for a single fit (the pinning is decided over the world).
  const PlacementPlan placement = PlanThreads(env.topology(), opts.threads);
  const std::vector<RankPlacement> world_placements = GatherPlacements(world, placement);
  const bool pin = !RanksShareCores(world_placements);
  if (pin) PinCurrentThread(env.topology(), placement.slots.front());

  std::vector<TaskRow> mine;
  std::vector<GroupClass> classes;
  for (const SizeClass& c : size_classes) {
    for (TaskRow& row : RunClass(env, c, batch, opts, placement, pin, classes)) {
      mine.push_back(std::move(row));
    }
  }
  return FinishBatch(world, log, batch, opts, std::move(plan.rows), mine, classes, t0);
}

}  // namespace homodyne::batch
