#include "global/fit_pipeline.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/key_paths.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "global/anti_degeneracy.h"
#include "global/pipeline_context.h"
#include "global/pipeline_stages.h"
#include "global/start_screen.h"

// RunNlsqPipeline: a driver of named stages over one PipelineContext. The stages' own steps
// live by concern in pipeline_two_component.cpp (scans, two-stage path, mirror check) and
// pipeline_restarts.cpp (stall restarts, phi0 check).
namespace homodyne::global {

RecoveryOptions RecoveryOptions::FromConfig(const config::NlsqRecovery& r) {
  RecoveryOptions o;
  o.on_stall = r.on_stall;
  o.stall_starts = r.stall_starts;
  o.phi0_restarts = r.phi0_restarts;
  o.mirror_check = r.mirror_check;
  o.velocity_scan = r.velocity_scan;
  o.transport_scan = r.transport_scan;
  o.start_screen = r.start_screen;
  o.screen_max_points = r.screen_max_points;
  o.Validate();
  return o;
}

void RecoveryOptions::Validate() const {
  if (phi0_restarts < 0 || phi0_restarts > 1000) {
    ThrowBadInput(fmt::format("phi0_restarts must be in [0, 1000] (got {})", phi0_restarts), {},
                  config::keys::Key(config::keys::kNlsqRecovery, "phi0_restarts"));
  }
  if (stall_starts < 1 || stall_starts > 100000) {
    ThrowBadInput(fmt::format("stall_starts must be in [1, 100000] (got {})", stall_starts), {},
                  config::keys::Key(config::keys::kNlsqRecovery, "stall_starts"));
  }
  if (screen_max_points < 0) {
    ThrowBadInput(fmt::format("screen_max_points must be at least 0 (got {})", screen_max_points),
                  {}, config::keys::Key(config::keys::kNlsqRecovery, "screen_max_points"));
  }
}

namespace {

// The local fit from `x` (two_component: its per-angle scaling fitted first), then the
// velocity scan around both when it runs.
nlsq::SolverSummary SolvePath(PipelineContext& ctx, const std::vector<double>& x,
                              const Checkpoints& where) {
  const std::vector<double> start = ScalingFittedStart(ctx.session, x, ctx.logger);
  nlsq::SolverSummary fit = ctx.session.Solve(start, ctx.progress, where);
  if (!ctx.velocity_scan) return fit;
  const ScopedFaultStage scan_stage("velocity_scan");
  return ScanVelocity(ctx.session, x, fit, ctx.cfg.analyzer.wavevector_q, ctx.cfg.analyzer.dt, 2,
                      where, ctx.logger, ctx.progress, ctx.actions);
}

// The start's path and, for a start on the mirror-symmetric set (OffTheMirrorSet), the
// paths from copies off it, the best answer kept. No path wins everywhere. On the
// two-component recovery study (docs/model.md) the start's own path failed on 2 of 20
// datasets after a change of the kernel's rounding, the fraction's on 4, the exponents'
// on 1, and together, with each path's mirror check, on none.
nlsq::SolverSummary SolvePaths(PipelineContext& ctx, const std::vector<double>& x0,
                               const Checkpoints& where) {
  nlsq::SolverSummary best = SolvePath(ctx, x0, where);
  for (OffMirrorStart& off : OffTheMirrorSet(ctx.session, x0)) {
    ctx.logger.Info(
        "NLSQ: the start (equal reference and sample transport, sample fraction 0.5) is its "
        "own reference<->sample mirror; another path starts with {}",
        off.what);
    const auto off_where = checkpoint::InSubfolder(where, off.subfolder);
    nlsq::SolverSummary other_path = SolvePath(ctx, off.x, off_where);
    const bool kept = Better(other_path, best);
    ctx.Note(fmt::format(
        "mirror-symmetric start: the path from {} ended {} at {} against {} at {:.12g}: {}",
        off.what, ToString(other_path.termination), ctx.Named(other_path.final_chi2),
        ToString(best.termination), best.final_chi2, kept ? "kept" : "the answer so far stands"));
    if (kept) std::swap(other_path, best);
    // The answer goes on to the final mirror check (BasinChecks); every path not kept gets
    // its own here, since each can end in the minimum's mirror basin (tc001 of the study).
    if (ctx.mirror_check) {
      const ScopedFaultStage mirror_stage("mirror");
      nlsq::SolverSummary mirrored = CheckMirrorBasin(ctx, other_path, off_where);
      if (Better(mirrored, best)) best = std::move(mirrored);
    }
  }
  return best;
}

// Why the answer from the transport scan's rate is not taken as it is (empty: it is): not
// converged, or a misfit by the noise level (the quality verdict's rule).
std::string WhyNotAccepted(PipelineContext& ctx, const nlsq::SolverSummary& s) {
  const nlsq::XpcsFitSession::NoiseFit noise = ctx.session.NoiseFitAt(s.x);
  if (s.termination != lsq::Termination::kConverged) {
    return fmt::format("ended {}", ToString(s.termination));
  }
  if (!noise.measured) return "cannot be judged against the noise level (not measurable)";
  if (!noise.misfit()) return {};
  return fmt::format("is a misfit (reduced chi2 {:.4g} in units of the noise level, >= {:.4g})",
                     noise.reduced_chi2, noise.misfit_threshold);
}

// The registry's transport (D0_ref = D0_sample = 1e4) is tied to no time scale of the data
// either. Without a configured transport the paths start first from the transport scan's
// shared rate; the registry's own start follows only when that answer is not accepted
// (WhyNotAccepted), and the better of the two goes on. Neither start wins everywhere: on the
// recovery study the scan's alone missed the lowest chi2 on 3 of 20 datasets (tc007
// converged at 62x), the registry's alone on 2; from the registry's, the 4-angle template
// case of 150 frames (tests/cli/test_two_component_template_plateau.sh) ended at 53x the
// noise floor.
nlsq::SolverSummary PathsFromScannedRate(PipelineContext& ctx, const std::vector<double>& scanned) {
  nlsq::SolverSummary local =
      SolvePaths(ctx, scanned, checkpoint::InSubfolder(ctx.checkpoints, "transport_scan"));
  const std::string why = WhyNotAccepted(ctx, local);
  if (why.empty()) return local;
  ctx.logger.Info(
      "NLSQ: the answer from the transport scan's rate ({}) {}; the paths from the registry's "
      "start follow",
      ctx.Named(local.final_chi2), why);
  nlsq::SolverSummary registry = SolvePaths(ctx, ctx.session.x0(), ctx.checkpoints);
  const bool kept = Better(registry, local);
  ctx.Note(fmt::format(
      "transport scan: the answer from its rate {} at {} {}; the registry's start ended {} at "
      "{:.12g}: {}",
      ToString(local.termination), ctx.Named(local.final_chi2), why, ToString(registry.termination),
      registry.final_chi2, kept ? "the registry's kept" : "the scan's kept"));
  if (kept) std::swap(registry, local);
  if (ctx.mirror_check) {
    const ScopedFaultStage mirror_stage("mirror");
    nlsq::SolverSummary mirrored =
        CheckMirrorBasin(ctx, registry, checkpoint::InSubfolder(ctx.checkpoints, "other_start"));
    if (Better(mirrored, local)) local = std::move(mirrored);
  }
  return local;
}

// Stage 1: the local fit from the configured start. two_component: the start screen first;
// its answer (after a velocity scan when the fit from the screen's point is not acceptable)
// is taken when it converged and is no misfit by the noise level. Otherwise the paths from
// the transport scan's rate (or the configured start) run as well and the lowest answer goes
// on.
nlsq::SolverSummary LocalFitStage(PipelineContext& ctx) {
  if (ctx.selection.run) ctx.logger.Info("CMA-ES phase 1: local fit from the configured start");
  const ScopedFaultStage stage("local");
  std::optional<nlsq::SolverSummary> local, screened;
  if (ctx.two_component && ctx.recovery.start_screen && !ctx.transport_configured &&
      !ctx.v0_configured) {
    const ScopedFaultStage screen_stage("start_screen");
    ScreenOutcome so = RunStartScreen(ctx.session, ctx.cfg, ctx.checkpoints, ctx.velocity_scan,
                                      ctx.logger, ctx.progress, ctx.actions);
    local = std::move(so.accepted);
    screened = std::move(so.other);
  }
  if (!local) {
    std::vector<double> scanned;
    if (ctx.two_component && ctx.recovery.transport_scan && !ctx.transport_configured) {
      const ScopedFaultStage transport_stage("transport_scan");
      scanned = ScanTransport(ctx, ctx.session.x0());
    }
    local = scanned.empty() || scanned == ctx.session.x0()
                ? SolvePaths(ctx, ctx.session.x0(), ctx.checkpoints)
                : PathsFromScannedRate(ctx, scanned);
  }
  if (screened && Better(*screened, *local)) {
    ctx.Note(fmt::format(
        "start screen: its answer ({} at {}) is below the other paths' ({} at {:.12g}): kept",
        ToString(screened->termination), ctx.Named(screened->final_chi2),
        ToString(local->termination), local->final_chi2));
    local = std::move(screened);
  }
  return std::move(*local);
}

// laminar_flow's anti-degeneracy path: the alternating stage (anti_degeneracy.h) from the
// configured start, then the joint fit from its point; the lower of it and `plain` goes on.
nlsq::SolverSummary HierarchicalPath(PipelineContext& ctx, nlsq::SolverSummary plain) {
  nlsq::AntiDegeneracyReport& adr = ctx.anti_degeneracy_report;
  const std::vector<double> xh =
      RunHierarchicalStage(ctx.session, ctx.session.x0(), ctx.anti_degeneracy, ctx.logger, adr);
  nlsq::SolverSummary joint =
      ctx.session.Solve(xh, ctx.progress, checkpoint::InSubfolder(ctx.checkpoints, "hierarchical"));
  adr.stage_chi_squared = joint.final_chi2;
  adr.plain_chi_squared = plain.final_chi2;
  if (!Better(joint, plain)) {
    adr.selected = "plain";
    ctx.logger.Info(
        "NLSQ anti-degeneracy: the joint fit after the hierarchical stage ended {} at {}; the "
        "plain fit ({} at {:.12g}) is kept",
        ToString(joint.termination), ctx.Named(joint.final_chi2), ToString(plain.termination),
        plain.final_chi2);
    return plain;
  }
  adr.selected = "hierarchical";
  ctx.Note(fmt::format(
      "anti-degeneracy: the joint fit after the hierarchical stage ended {} at {}, below the "
      "plain fit's {} at {:.12g}: kept",
      ToString(joint.termination), ctx.Named(joint.final_chi2), ToString(plain.termination),
      plain.final_chi2));
  return joint;
}

// Stage 2: the anti-degeneracy path, a second path from the same start. By default only
// after a plain fit that is suspect by the restarts' rule (Suspect): after a converged answer
// inside the box it cost tens of local fits where it was measured (23 angles x 1000 frames:
// 22 s beside a 0.8 s fit) and kept the plain answer. two_component's two stages run only
// when hierarchical.enable is written (HierarchicalInactiveReason): on its recovery study
// they never improved a final answer (docs/global.md). They start from the configured start
// with the scaling held, not from the plain answer, so a bound the plain fit converged at
// is no reason to run them: for two_component only a plain fit that did not converge is
// suspect here.
std::optional<nlsq::SolverSummary> AntiDegeneracyStage(PipelineContext& ctx,
                                                       std::optional<nlsq::SolverSummary> local) {
  std::string& inactive = ctx.anti_degeneracy_report.inactive_reason;
  inactive = HierarchicalInactiveReason(ctx.cfg, ctx.session);
  if (inactive.empty() && !local) inactive = "no local fit to compare with";
  if (inactive.empty() && !ctx.anti_degeneracy.always) {
    if (ctx.two_component && local->termination == lsq::Termination::kConverged) {
      inactive =
          "the plain fit converged (hierarchical.trigger: suspect; two_component's stages "
          "start from the configured start, so a bound the fit converged at is not "
          "suspect here)";
    } else if (!Suspect(ctx.session, *local)) {
      inactive =
          "the plain fit converged with no physical parameter at a bound "
          "(hierarchical.trigger: suspect)";
    }
    ctx.anti_degeneracy_report.skipped_by_trigger = !inactive.empty();
  }
  if (!inactive.empty()) return local;
  const ScopedFaultStage stage("hierarchical");
  if (ctx.two_component) return TwoStagePath(ctx, *local);
  return HierarchicalPath(ctx, std::move(*local));
}

// The CMA-ES stage (global_stage.h): as configured (selection.run), or after a stall with
// recovery.on_stall: cmaes; `local` is its warm start.
nlsq::SolverSummary GlobalSearchStage(PipelineContext& ctx,
                                      const std::optional<nlsq::SolverSummary>& local) {
  const bool after_stall = !ctx.selection.run;
  if (after_stall) {
    ctx.logger.Warn(
        "NLSQ: the local fit ended {} ({}); searching the box with the CMA-ES stage "
        "(optimization.nlsq.recovery.on_stall: cmaes)",
        ToString(local->termination), ctx.Named(local->final_chi2));
  }
  nlsq::GlobalSearchReport rep;
  const ScopedFaultStage stage("global");
  nlsq::SolverSummary answer =
      RunGlobalStage(ctx.session, ctx.global, ctx.selection.scale_ratio, local, ctx.checkpoints,
                     ctx.logger, ctx.progress, rep, ctx.cmaes_seconds);
  if (after_stall) {
    ctx.actions.push_back(fmt::format("global search after a {} local fit ({}): {} at {}, kept {}",
                                      ToString(local->termination), ctx.Named(local->final_chi2),
                                      rep.convergence_reason, ctx.Named(rep.cmaes_chi_squared),
                                      rep.selected));
  }
  ctx.global_report = rep;
  return answer;
}

// Stage 3: the global stage as configured, or the recovery after a suspect local fit.
// Restarts after a stall, and after a converged answer with a physical parameter at a bound
// of the box: those are where the recovery studies found the remaining local minima labelled
// converged (gamma_dot_t_offset at -0.1 with D_offset far below zero).
nlsq::SolverSummary SearchStage(PipelineContext& ctx,
                                const std::optional<nlsq::SolverSummary>& local) {
  const bool stalled = local && local->termination != lsq::Termination::kConverged;
  const bool restarts = !ctx.selection.run && local && Suspect(ctx.session, *local) &&
                        ctx.recovery.on_stall == StallRecovery::kRestarts;
  // two_component: no box restarts. Over the 20 datasets of its recovery study they found a
  // lower minimum in 0 of 19 rounds, and on 23 angles x 1000 frames each round costs 5 full
  // local fits; the velocity scan and the mirror check are this mode's global steps.
  if (restarts && ctx.two_component) {
    ctx.Note(fmt::format(
        "no restarts from the box after the local fit {} ({}): two_component uses the velocity "
        "scan and the mirror check instead",
        WhyRestart(ctx.session, *local), ctx.Named(local->final_chi2)));
    return *local;
  }
  if (restarts) {
    ctx.logger.Warn(
        "NLSQ: the local fit {} ({}); restarting from the box "
        "(optimization.nlsq.recovery.on_stall: restarts)",
        WhyRestart(ctx.session, *local), ctx.Named(local->final_chi2));
    const ScopedFaultStage stage("restarts");
    return RestartAfterStall(ctx, *local);
  }
  if (ctx.selection.run || (stalled && ctx.recovery.on_stall == StallRecovery::kCmaes)) {
    return GlobalSearchStage(ctx, local);
  }
  return *local;
}

// Stage 4: the checks of the answer's basin: phi0 (laminar_flow with phi0 free) and the
// reference<->sample mirror (two_component).
nlsq::SolverSummary BasinChecks(PipelineContext& ctx, nlsq::SolverSummary answer) {
  {
    const ScopedFaultStage stage("phi0");
    answer = CheckPhi0Basins(ctx, answer);
  }
  if (ctx.mirror_check) {
    const ScopedFaultStage stage("mirror");
    answer = CheckMirrorBasin(ctx, answer, ctx.checkpoints);
  }
  return answer;
}

// Stage 5: the result, its verdict and report, with the pipeline's sections.
nlsq::NlsqRunResult FinishRun(PipelineContext& ctx, const nlsq::SolverSummary& answer) {
  nlsq::NlsqRunResult r = ctx.session.Finish(answer);
  if (ctx.cmaes_seconds > 0.0) r.phases.Add("cmaes", ctx.cmaes_seconds);
  r.report.global_search = ctx.global_report;
  r.report.recovery_actions = ctx.actions;
  r.report.anti_degeneracy = ctx.anti_degeneracy_report;
  for (const nlsq::EquivalentMinimum& m : ctx.equivalent_minima) {
    r.report.degeneracy.warnings.push_back(nlsq::DescribeEquivalentMinimum(m));
  }
  r.report.degeneracy.equivalent_minima = ctx.equivalent_minima;
  for (const auto& w : r.report.quality_warnings) ctx.logger.Warn("{}", w);
  for (const auto& w : r.report.degeneracy.warnings) ctx.logger.Warn("{}", w);
  return r;
}

}  // namespace

nlsq::NlsqRunResult RunNlsqPipeline(const Comm& comm, const config::Config& cfg,
                                    const nlsq::NlsqRunOptions& options, const Logger& logger) {
  PipelineContext ctx(comm, cfg, options, logger);
  const auto start = std::chrono::steady_clock::now();
  const double timed_before = ctx.session.TimedSeconds();
  std::optional<nlsq::SolverSummary> local;
  if (!ctx.selection.run || ctx.global.nlsq_warmstart) local = LocalFitStage(ctx);
  local = AntiDegeneracyStage(ctx, std::move(local));
  nlsq::SolverSummary answer = SearchStage(ctx, local);
  answer = BasinChecks(ctx, std::move(answer));
  // The stages' time outside the session's timed phases and the CMA-ES search is the fit's
  // too: the screens' and scans' chi2 grids, the scaling fitted at their points, the rankings.
  // (A two-component start screen spent 6.6 s there beside 1.3 s in the solves.)
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double between = elapsed - (ctx.session.TimedSeconds() - timed_before) - ctx.cmaes_seconds;
  if (between > 0.0) ctx.session.AddFitSeconds(between);
  return FinishRun(ctx, answer);
}

}  // namespace homodyne::global
