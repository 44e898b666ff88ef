// The stages of the NLSQ pipeline (RunNlsqPipeline, fit_pipeline.h) that take the pipeline's
// context (pipeline_context.h). Each is collective over the session's communicator,
// deterministic and replicated; each adds its lines to the context's recovery actions and
// checkpoints in its own subfolder of the run's checkpoint directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "global/pipeline_context.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::global {

// The registry's start (equal reference and sample transport, f_s = 0.5 at every time) is
// its own reference<->sample mirror. There χ² has no gradient that tells the populations
// apart, and Gauss-Newton steps keep the symmetry up to rounding: a fit can stay on the
// symmetric set, both populations with one transport, far above the minimum (tc012 of the
// recovery study: stalled at 1.07x), and where it leaves the set depends on the rounding of
// the kernel's sums. For such a start this returns copies that leave the set in two
// directions, each without preferring either population (a copy's mirror is the same copy
// with the labels swapped, which the mirror check covers):
//   - the sample fraction 0.55 (f3 raised by 0.05, or f0 if f3 is held);
//   - the exponents split, alpha_ref − 0.1 and alpha_sample + 0.1.
// Empty for any other start, and without a copy where its parameters cannot move.
struct OffMirrorStart {
  std::string what;       // for the log
  std::string subfolder;  // of the checkpoints
  std::vector<double> x;
};
std::vector<OffMirrorStart> OffTheMirrorSet(const nlsq::XpcsFitSession& session,
                                            const std::vector<double>& x);

// The screen on rows of the restarts and the phi0 check (docs/global.md, "The screen on
// rows"). Above recovery.screen_max_points points, a start is first fitted on every k-th row
// of each angle (k = SearchRowStride, as the CMA-ES search's rows; the rows' problem is built
// once and kept by the session) and only the row fits that may end below the incumbent get a
// full fit, started where the row fit ended. The reference R is the incumbent's objective on
// the rows: the row fit from it when it converged, else its value there. A row fit is dropped
// when it ended at or above R·(1 + kScreenKeepRelTol); when it converged at R or at the value
// of a kept one's, to the tolerance of Lower (the same minimum); or when it is not usable. The
// rest are ordered by their row value; every one within kScreenKeepRelTol of the lowest gets
// a full fit, and the others, in order, only while no full fit so far has an acceptable answer
// (converged, no physical parameter at a bound: !Suspect).
inline constexpr double kScreenKeepRelTol = 1e-3;

// One start's row fit and whether the screen keeps it.
struct RowScreenStart {
  int index = 0;  // into the starts
  nlsq::SolverSummary rows;
  bool required = false;  // within kScreenKeepRelTol of the lowest kept
};
struct RowScreen {
  int stride = 1;              // 1: no screen, every start gets its full fit
  std::int64_t points = 0;     // on the rows
  double reference = 0.0;      // R
  bool reference_fit = false;  // R is the incumbent's row fit's (it converged)
  int starts = 0;
  int passes = 0;                    // over the rows (with and without derivatives)
  std::vector<RowScreenStart> kept;  // in the order of the full fits
  // Every start's row fit, by start index (the phi0 check looks for an equivalent minimum
  // among those the rule drops as the incumbent's value reached again).
  std::vector<nlsq::SolverSummary> fits;
  std::string Describe() const;  // for the recovery actions
};
// The row stride of the screen: SearchRowStride(recovery.screen_max_points); 1 when off.
int RecoveryRowStride(const PipelineContext& ctx);
// The rule above on row fits already made (rows[k] from start k, `reference` as R): the
// kept starts in the order of their full fits. Pure: unit-tested on values.
std::vector<RowScreenStart> SelectByRows(std::vector<nlsq::SolverSummary> rows, double reference,
                                         bool reference_is_minimum);
// Collective: the row fits of `starts` and of `incumbent` (or its row value), and the rule.
RowScreen ScreenOnRows(PipelineContext& ctx, const nlsq::SolverSummary& incumbent,
                       const std::vector<std::vector<double>>& starts, int stride);

// The phi0 check on `best` (a no-op when there is no free parameter named phi0 or
// recovery.phi0_restarts is 0): returns the summary with the lowest objective among `best`
// and local fits restarted from it with phi0 at Phi0RestartValues of its bounds (ties keep
// `best`). One line to the actions when the check ran. Each restart checkpoints under
// "<dir>/phi0_restart_<k>". A converged restart (or row fit) that ends at the answer's
// objective, to Lower's tolerance, with phi0 more than kEquivalentPhi0Separation of the bounds'
// width away and a barrier between them (the objective half-way, every parameter averaged,
// above the answer's by more than kBarrierRelTol) is an equivalent minimum: added to the
// context's (the report's degeneracy section, with a warning).
inline constexpr double kEquivalentPhi0Separation = 1e-3;
inline constexpr double kBarrierRelTol = 1e-4;
nlsq::SolverSummary CheckPhi0Basins(PipelineContext& ctx, const nlsq::SolverSummary& best);

// Restarts after a stall: recovery.stall_starts Latin-hypercube starts (StallRestartStarts)
// by objective in one batched pass, local fits from the lowest max(3, n/2); returns the
// lowest among `stalled` and them. Each restart checkpoints under "<dir>/stall_restart_<k>".
nlsq::SolverSummary RestartAfterStall(PipelineContext& ctx, const nlsq::SolverSummary& stalled);

// The mirror check on `best` (two_component with the transport and fraction parameters free;
// else a no-op): one local fit from the mirror of `best` on the grid t = dt·[1..N]; returns
// the better (Better) of the two. It checkpoints under "<where>/mirror".
nlsq::SolverSummary CheckMirrorBasin(PipelineContext& ctx, const nlsq::SolverSummary& best,
                                     const Checkpoints& where);

// two_component's anti-degeneracy path (xpcsjax's L2, two stages): stage 1 fits the physics
// from the configured start with every angle's contrast and offset held at the quantile
// estimates (nlsq::XpcsFitSession::SolveQuantileScaling); stage 2 is the joint fit of the
// session's layout from stage 1's physics, its scaling fitted first as for the plain fit
// (ScalingFittedStart). Returns the better (Better) of `plain` and stage 2; fills the
// context's anti-degeneracy report and adds one line to the actions. The stages checkpoint
// under "<dir>/two_stage_1" and "<dir>/two_stage_2".
nlsq::SolverSummary TwoStagePath(PipelineContext& ctx, const nlsq::SolverSummary& plain);

// two_component's transport scan, for a start whose transport is the registry's (no
// transport parameter configured): the objective in one batched pass (on every stride-th
// row for large data, as the velocity scan) of `start` with D0_ref = D0_sample = each
// TransportScanRates value and the start's own, the velocity (v0, v_offset) at 0 unless v0 is
// configured. Returns `start` with both rates at the lowest (the velocity as it was; ties keep
// the start's rate); `start` itself when D0_ref or D0_sample is held or the two differ. One
// line to the actions. The registry's 1e4 is tied to no time scale of the data: at q = 0.0237
// 1/Å it decays in 2 frames of 0.1 s, and the local fits from it ended on the plateau where
// the sample has decayed within a frame.
std::vector<double> ScanTransport(PipelineContext& ctx, const std::vector<double>& start);

}  // namespace homodyne::global
