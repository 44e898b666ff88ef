#include "batch_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "app/fit_phases.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "nlsq/xpcs_fit.h"
#include "outputs/run_report.h"
#include "parallel/collective.h"

namespace homodyne::batch {

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

namespace {

// The key paths an overrides block sets (optimization.nlsq.max_iterations, …).
void CollectKeyPaths(const YAML::Node& node, const std::string& path,
                     std::vector<std::string>& out) {
  if (!node.IsMap()) {
    out.push_back(path);
    return;
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    CollectKeyPaths(kv.second, path.empty() ? key : path + "." + key, out);
  }
}

// The base config is read as homodyne reads a config (unknown keys ignored with a warning),
// but a key the batch file's own overrides set must exist: a typo there is this job's
// instruction, and ignoring it would run another fit than the one asked for.
void RefuseUnknownOverrides(const config::Config& cfg, const PreparedTask& task,
                            const std::string& source) {
  if (cfg.ignored_keys.empty() || task.spec.overrides_yaml.empty()) return;
  std::vector<std::string> set;
  CollectKeyPaths(YAML::Load(task.spec.overrides_yaml), "", set);
  for (const std::string& ignored : cfg.ignored_keys) {
    const std::string key = ignored.substr(0, ignored.find(" ("));
    for (const std::string& path : set) {
      if (path == key || path.rfind(key + ".", 0) == 0) {
        ThrowBadInput(fmt::format("the overrides set an unknown key: {}", ignored), source, key);
      }
    }
  }
}

// The task's config: its prepared text (base config, overrides and q), read on the group.
config::Config ReadTaskConfig(const GroupContext& g, const PreparedTask& task) {
  return RunCollectively(g.group, [&] {
    MaybeInjectFailure("batch_task", g.env.rank());
    config::ReadOptions ro;
    ro.require_data_file = task.spec.data_file.empty();
    const std::string source = fmt::format("{} (task {})", task.spec.config, task.spec.name);
    config::Config cfg = config::ReadConfigString(task.config_text, source, ro);
    RefuseUnknownOverrides(cfg, task, source);
    return cfg;
  });
}

// The group's threads and their cores; no progress lines (many fits share the terminal).
nlsq::NlsqRunOptions TaskNlsqOptions(const GroupContext& g, const PreparedTask& task) {
  nlsq::NlsqRunOptions ro;
  ro.data_file = task.spec.data_file;
  ro.threads = static_cast<int>(g.placement.slots.size());
  ro.print_progress = false;
  if (g.pin) {
    ro.worker_start = [&topology = g.env.topology(), slots = g.placement.slots](int index) {
      PinCurrentThread(topology, slots.at(static_cast<std::size_t>(index)));
    };
    ro.read_ahead_start = [&topology = g.env.topology(), cpuset = g.placement.cpuset] {
      PinCurrentThreadToSet(topology, cpuset);
    };
  }
  for (const auto& p : g.placements) ro.placement.push_back(DescribeRankPlacement(p));
  return ro;
}

cmc::CmcRunOptions TaskCmcOptions(const PreparedTask& task, const config::Config& cfg,
                                  const nlsq::NlsqRunOptions& ro) {
  cmc::CmcRunOptions co;
  co.data_file = task.spec.data_file;
  co.threads = ro.threads;
  co.print_progress = false;
  co.dense_metric = ConfigDenseMetric(cfg);
  return co;
}

void WriteTaskReport(const GroupContext& g, const PreparedTask& task, const config::Config& cfg,
                     const NlsqOutcome& nlsq, const PhaseTimes& phases) {
  RunReportInput report;
  report.command_line = g.command_line + " [task " + task.spec.name + "]";
  report.method = task.spec.method;
  report.exit_code = NlsqExitCode(nlsq);
  report.status = nlsq.converged && nlsq.misfit ? "misfit" : nlsq.result.report.convergence_status;
  report.message = nlsq.converged && nlsq.misfit
                       ? fmt::format("converged to a misfit: {}",
                                     fmt::join(nlsq.result.report.misfit_reasons, "; "))
                       : nlsq.result.summary.message;
  report.config = &cfg;
  report.nlsq = &nlsq.result;
  report.phases = phases;
  report.placement = g.placement;
  report.placements = g.placements;
  RunCollectively(g.group, [&] { WriteRunReport(g.group, task.spec.output_dir, report); });
}

// The row's results (complete on the group root). In a batch a fit that did not converge
// (also max_iter, which a single run accepts) is a failed task: it is listed as such and
// retried by a rerun. Returns whether the task succeeded.
bool RecordResults(TaskRow& row, const PreparedTask& task, const NlsqOutcome& nlsq,
                   const cmc::CmcRunResult* cmc) {
  const auto& fit = nlsq.result.report;
  row.chi2 = fit.chi_squared;
  row.reduced_chi2 = fit.reduced_chi_squared;
  row.convergence = fit.convergence_status;
  for (std::size_t i = 0; i < fit.physical_names.size() && i < fit.physical_values.size(); ++i) {
    row.parameters.emplace_back(fit.physical_names[i], fit.physical_values[i]);
  }
  if (cmc != nullptr) {
    row.cmc_max_rhat = cmc->max_rhat;
    for (const auto& p : cmc->parameters) {
      const auto& names = fit.physical_names;
      if (std::find(names.begin(), names.end(), p.name) != names.end()) {
        row.parameters.emplace_back("cmc_" + p.name, p.mean);
      }
    }
  }
  row.exit_code = NlsqExitCode(nlsq);
  if (row.exit_code != 0) {
    row.status = "failed";
    row.error =
        nlsq.usable && nlsq.converged && nlsq.misfit
            ? fmt::format("NLSQ converged to a misfit: {}", fmt::join(fit.misfit_reasons, "; "))
            : fmt::format("NLSQ did not converge ({} after {} iterations): {}",
                          fit.convergence_status, fit.iterations, nlsq.result.summary.message);
    if (!nlsq.usable && task.spec.method != config::FitMethod::kNlsq) row.error += "; CMC not run";
    return false;
  }
  row.status = "ok";
  return true;
}

// The fit, its outputs and its marker, on the group: the phases of a `homodyne` run
// (fit_phases.h) without warm-start files, plots or the closing summary. CMC runs only
// after a usable NLSQ fit. Agreed errors propagate.
void RunTaskBody(GroupContext& g, const PreparedTask& task, TaskRow& row,
                 std::chrono::steady_clock::time_point t0) {
  const Logger fit_log(g.group.rank(), g.fit_level);
  const config::Config cfg = ReadTaskConfig(g, task);
  const FitScope scope{
      g.group,
      g.env.rank(),
      cfg,
      task.spec.data_file.empty() ? cfg.experimental_data.DataFile() : task.spec.data_file,
      task.spec.output_dir,
      task.spec.method,
      fit_log};
  row.data_file = scope.data_file;
  const nlsq::NlsqRunOptions ro = TaskNlsqOptions(g, task);
  NlsqOutcome nlsq = RunNlsqPhase(scope, ro);
  std::optional<cmc::CmcRunResult> cmc;
  if (task.spec.method != config::FitMethod::kNlsq && nlsq.usable) {
    cmc = RunCmcPhase(scope, TaskCmcOptions(task, cfg, ro), /*warm_start=*/true, nlsq);
  }
  const cmc::CmcRunResult* sampled = cmc ? &*cmc : nullptr;
  const PhaseTimes phases =
      WriteFitOutputs(scope, nlsq, sampled, PlotRequest{}, {ro.threads, ro.worker_start});
  WriteTaskReport(g, task, cfg, nlsq, phases);
  if (!RecordResults(row, task, nlsq, sampled)) return;
  row.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Last: the completion marker.
  RunCollectively(g.group, [&] {
    if (g.group.is_root()) WriteCompletionMarker(task, row);
  });
}

}  // namespace

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
    if (!IsAgreed(e) && g.group.size() > 1) throw;
    row.status = "failed";
    row.exit_code = static_cast<int>(ExitCodeOf(e));
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

}  // namespace homodyne::batch
