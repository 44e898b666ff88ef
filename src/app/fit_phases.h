// The phases of one fit that `homodyne` and a batch task both run (private to src/app):
// the NLSQ fit, CMC after it, and the result files. Each is collective over the fit's
// communicator (the world for `homodyne`, the task's rank group in a batch); errors are
// agreed there and propagate.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "app/plots.h"
#include "cmc/cmc_fit.h"
#include "config/config.h"
#include "config/config_bridge.h"
#include "core/log.h"
#include "core/phase_timer.h"
#include "global/fit_pipeline.h"
#include "global/global_stage.h"
#include "global/multistart.h"
#include "nlsq/xpcs_fit.h"
#include "outputs/fitted_data.h"
#include "parallel/comm.h"

namespace homodyne {

// What is fitted, where, and by whom.
struct FitScope {
  const Comm& comm;
  int world_rank = 0;  // fault-injection stages name ranks of the world
  const config::Config& cfg;
  std::string data_file;  // the resolved path (the option's, else the config's)
  std::filesystem::path output_dir;
  config::FitMethod method = config::FitMethod::kNlsq;
  const Logger& log;
};

// The NLSQ phase's outcome. `result` is complete on the communicator's root.
struct NlsqOutcome {
  nlsq::NlsqRunResult result;
  std::optional<global::MultiStartSummary> multistart;  // optimization.nlsq.multi_start.enable
  bool ran = true;         // false: CMC without an NLSQ run (none, or a loaded warm start)
  bool usable = false;     // the root's verdict, the same on every rank
  bool converged = false;  // the root's verdict: termination is kConverged (else exit 4)
  bool misfit = false;     // the root's verdict: the answer does not describe the data (exit 5)
};

// The exit code an NLSQ outcome earns: 1 without a usable answer, 4 when the answer is
// written but not converged (stalled, max_iter), 5 when it converged to a misfit
// (FitReport::misfit_reasons), else 0 (docs/errors.md).
int NlsqExitCode(const NlsqOutcome& nlsq);

// The NLSQ fit: the CMA-ES global stage when optimization.nlsq.cmaes selects it (it has
// priority), else multistart when enabled, else the plain local fit.
NlsqOutcome RunNlsqPhase(const FitScope& scope, const nlsq::NlsqRunOptions& options);

// CMC warm-started from `nlsq` when `warm_start` (its result is first broadcast from the
// root: multistart leaves it complete there only); its time is added to nlsq's phases.
cmc::CmcRunResult RunCmcPhase(const FitScope& scope, cmc::CmcRunOptions options, bool warm_start,
                              NlsqOutcome& nlsq);

// The root writes the result files (NLSQ's unless the method is cmc, with multistart.json
// after a multistart fit; CMC's when `cmc` is set; the inputs of `plots`), then the ranks
// write fitted_data.h5 together. Returns nlsq's phase times plus "write_outputs".
PhaseTimes WriteFitOutputs(const FitScope& scope, const NlsqOutcome& nlsq,
                           const cmc::CmcRunResult* cmc, const PlotRequest& plots,
                           const FittedDataThreads& threads);

}  // namespace homodyne
