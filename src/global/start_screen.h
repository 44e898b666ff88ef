// two_component's start screen (optimization.nlsq.recovery.start_screen, docs/global.md): a
// log-space multistart of the two decay rates, the sample fraction and the velocity, screened
// by χ² on every k-th row of each angle's triangle, its best few polished by short local fits,
// then one full local fit from the lowest. The transport scan's shared rate and the velocity
// scan each move one scale with the other held at a guess; the cross term couples them (its
// fringe spacing is seen through both populations' decays), and on the broad recovery study
// (docs/model.md) the paths from those starts crawled ~1000 iterations and 7 of 50 ended away
// from the minimum. Deterministic (grids and fits, no random numbers; the rows do not depend on
// the ranks), so a resume recomputes it with the same bits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::global {

// The screen's row stride: every k-th row of each angle's upper triangle (each with all its
// lags), k = ⌊time_points / kScreenRows⌋ and at least 1: never sparser than the scans'. The
// rows are the fit grid's, not a rank's share, so the values do not depend on the ranks.
int ScreenRowStride(const nlsq::XpcsFitSession& session);

// Collective. The screen's point: the lowest short fit's answer (optimiser space) and its χ²;
// x empty when the screen does not apply (not two_component, a transport rate or the velocity
// held, no q or dt) or no short fit was usable. One line to `actions`.
struct ScreenedStart {
  std::vector<double> x;
  double chi2 = 0.0;
};
ScreenedStart ScreenStart(nlsq::XpcsFitSession& session, const std::vector<double>& start, double q,
                          double dt, double ftol, const Logger& logger,
                          std::vector<std::string>& actions);

// Collective. The screen and the full local fit from its point (checkpoints under
// "<dir>/start_screen"), then, when that fit is not acceptable (converged and no misfit by the
// noise level) and `velocity_scan`, the velocity scan around it. `accepted`: the answer when
// acceptable (the pipeline's other paths then do not run); else `other`: the best answer, to
// compete with the other paths' (empty when the screen did not apply).
struct ScreenOutcome {
  std::optional<nlsq::SolverSummary> accepted;
  std::optional<nlsq::SolverSummary> other;
};
ScreenOutcome RunStartScreen(nlsq::XpcsFitSession& session, const config::Config& cfg,
                             const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                             bool velocity_scan, const Logger& logger, bool progress,
                             std::vector<std::string>& actions);

}  // namespace homodyne::global
