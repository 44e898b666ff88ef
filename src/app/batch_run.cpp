// homodyne batch: scheduling of tasks over rank groups, one task on one group, summary.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "homodyne/app/batch.h"
#include "homodyne/app/fitted_data.h"
#include "homodyne/app/run_report.h"
#include "homodyne/atomic_file.h"
#include "homodyne/cmc/cmc_fit.h"
#include "homodyne/config/config_reader.h"
#include "homodyne/error.h"
#include "homodyne/fault_injection.h"
#include "homodyne/nlsq/multistart.h"
#include "homodyne/nlsq/xpcs_fit.h"
#include "homodyne/parallel/collective.h"
#include "homodyne/parallel/task_counter.h"
#include "homodyne/placement.h"
#include "homodyne/placement_report.h"

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
                 "ranks per task group (default: the file's group_size, else from the data "
                 "sizes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", opts.threads, "compute threads per rank (default: one per core)")
      ->check(CLI::PositiveNumber);
  app.add_flag("-v,--verbose", opts.verbosity, "more output (each fit logs at -v)");
  app.add_flag("-q,--quiet", opts.quiet, "errors only");
  app.footer(fmt::format(
      "Exit codes: 0 every task ok or skipped, {} some tasks failed (see batch_summary.json),\n"
      "2 bad batch file or command line, 1 internal error.",
      kSomeTasksFailed));
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    if (env.rank() == 0) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (env.rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ExitCode::kBadInput);
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

void BroadcastString(const Comm& comm, std::string& s) {
  long long n = static_cast<long long>(s.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm.get());
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm.get());
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

TaskRow RowFor(const PreparedTask& t) {
  TaskRow r;
  r.index = t.spec.index;
  r.name = t.spec.name;
  r.method = t.spec.method;
  r.data_file = t.spec.data_file;
  r.q = t.spec.q;
  r.output_dir = t.spec.output_dir;
  return r;
}

struct GroupContext {
  const Environment& env;
  const Comm& group;
  int group_index = 0;
  PlacementPlan placement;
  std::vector<RankPlacement> placements;
  bool pin = false;
  LogLevel fit_level = LogLevel::kWarning;
  Logger log;  // batch-level lines (printed by the group roots)
  std::string command_line;
};

