#include "app/fit_phases.h"

#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "core/output_paths.h"
#include "outputs/cmc_result_files.h"
#include "outputs/nlsq_result_files.h"
#include "outputs/xpcsjax_result_files.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"

namespace homodyne {

NlsqOutcome RunNlsqPhase(const FitScope& scope, const nlsq::NlsqRunOptions& options) {
  NlsqOutcome out;
  const auto& multi_start = scope.cfg.optimization.nlsq.multi_start;
  // CMA-ES (when enabled and selected) has priority over multistart, as in homodyne.
  const auto global = RunCollectively(scope.comm, [&] {
    return global::GlobalStageOptions::FromConfig(scope.cfg.optimization.nlsq.cmaes);
  });
  const global::GlobalSelection selection = global::SelectGlobalStage(scope.cfg, global);
  if (global.enable) {
    std::string note;
    if (selection.run && multi_start.enable) {
      note = " (multi_start is enabled too; CMA-ES has priority)";
    } else if (!selection.run) {
      note = multi_start.enable ? "; multistart instead" : "; local fit instead";
    }
    scope.log.Info("CMA-ES: {}: {}{}", selection.run ? "selected" : "not selected",
                   selection.reason, note);
  }
  if (multi_start.enable && !selection.run) {
    const auto ms = RunCollectively(
        scope.comm, [&] { return global::MultiStartOptions::FromConfig(multi_start); });
    out.multistart.emplace();
    out.result =
        global::RunMultiStartFit(scope.comm, scope.cfg, options, ms, scope.log, &*out.multistart);
  } else {
    out.result = global::RunNlsqPipeline(scope.comm, scope.cfg, options, scope.log);
  }
  // Multistart groups hold different solves; the root holds the answer.
  const bool root = scope.comm.is_root();
  int verdict[3] = {root && out.result.summary.IsUsable() ? 1 : 0,
                    root && out.result.summary.termination == lsq::Termination::kConverged ? 1 : 0,
                    root && !out.result.report.misfit_reasons.empty() ? 1 : 0};
  MPI_Bcast(verdict, 3, MPI_INT, 0, scope.comm.get());
  out.usable = verdict[0] != 0;
  out.converged = verdict[1] != 0;
  out.misfit = verdict[2] != 0;
  return out;
}

int NlsqExitCode(const NlsqOutcome& nlsq) {
  if (!nlsq.usable) return static_cast<int>(ExitCode::kInternalError);
  if (!nlsq.converged) return static_cast<int>(ExitCode::kNotConverged);
  return nlsq.misfit ? static_cast<int>(ExitCode::kMisfit) : static_cast<int>(ExitCode::kSuccess);
}

cmc::CmcRunResult RunCmcPhase(const FitScope& scope, cmc::CmcRunOptions options, bool warm_start,
                              NlsqOutcome& nlsq) {
  nlsq::NlsqRunResult& r = nlsq.result;
  for (auto* v : {&r.expanded, &r.expanded_uncertainty, &r.report.physical_values,
                  &r.report.physical_uncertainties}) {
    Broadcast(scope.comm, *v);
  }
  options.warm_start = warm_start ? &r : nullptr;
  PhaseTimes::Scope t(r.phases, "cmc");
  cmc::CmcRunResult out = cmc::RunCmcFit(scope.comm, scope.cfg, options, scope.log);
  if (warm_start) {
    // The chains start at the NLSQ answer and do not cross the barrier to a separate, equally
    // good minimum the NLSQ run found (global/pipeline_stages.h, the phi0 check): the posterior
    // is that of the answer's mode only, and its outputs say so. The root's record, on every
    // rank alike.
    std::string notes;
    for (const nlsq::EquivalentMinimum& m : r.report.degeneracy.equivalent_minima) {
      notes += fmt::format(
          "{}the NLSQ answer has a second, equally good {} at {:.6g} (the answer's {:.6g}); the "
          "chains start at the answer and do not cross to it: this posterior describes {} near "
          "{:.6g} only",
          notes.empty() ? "" : "\n", m.parameter, m.value, m.answer_value, m.parameter,
          m.answer_value);
    }
    Broadcast(scope.comm, notes);
    for (std::size_t a = 0; !notes.empty() && a != std::string::npos;) {
      const std::size_t b = notes.find('\n', a);
      const std::string line = notes.substr(a, b == std::string::npos ? b : b - a);
      scope.log.Warn("CMC: {}", line);
      out.warnings.push_back(line);
      a = b == std::string::npos ? b : b + 1;
    }
  }
  return out;
}

namespace {

// Results are written into a hidden staging folder inside the output directory and moved
// to their names only when every file is complete, so a failure (a full disk on one rank,
// a killed job) never leaves a set of results in which some files are this run's and
// some are missing or a previous run's. A staging folder left by a killed run is removed
// by the next one.
constexpr const char* kStagingFolder = ".homodyne-staging";

void RemoveStaging(const std::filesystem::path& staging) {
  std::error_code ec;
  std::filesystem::remove_all(staging, ec);  // best effort: the error being reported matters
}

// xpcsjax's top-level files describe the NLSQ result in nlsq/ beside them: a run that writes
// NLSQ results first removes an earlier run's set (this run's own, if any, replaces it), so
// that the folder never holds one run's nlsq_result.json beside another's parameters.json,
// nor an earlier run's set beside this run's nlsq/. Returns the names removed that this run
// does not write again.
std::vector<std::string> RemoveEarlierXpcsjaxFiles(const std::filesystem::path& staging,
                                                   const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::vector<std::string> gone;
  for (const std::string& name : outputs::XpcsjaxTopLevelFiles()) {
    std::error_code ec;
    if (!fs::is_regular_file(out / name, ec)) continue;
    if (!fs::remove(out / name, ec) || ec) {
      ThrowIoError(fmt::format("could not remove an earlier run's {} (it would be mixed with "
                               "this run's results): {}",
                               name, ec.message()),
                   (out / name).string());
    }
    if (!fs::exists(staging / name, ec)) gone.push_back(name);
  }
  return gone;
}

// Moves every file of `staging` to the same relative place under `out` (a rename on the
// same file system: each file appears whole), then removes the staging folder. xpcsjax's
// top-level set goes last, nlsq_result.json the very last (XpcsjaxTopLevelFiles).
void CommitStaging(const std::filesystem::path& staging, const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(staging)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  const auto& last = outputs::XpcsjaxTopLevelFiles();
  const auto rank = [&](const fs::path& f) -> std::size_t {
    if (f.parent_path() != staging) return 0;
    const auto it = std::find(last.begin(), last.end(), f.filename().string());
    return it == last.end() ? 0 : 1 + static_cast<std::size_t>(it - last.begin());
  };
  std::stable_sort(files.begin(), files.end(),
                   [&](const fs::path& a, const fs::path& b) { return rank(a) < rank(b); });
  for (const fs::path& f : files) {
    const fs::path target = out / fs::relative(f, staging);
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    fs::rename(f, target, ec);
    if (ec) {
      ThrowIoError(fmt::format("could not move the finished result into place: {}", ec.message()),
                   target.string());
    }
  }
  RemoveStaging(staging);
}

}  // namespace

PhaseTimes WriteFitOutputs(const FitScope& scope, const NlsqOutcome& nlsq,
                           const cmc::CmcRunResult* cmc, const PlotRequest& plots,
                           const FittedDataThreads& threads) {
  const std::filesystem::path& final_dir = scope.output_dir;
  const std::filesystem::path out = final_dir / kStagingFolder;
  const bool write_nlsq = scope.method != config::FitMethod::kCmc;
  PhaseTimes phases = nlsq.result.phases;
  std::optional<FaultScope> fault;  // the whole phase is the fault tests' unit of work
  try {
    RunCollectively(scope.comm, [&] {
      PhaseTimes::Scope t(phases, "write_outputs");
      fault.emplace("output", scope.world_rank);
      if (!scope.comm.is_root()) return;
      RemoveStaging(out);
      if (write_nlsq) {
        outputs::WriteNlsqResultFiles(out, nlsq.result.report);
        if (scope.cfg.output_layout == config::OutputLayout::kXpcsjax) {
          const nlsq::FitReport& r = nlsq.result.report;
          outputs::WriteXpcsjaxResultFiles(
              out, r,
              {scope.cfg.source,
               scope.cfg.analysis_mode_name.empty() ? r.analysis_mode
                                                    : scope.cfg.analysis_mode_name,
               static_cast<int>(r.phi_deg.size()), r.n_time_points + 1});
        }
        if (nlsq.multistart) {
          WriteFileAtomically(OutputFilePath(out, "nlsq/multistart.json"),
                              nlsq.multistart->ToJson());
        }
      }
      if (cmc != nullptr) outputs::WriteCmcResultFiles(out.string(), *cmc);
      // homodyne's summary of the run's method; with both methods, the NLSQ one.
      if (cmc != nullptr && !write_nlsq) outputs::WriteCmcHomodyneResults(out, *cmc);
      WritePlotInputs(out, plots, scope.cfg, scope.data_file, scope.log);
    });
    const double nlsq_limit = write_nlsq ? FittedDataLimit(nlsq.result) : kFittedDataMaxBytes;
    {
      // fitted_data.h5: collective, each rank its share of the angles.
      PhaseTimes::Scope t(phases, "write_fitted_data");
      if (write_nlsq) {
        WriteFittedData(scope.comm, OutputFilePath(out, "nlsq/fitted_data.h5"), scope.cfg,
                        scope.data_file, nlsq.result, scope.log, threads);
      }
      if (cmc != nullptr) {
        WriteFittedData(scope.comm, out / "cmc" / "fitted_data.h5", scope.cfg, scope.data_file,
                        PosteriorMeanModel(*cmc), scope.log, kFittedDataMaxBytes, threads);
      }
    }
    {
      // fitted_data.npz (homodyne's file): collective, each rank its share of the angles.
      PhaseTimes::Scope t(phases, "write_fitted_data_npz");
      if (write_nlsq) {
        WriteFittedDataNpz(scope.comm, OutputFilePath(out, "nlsq/fitted_data.npz"), scope.cfg,
                           scope.data_file, NlsqFittedModel(nlsq.result), scope.log, nlsq_limit);
      }
      if (cmc != nullptr) {
        WriteFittedDataNpz(scope.comm, out / "cmc" / "fitted_data.npz", scope.cfg, scope.data_file,
                           PosteriorMeanModel(*cmc), scope.log, kFittedDataMaxBytes);
      }
    }
    RunCollectively(scope.comm, [&] {
      if (!scope.comm.is_root()) return;
      if (write_nlsq) {
        const std::vector<std::string> gone = RemoveEarlierXpcsjaxFiles(out, final_dir);
        if (!gone.empty()) {
          scope.log.Info(
              "output: removed an earlier run's {} from {}: this run's NLSQ results replace "
              "them, in homodyne's layout ({})",
              fmt::join(gone, ", "), final_dir.string(), scope.cfg.output_layout_reason);
        }
      }
      CommitStaging(out, final_dir);
    });
  } catch (...) {
    if (scope.comm.is_root()) RemoveStaging(out);
    throw;
  }
  return phases;
}

}  // namespace homodyne
