#include "batch_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "app/fitted_data.h"
#include "app/run_report.h"
#include "cmc/cmc_fit.h"
#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "nlsq/multistart.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/broadcast.h"
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

// The fit, its outputs and its marker, on the group. Agreed errors propagate.
namespace {

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
  if (task.spec.method != config::FitMethod::kNlsq && usable) {
    for (auto* v : {&result.expanded, &result.expanded_uncertainty, &result.report.physical_values,
                    &result.report.physical_uncertainties}) {
      Broadcast(group, *v);
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
    if (task.spec.method != config::FitMethod::kCmc) {
      nlsq::WriteNlsqResultFiles(out, result.report);
      if (use_multistart) {
        WriteFileAtomically(out / "nlsq" / "multistart.json", multistart.ToJson());
      }
    }
    if (cmc_result) cmc::WriteCmcResultFiles(task.spec.output_dir, *cmc_result);
  });
  {
    // fitted_data.h5: the task's ranks together (collective).
    PhaseTimes::Scope t(phases, "write_outputs");
    const std::filesystem::path out(task.spec.output_dir);
    if (task.spec.method != config::FitMethod::kCmc) {
      WriteFittedData(group, out / "nlsq" / "fitted_data.h5", cfg, data_file, result, fit_log,
                      FittedDataThreads{ro.threads, ro.worker_start});
    }
    if (cmc_result) {
      WriteFittedData(group, out / "cmc" / "fitted_data.h5", cfg, data_file,
                      PosteriorMeanModel(*cmc_result), fit_log, kFittedDataMaxBytes,
                      FittedDataThreads{ro.threads, ro.worker_start});
    }
  }
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
    if (!usable && task.spec.method != config::FitMethod::kNlsq) row.error += "; CMC not run";
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

}  // namespace homodyne::batch