// The fit, its outputs and its marker, on the group. Agreed errors propagate.
void RunTaskBody(GroupContext& g, const PreparedTask& task, TaskRow& row,
                 std::chrono::steady_clock::time_point t0) {
  const Comm& group = g.group;
  const Logger fit_log(group.rank(), g.fit_level);
  const config::Config cfg = RunCollectively(group, [&] {
    MaybeInjectFailure("batch_task", g.env.rank());
    config::ReadOptions ro;
    ro.require_data_file = task.spec.data_file.empty();
    return config::ReadConfigString(
        task.config_text, fmt::format("{} (task {})", task.spec.config, task.spec.name), ro);
  });
  const std::string data_file =
      task.spec.data_file.empty() ? cfg.experimental_data.DataFile() : task.spec.data_file;
  row.data_file = data_file;

  nlsq::NlsqRunOptions ro;
  ro.data_file = task.spec.data_file;
  ro.threads = static_cast<int>(g.placement.slots.size());
  ro.print_progress = false;
  if (g.pin) {
    ro.worker_start = [&topology = g.env.topology(), slots = g.placement.slots](int index) {
      PinCurrentThread(topology, slots.at(static_cast<std::size_t>(index)));
    };
  }
  for (const auto& p : g.placements) ro.placement.push_back(DescribeRankPlacement(p));
  nlsq::NlsqRunResult result;
  nlsq::MultiStartSummary multistart;
  const bool use_multistart = cfg.optimization.nlsq.multi_start.enable;
  if (use_multistart) {
    const auto ms = RunCollectively(group, [&] {
      return nlsq::MultiStartOptions::FromConfig(cfg.optimization.nlsq.multi_start);
    });
    result = nlsq::RunMultiStartFit(group, cfg, ro, ms, fit_log, &multistart);
  } else {
    result = nlsq::RunNlsqFit(group, cfg, ro, fit_log);
  }
  int usable = group.is_root() && result.summary.IsUsable() ? 1 : 0;
  MPI_Bcast(&usable, 1, MPI_INT, 0, group.get());

  std::optional<cmc::CmcRunResult> cmc_result;
  if (task.spec.method != "nlsq" && usable) {
    for (auto* v : {&result.expanded, &result.expanded_uncertainty, &result.report.physical_values,
                    &result.report.physical_uncertainties}) {
      int n = static_cast<int>(v->size());
      MPI_Bcast(&n, 1, MPI_INT, 0, group.get());
      v->resize(static_cast<std::size_t>(n));
      MPI_Bcast(v->data(), n, MPI_DOUBLE, 0, group.get());
    }
    cmc::CmcRunOptions co;
    co.data_file = task.spec.data_file;
    co.warm_start = &result;
    co.threads = ro.threads;
    co.print_progress = false;
    co.dense_metric = !config::ConfigHasValue(cfg, "optimization.mcmc.dense_mass_matrix") ||
                      config::ConfigBool(cfg, "optimization.mcmc.dense_mass_matrix");
    PhaseTimes::Scope t(result.phases, "cmc");
    cmc_result = cmc::RunCmcFit(group, cfg, co, fit_log);
  }

  PhaseTimes phases = result.phases;
  RunCollectively(group, [&] {
    PhaseTimes::Scope t(phases, "write_outputs");
    MaybeInjectFailure("output", g.env.rank());
    if (!group.is_root()) return;
    const std::filesystem::path out(task.spec.output_dir);
    if (task.spec.method != "cmc") {
      nlsq::WriteNlsqResultFiles(out, result.report);
      if (use_multistart) {
        WriteFileAtomically(out / "nlsq" / "multistart.json", multistart.ToJson());
      }
      WriteFittedData(out / "nlsq" / "fitted_data.h5", cfg, data_file, result, fit_log);
    }
    if (cmc_result) cmc::WriteCmcResultFiles(task.spec.output_dir, *cmc_result);
  });
  RunReportInput report;
  report.command_line = g.command_line + " [task " + task.spec.name + "]";
  report.method = task.spec.method;
  report.exit_code = usable ? 0 : static_cast<int>(ExitCode::kInternalError);
  report.status = result.report.convergence_status;
  report.message = result.summary.message;
  report.config = &cfg;
  report.nlsq = &result;
  report.phases = phases;
  report.placement = g.placement;
  report.placements = g.placements;
  RunCollectively(group, [&] { WriteRunReport(group, task.spec.output_dir, report); });

  // The row (complete on the group root).
  row.chi2 = result.report.chi_squared;
  row.reduced_chi2 = result.report.reduced_chi_squared;
  row.convergence = result.report.convergence_status;
  for (std::size_t i = 0;
       i < result.report.physical_names.size() && i < result.report.physical_values.size(); ++i) {
    row.parameters.emplace_back(result.report.physical_names[i], result.report.physical_values[i]);
  }
  if (cmc_result) {
    row.cmc_max_rhat = cmc_result->max_rhat;
    for (const auto& p : cmc_result->parameters) {
      const auto& names = result.report.physical_names;
      if (std::find(names.begin(), names.end(), p.name) != names.end()) {
        row.parameters.emplace_back("cmc_" + p.name, p.mean);
      }
    }
  }
  // In a batch a fit that did not converge (also max_iter, which a single run accepts)
  // is a failed task: it is listed as such and retried by a rerun.
  if (!usable || result.report.convergence_status != "converged") {
    row.status = "failed";
    row.exit_code = static_cast<int>(ExitCode::kInternalError);
    row.error = fmt::format("NLSQ did not converge ({} after {} iterations): {}",
                            result.report.convergence_status, result.report.iterations,
                            result.summary.message);
    if (!usable && task.spec.method != "nlsq") row.error += "; CMC not run";
    return;
  }
  row.status = "ok";
  row.exit_code = 0;
  row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Last: the completion marker.
  RunCollectively(group, [&] {
    if (group.is_root()) WriteCompletionMarker(task, row);
  });
}

TaskRow RunTask(GroupContext& g, const PreparedTask& task) {
  TaskRow row = RowFor(task);
  row.ranks = g.group.size();
  row.group = g.group_index;
  g.log.Info("[batch] task {} started on group {} ({} rank(s))", task.spec.name, g.group_index,
             g.group.size());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    RunTaskBody(g, task, row, t0);
  } catch (const Error& e) {
    // A rank-local error in a group of several ranks leaves the others in a collective:
    // only the whole job can end that (RunMpiApp aborts it).
    if (!e.agreed() && g.group.size() > 1) throw;
    row.status = "failed";
    row.exit_code = static_cast<int>(e.exit_code());
    row.error = e.what();
  } catch (const std::exception& e) {
    if (g.group.size() > 1) throw;
    row.status = "failed";
    row.exit_code = static_cast<int>(ExitCode::kInternalError);
    row.error = e.what();
  }
  row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (row.status == "ok") {
    g.log.Info("[batch] task {} ok in {:.1f} s: chi2 {:.6g}, reduced {:.4g} ({})", row.name,
               row.wall_seconds, row.chi2.value_or(NAN), row.reduced_chi2.value_or(NAN),
               row.convergence);
  } else if (g.group.is_root()) {
    g.log.Warn("[batch] task {} FAILED (exit {}) after {:.1f} s: {}", row.name, row.exit_code,
               row.wall_seconds, row.error);
  }
  return row;
}

int AutoGroupSize(const std::vector<PreparedTask>& tasks, const std::vector<int>& to_run,
                  double bytes_per_rank, int world) {
  double largest = 0.0;
  for (int i : to_run) {
    largest = std::max(largest, static_cast<double>(tasks[static_cast<std::size_t>(i)].data_bytes));
  }
  const int need = static_cast<int>(std::ceil(largest / bytes_per_rank));
  return std::clamp(need, 1, world);
}

}  // namespace

bool IsBatchCommand(const std::vector<std::string>& args) {
  if (args.size() > 1 && args[1] == "batch") return true;
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--batch" || a.rfind("--batch=", 0) == 0;
  });
}

