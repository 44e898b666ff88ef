#include "app/fit_phases.h"

#include <mpi.h>

#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/output_paths.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"

namespace homodyne {

NlsqOutcome RunNlsqPhase(const FitScope& scope, const nlsq::NlsqRunOptions& options) {
  NlsqOutcome out;
  const auto& multi_start = scope.cfg.optimization.nlsq.multi_start;
  // CMA-ES (when enabled and selected) has priority over multistart, as in homodyne.
  const auto global = RunCollectively(scope.comm, [&] {
    return nlsq::GlobalStageOptions::FromConfig(scope.cfg.optimization.nlsq.cmaes);
  });
  const nlsq::GlobalSelection selection = nlsq::SelectGlobalStage(scope.cfg, global);
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
        scope.comm, [&] { return nlsq::MultiStartOptions::FromConfig(multi_start); });
    out.multistart.emplace();
    out.result =
        nlsq::RunMultiStartFit(scope.comm, scope.cfg, options, ms, scope.log, &*out.multistart);
  } else {
    out.result = nlsq::RunNlsqPipeline(scope.comm, scope.cfg, options, scope.log);
  }
  // Multistart groups hold different solves; the root holds the answer.
  int verdict[2] = {
      scope.comm.is_root() && out.result.summary.IsUsable() ? 1 : 0,
      scope.comm.is_root() && out.result.summary.termination == nlsq::Termination::kConverged ? 1
                                                                                              : 0};
  MPI_Bcast(verdict, 2, MPI_INT, 0, scope.comm.get());
  out.usable = verdict[0] != 0;
  out.converged = verdict[1] != 0;
  return out;
}

int NlsqExitCode(const NlsqOutcome& nlsq) {
  if (!nlsq.usable) return static_cast<int>(ExitCode::kInternalError);
  return static_cast<int>(nlsq.converged ? ExitCode::kSuccess : ExitCode::kNotConverged);
}

bool ConfigDenseMetric(const config::Config& cfg) {
  return !config::ConfigHasValue(cfg, "optimization.mcmc.dense_mass_matrix") ||
         config::ConfigBool(cfg, "optimization.mcmc.dense_mass_matrix");
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
  return cmc::RunCmcFit(scope.comm, scope.cfg, options, scope.log);
}

PhaseTimes WriteFitOutputs(const FitScope& scope, const NlsqOutcome& nlsq,
                           const cmc::CmcRunResult* cmc, const PlotRequest& plots,
                           const FittedDataThreads& threads) {
  const std::filesystem::path& out = scope.output_dir;
  const bool write_nlsq = scope.method != config::FitMethod::kCmc;
  PhaseTimes phases = nlsq.result.phases;
  RunCollectively(scope.comm, [&] {
    PhaseTimes::Scope t(phases, "write_outputs");
    MaybeInjectFailure("output", scope.world_rank);
    if (!scope.comm.is_root()) return;
    if (write_nlsq) {
      nlsq::WriteNlsqResultFiles(out, nlsq.result.report);
      if (nlsq.multistart) {
        WriteFileAtomically(OutputFilePath(out, "nlsq/multistart.json"), nlsq.multistart->ToJson());
      }
    }
    if (cmc != nullptr) cmc::WriteCmcResultFiles(out.string(), *cmc);
    WritePlotInputs(out, plots, scope.cfg, scope.data_file, scope.log);
  });
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
  return phases;
}

}  // namespace homodyne
