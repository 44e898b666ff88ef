#include "global/pipeline_context.h"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "model/heterodyne_symmetry.h"
#include "model/robust_loss.h"
#include "parallel/collective.h"

namespace homodyne::global {
namespace {

// A converged restart also replaces a stalled incumbent at the same χ² (to rounding): the
// label then tells the truth about that point.
constexpr double kSameChi2RelTol = 1e-9;

bool Usable(const nlsq::SolverSummary& s) { return s.IsUsable() && std::isfinite(s.final_chi2); }

// A written initial value of a transport parameter (D0, alpha, D_offset of either population).
bool TransportConfigured(const config::Config& cfg) {
  if (cfg.analysis_mode != model::AnalysisMode::kTwoComponent) return false;
  bool configured = false;
  for (int p = 0; p <= model::heterodyne::het::kDOffsetSample; ++p) {
    configured = configured || cfg.parameters.at(static_cast<std::size_t>(p)).initial_from_config;
  }
  return configured;
}

}  // namespace

PipelineContext::PipelineContext(const Comm& comm, const config::Config& config,
                                 const nlsq::NlsqRunOptions& options, const Logger& log)
    : cfg(config),
      logger(log),
      global(RunCollectively(
          comm, [&] { return GlobalStageOptions::FromConfig(config.optimization.nlsq.cmaes); })),
      recovery(RunCollectively(
          comm, [&] { return RecoveryOptions::FromConfig(config.optimization.nlsq.recovery); })),
      anti_degeneracy(RunCollectively(comm,
                                      [&] {
                                        return AntiDegeneracyOptions::FromConfig(
                                            config.optimization.nlsq.anti_degeneracy);
                                      })),
      selection(SelectGlobalStage(config, global)),
      progress(options.print_progress),
      checkpoints(options.checkpoints),
      session(comm, config, options, log) {
  // The mirror check's auto: a configured transport is the user's labelling of the
  // populations; the check costs a full local fit (on 23 angles x 1000 frames 5x the main one).
  transport_configured = TransportConfigured(cfg);
  mirror_check = recovery.mirror_check == RecoveryOptions::Mirror::kAlways ||
                 (recovery.mirror_check == RecoveryOptions::Mirror::kAuto && !transport_configured);
  two_component = session.layout().mode() == model::AnalysisMode::kTwoComponent;
  // two_component: v0 from the registry default is a guess across the cross term's
  // fringes; a configured v0 is the user's start and is taken as it is.
  v0_configured =
      two_component &&
      cfg.parameters.at(static_cast<std::size_t>(model::heterodyne::het::kV0)).initial_from_config;
  velocity_scan = recovery.velocity_scan && session.ParameterIndex("v0") >= 0 && !v0_configured;
}

std::string PipelineContext::Objective() const {
  return model::ObjectiveName(session.problem_loss());
}

std::string PipelineContext::Named(double value) const {
  return fmt::format("{} {:.12g}", Objective(), value);
}

void PipelineContext::Note(std::string action, bool warn) {
  actions.push_back(std::move(action));
  if (warn) {
    logger.Warn("NLSQ {}", actions.back());
  } else {
    logger.Info("NLSQ {}", actions.back());
  }
}

bool Lower(const nlsq::SolverSummary& candidate, const nlsq::SolverSummary& incumbent) {
  if (!Usable(candidate)) return false;
  if (!Usable(incumbent)) return true;
  return candidate.final_chi2 < incumbent.final_chi2 * (1.0 - kLowerMinimumRelTol);
}

bool Better(const nlsq::SolverSummary& candidate, const nlsq::SolverSummary& incumbent) {
  if (Lower(candidate, incumbent)) return true;
  return Usable(candidate) && Usable(incumbent) &&
         candidate.termination == lsq::Termination::kConverged &&
         incumbent.termination != lsq::Termination::kConverged &&
         candidate.final_chi2 <= incumbent.final_chi2 * (1.0 + kSameChi2RelTol);
}

}  // namespace homodyne::global