int RunBatch(Environment& env, const std::vector<std::string>& args) {
  BatchCliOptions opts;
  if (auto code = ParseBatchCommandLine(env, args, opts)) return *code;
  Logger& log = env.logger();
  log.set_level(LogLevelFromVerbosity(0, opts.quiet));
  const Comm& world = env.world();
  const auto t0 = std::chrono::steady_clock::now();

  // Rank 0 reads the batch file and prepares every task; everybody gets the result.
  BatchSpec spec;
  std::string tasks_json;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    spec = ReadBatchFile(opts.batch_file);
    if (!opts.output_root.empty()) {
      spec.output_root = std::filesystem::absolute(opts.output_root).lexically_normal().string();
    }
    if (opts.group_size > 0) spec.group_size = opts.group_size;
    std::vector<PreparedTask> prepared;
    for (const auto& t : spec.tasks) prepared.push_back(PrepareTask(t));
    tasks_json = PreparedTasksToJson(prepared);
  });
  BroadcastString(world, tasks_json);
  BroadcastString(world, spec.output_root);
  MPI_Bcast(&spec.group_size, 1, MPI_INT, 0, world.get());
  MPI_Bcast(&spec.group_bytes_per_rank, 1, MPI_DOUBLE, 0, world.get());
  const std::vector<PreparedTask> tasks = PreparedTasksFromJson(tasks_json);

  // Rank 0: tasks that cannot run, tasks already done, and the order of the rest
  // (largest data first, so that the long tasks do not come last).
  std::vector<TaskRow> rows;  // rank 0
  std::vector<int> to_run;
  if (world.is_root()) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const PreparedTask& t = tasks[i];
      if (!t.error.empty()) {
        TaskRow r = RowFor(t);
        r.status = "failed";
        r.exit_code = t.exit_code;
        r.error = t.error;
        log.Warn("[batch] task {} FAILED before it started: {}", t.spec.name, t.error);
        rows.push_back(r);
      } else if (auto done = ReadCompletionMarker(t)) {
        done->status = "skipped";
        log.Info("[batch] task {} skipped: finished earlier ({})", t.spec.name,
                 CompletionMarkerPath(t.spec.output_dir).string());
        rows.push_back(*done);
      } else {
        to_run.push_back(static_cast<int>(i));
      }
    }
    std::stable_sort(to_run.begin(), to_run.end(), [&](int a, int b) {
      return tasks[static_cast<std::size_t>(a)].data_bytes >
             tasks[static_cast<std::size_t>(b)].data_bytes;
    });
  }
  int n_run = static_cast<int>(to_run.size());
  MPI_Bcast(&n_run, 1, MPI_INT, 0, world.get());
  to_run.resize(static_cast<std::size_t>(n_run));
  MPI_Bcast(to_run.data(), n_run, MPI_INT, 0, world.get());

  const int group_size =
      spec.group_size > 0 ? std::min(spec.group_size, world.size())
                          : AutoGroupSize(tasks, to_run, spec.group_bytes_per_rank, world.size());
  const int groups = std::max(1, world.size() / group_size);
  const int color = std::min(world.rank() / group_size, groups - 1);
  const Comm group = world.Split(color, world.rank());
  log.Info("[batch] {}: {} task(s), {} to run on {} group(s) of {} rank(s)", opts.batch_file,
           tasks.size(), n_run, groups, group_size);

  // Threads and placement as for a single fit (the pinning is decided over the world).
  const PlacementPlan placement = PlanThreads(env.topology(), opts.threads);
  const std::vector<RankPlacement> world_placements = GatherPlacements(world, placement);
  GroupContext g{env,
                 group,
                 color,
                 placement,
                 GatherPlacements(group, placement),
                 !RanksShareCores(world_placements),
                 opts.verbosity > 0 ? LogLevel::kInfo : LogLevel::kWarning,
                 Logger(group.rank(), log.level()),
                 opts.command_line};
  if (g.pin) PinCurrentThread(env.topology(), placement.slots.front());

  std::vector<TaskRow> mine;
  {
    SharedTaskCounter counter(world);
    while (true) {
      long long next = 0;
      if (group.is_root()) next = counter.Next();
      MPI_Bcast(&next, 1, MPI_LONG_LONG, 0, group.get());
      if (next >= n_run) break;
      TaskRow row =
          RunTask(g, tasks[static_cast<std::size_t>(to_run[static_cast<std::size_t>(next)])]);
      if (group.is_root()) mine.push_back(std::move(row));
    }
  }
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
              [](const TaskRow& a, const TaskRow& b) { return a.index < b.index; });
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
    totals.groups = groups;
    totals.group_size = group_size;
    totals.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    totals.exit_code = exit_code;
    WriteBatchSummary(spec.output_root, opts.batch_file, rows, totals);
    log.Info(
        "[batch] done in {:.1f} s: {} ok, {} skipped, {} failed; summary in {}/batch_summary.json",
        totals.wall_seconds, ok, skipped, failed, spec.output_root);
  });
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, world.get());
  return exit_code;
}

}  // namespace homodyne::batch
