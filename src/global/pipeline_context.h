// What the stages of the NLSQ pipeline (fit_pipeline.h) share: the session (its
// communicator, data and problem), the options resolved once from the config, the facts of
// the configured start the stages branch on, the checkpoint settings every stage puts its
// own subfolder under, and the report being built (the recovery actions, the anti-degeneracy
// and global-search sections). A stage takes the context instead of re-passing these, and
// adds to the report through it.
//
// The rules the stages share for comparing answers (Lower, Better) live here as well.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "global/anti_degeneracy.h"
#include "global/fit_pipeline.h"
#include "global/global_stage.h"
#include "nlsq/fit_report.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::global {

using Checkpoints = std::optional<checkpoint::CheckpointSettings>;

struct PipelineContext {
  // Collective over `comm`: resolves the options (bad input names its key on every rank),
  // then opens the session.
  PipelineContext(const Comm& comm, const config::Config& cfg, const nlsq::NlsqRunOptions& options,
                  const Logger& logger);

  // Options, resolved once (optimization.nlsq.cmaes, .recovery, .anti_degeneracy).
  const config::Config& cfg;
  const Logger& logger;
  const GlobalStageOptions global;
  const RecoveryOptions recovery;
  const AntiDegeneracyOptions anti_degeneracy;
  const GlobalSelection selection;
  const bool progress;            // one line per iteration on rank 0
  const Checkpoints checkpoints;  // the run's; each stage checkpoints in its subfolder

  nlsq::XpcsFitSession session;

  // Facts of the configured start (two_component; false otherwise).
  bool two_component = false;
  bool transport_configured = false;  // a transport parameter's initial value is written
  bool v0_configured = false;
  bool mirror_check = false;   // recovery.mirror_check resolved (auto: no transport written)
  bool velocity_scan = false;  // recovery.velocity_scan, v0 free and not written

  // The report being built.
  std::vector<std::string> actions;  // FitReport::recovery_actions
  nlsq::AntiDegeneracyReport anti_degeneracy_report;
  std::optional<nlsq::GlobalSearchReport> global_report;
  std::vector<nlsq::EquivalentMinimum> equivalent_minima;  // FitReport::degeneracy's
  double cmaes_seconds = 0.0;

  // The name of the value the local fits minimise: "chi2", or "objective (soft_l1)" under a
  // robust loss (model::ObjectiveName).
  std::string Objective() const;
  // "<Objective()> <value>" (12 significant digits), for the actions and the log.
  std::string Named(double value) const;
  // Adds `action` to the report and logs it ("NLSQ <action>"), as a warning when `warn`.
  void Note(std::string action, bool warn = false);
};

// A restart replaces the incumbent when it ends lower by more than a converged fit's
// distance to its own minimum (the Gauss–Newton decrement test stops within about ftol =
// 1e-8 of it, relative): the same minimum reached again is not a new answer.
inline constexpr double kLowerMinimumRelTol = 1e-6;

// A candidate ends lower than the incumbent: usable, and lower by more than a converged
// fit's distance to its own minimum.
bool Lower(const nlsq::SolverSummary& candidate, const nlsq::SolverSummary& incumbent);
// Lower, or converged where the incumbent is not at the same value (to rounding).
bool Better(const nlsq::SolverSummary& candidate, const nlsq::SolverSummary& incumbent);

}  // namespace homodyne::global
