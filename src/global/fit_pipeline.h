// The NLSQ fit as the project runs it by default (docs/global.md):
//
//   local fit      from the configured start (the CMA-ES stage's warm start); two_component:
//                  with no configured transport its shared rate from the transport scan,
//                  its scaling fitted first, and with no configured v0 also from the best
//                  points of the velocity scan;
//   anti-degen.    after a suspect local fit (hierarchical.trigger): laminar_flow's
//                  alternating stage (anti_degeneracy.h) or, with hierarchical.enable
//                  written, two_component's two stages (TwoStagePath); the lower χ² goes on;
//   global stage   optimization.nlsq.cmaes when enabled and selected (auto-skip after a
//                  good warm start);
//   stall          otherwise, when the local fit ended stalled or at max_iterations (or,
//                  for restarts, converged with a physical parameter at a bound),
//                  recovery.on_stall: restarts (local fits from the lowest-χ² half of
//                  stall_starts Latin-hypercube starts, one batched pass to screen them),
//                  cmaes (the CMA-ES stage searching the box) or none;
//   phi0 check     laminar_flow with phi0 free: local fits restarted from the answer with
//                  phi0 at recovery.phi0_restarts evenly spaced points of its bounds;
//   mirror check   two_component: a local fit from the answer's reference↔sample mirror
//                  (model/heterodyne_symmetry.h), recovery.mirror_check;
//   answer         the lowest χ² of all of these, labelled by its own solve.
//
// Every step is collective over one communicator, deterministic and replicated, so the
// answer does not depend on ranks, threads or checkpoints. RunNlsqPipeline drives these as
// named stages (fit_pipeline.cpp) over one PipelineContext (pipeline_context.h: the session,
// the options resolved once, the checkpoint settings, the report being built); the steps that
// take the context are declared in pipeline_stages.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "global/global_stage.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::global {

using StallRecovery = config::StallRecovery;

struct RecoveryOptions {
  StallRecovery on_stall = StallRecovery::kRestarts;
  int stall_starts = 10;
  std::uint64_t seed = 42;  // of the Latin hypercube
  int phi0_restarts = 4;
  // auto: only when the start's transport is not configured (RunNlsqPipeline).
  using Mirror = config::MirrorCheck;
  Mirror mirror_check = Mirror::kAuto;
  bool velocity_scan = true;
  bool transport_scan = true;
  bool start_screen = true;
  // Above this many points the restarts and the phi0 check are screened on rows (ScreenOnRows
  // in pipeline_stages.h); 0: never.
  std::int64_t screen_max_points = 250000;

  // Validates (bad input naming optimization.nlsq.recovery.<key>).
  static RecoveryOptions FromConfig(const config::NlsqRecovery& r);
  void Validate() const;
};

// The phi0 values the check restarts from: `n` midpoints of equal parts of [lo, hi].
std::vector<double> Phi0RestartValues(double lo, double hi, int n);

// two_component: `base` (an optimiser-space start) with its per-angle scaling fitted to the
// data, the physics held (the quantile estimates of the scaling assume homodyne's decay;
// where the cross term oscillates they are far off, and a local fit from the true physics
// with them was measured to leave the true basin). Other modes, or no free scaling: `base`.
std::vector<double> ScalingFittedStart(nlsq::XpcsFitSession& session,
                                       const std::vector<double>& base, const Logger& logger);

// The rates of the transport scan: D on a log grid (√2 steps) whose decay time 1/(q²·D) runs
// from ten windows, 10·T with T = dt·n_times, down to one frame, dt. Empty for q, dt ≤ 0 or
// fewer than 2 times.
std::vector<double> TransportScanRates(double q, double dt, std::int64_t n_times);
// two_component: the points of the velocity scan, `base` with (v0, v_beta)
// on a grid: v_beta at 4 evenly spaced points of its bounds, and for each, v0 such that the
// mean velocity over the window t = dt·[1..n_times] runs over a log grid (3 % steps) from a
// tenth of a half turn of the cross-term phase over the window, π/(10·q·T), to a half turn
// per frame, π/(q·dt). The χ² of c2's cross term oscillates in v0 with a period of that
// relative size, so a local fit from the registry's v0 = 1e3, v_beta = 1 mostly ends in a
// wrong fringe. Empty when v0 or v_beta is held.
std::vector<std::vector<double>> VelocityScanPoints(const nlsq::XpcsFitSession& session,
                                                    const std::vector<double>& base, double q,
                                                    double dt);

// Collective. The velocity scan: χ² of the VelocityScanPoints around `start` (the start of
// the local fit `configured`, before its scaling fit) and around `configured` in one pass (on
// every stride-th row for large data, as the CMA-ES search), and local fits from the `keep`
// lowest of each grid; returns the best (Better) of them and `configured`. One line to
// `actions`.
nlsq::SolverSummary ScanVelocity(nlsq::XpcsFitSession& session, const std::vector<double>& start,
                                 const nlsq::SolverSummary& configured, double q, double dt,
                                 int keep,
                                 const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                                 const Logger& logger, bool progress,
                                 std::vector<std::string>& actions);

// The physical parameters of `s` at a bound ("phi0 at its upper bound, …"; empty: none).
std::string PhysicalAtBound(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s);
// A local fit the pipeline does not take at its word: it stalled (or hit max_iterations), or
// converged with a physical parameter at a bound. The rule that starts the restarts and, by
// default, the hierarchical stage.
bool Suspect(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s);
// "ended stalled" / "converged with D0 at its lower bound" (for the log and the actions).
std::string WhyRestart(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s);

// The starts of the stall recovery: the configured start with D0, alpha, gamma_dot_t0,
// beta and phi0 drawn from a Latin hypercube of their bounds (log-uniform where the bounds
// are positive and span more than a factor 100: D0, gamma_dot_t0), and the per-angle
// scaling, D_offset and gamma_dot_t_offset kept at the start's values (two_component runs no
// restarts, RunNlsqPipeline). Uniform draws of
// the offsets' wide default bounds (±1e5, ±0.1) mostly land where D(t) is floored or the
// shear rate is all offset, which are the plateaus the stalled fit is on.
std::vector<std::vector<double>> StallRestartStarts(const nlsq::XpcsFitSession& session,
                                                    int n_starts, std::uint64_t seed);

// Collective over `comm`; every rank returns the same result. The pipeline above with the
// config's settings (optimization.nlsq.cmaes and .recovery).
nlsq::NlsqRunResult RunNlsqPipeline(const Comm& comm, const config::Config& cfg,
                                    const nlsq::NlsqRunOptions& options, const Logger& logger);

}  // namespace homodyne::global
