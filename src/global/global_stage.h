// The CMA-ES global stage of the NLSQ fit (optimization.nlsq.cmaes, docs/global.md):
//
//   warm start   the ordinary local fit from the configured start;
//   auto-skip    a converged warm start with reduced χ² < warmstart_skip_threshold is
//                the answer (no global search);
//   CMA-ES       from the warm start's answer with sigma_warmstart and no restarts when
//                it converged, else from the configured start with sigma and the
//                configured restart strategy; every generation is one batched data pass;
//   refinement   the local fit from the CMA-ES point, unless that point is more than 10×
//                worse than the warm start;
//   keep-better  the warm start's answer if its χ² is lower than the stage's.
//
// The answer is therefore never worse than the plain local fit's. The stage runs on one
// communicator (every rank of it holds part of the data) and has priority over
// multistart when both are enabled; with auto_select it runs only when the bounds' scale
// ratio reaches scale_threshold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/log.h"
#include "global/cmaes.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/row_subsets.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::global {

struct GlobalStageOptions {
  bool enable = false;
  config::CmaesPreset preset = config::CmaesPreset::kStandard;
  std::optional<int> max_generations;
  double sigma = 0.5;
  double sigma_warmstart = 0.05;
  bool nlsq_warmstart = true;
  bool warmstart_auto_skip = true;
  double warmstart_skip_threshold = 5.0;
  std::optional<int> popsize;
  double tol_fun = 1e-8;
  double tol_x = 1e-8;
  RestartStrategy restart_strategy = RestartStrategy::kBipop;
  int max_restarts = 9;
  bool auto_select = true;
  double scale_threshold = 1000.0;
  double normalization_epsilon = 1e-12;
  bool refine_with_nlsq = true;
  // The refinement's loss (cmaes.refinement_loss; C = 1 on the sigma-scaled residual).
  model::LossKind refinement_loss = model::LossKind::kLinear;
  std::uint64_t seed = 42;
  // Above this many points the search's objective is the χ² of every k-th row of each angle
  // (nlsq::XpcsFitSession::Chi2BatchOnRows), k = ceil(points / search_max_points); 0: all points.
  // ... with k at most times / nlsq::kMinRowSubsetRows: never fewer rows per angle than this.
  std::int64_t search_max_points = 250000;

  // Validates (bad input naming optimization.nlsq.cmaes.<key>).
  static GlobalStageOptions FromConfig(const config::Cmaes& c);
  void Validate() const;
  int PresetGenerations() const;
  // The strategy's options as configured (popsize 0: the default; generations: the preset's
  // unless max_generations is given).
  CmaesOptions StrategyOptions() const;
};

// max/min of the bound widths (> 0) of [contrast, offset, physical parameters…]; 1 with
// fewer than two such widths.
double BoundScaleRatio(const config::Config& cfg);

struct GlobalSelection {
  bool run = false;
  double scale_ratio = 1.0;
  std::string reason;  // for the log
};
GlobalSelection SelectGlobalStage(const config::Config& cfg, const GlobalStageOptions& o);

// Population and generations per run: the preset's (or max_generations) and the default
// 4 + ⌊3 ln n⌋ population, raised for wide scale ratios when popsize is not set.
struct CmaesBudget {
  int popsize = 0;
  int max_generations = 0;
  bool adapted = false;
  int popsize_default = 0;
  int generations_default = 0;
};
CmaesBudget PlanCmaesBudget(const GlobalStageOptions& o, int n_searched, double scale_ratio);

// Collective over `comm` (the objective's). Runs `es` to its end: with checkpoints the
// state is written to "<dir>/cmaes_<n>.h5" every checkpoint_frequency generations and at
// the end; with resume the newest such checkpoint (written for the same start and
// settings) is continued; a stop request (SIGTERM/SIGUSR1) writes one and throws the
// agreed ErrorKind::kCheckpointed error. One progress line per generation (rank 0).
CmaesSummary RunCmaes(const Comm& comm, Cmaes& es, const BatchObjective& f,
                      const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                      const std::string& data_description, const Logger& logger,
                      bool print_progress);

// The row stride of a search on large data: 1 (every point) up to `max_points` points or
// max_points ≤ 0; else every k-th row of each angle with k the smaller of
// ⌈points / max_points⌉ and time_points / nlsq::kMinRowSubsetRows (nlsq::RowSubsetStride). In core
// and streamed alike: a streamed fit keeps the rows in memory (XpcsProblem::OnRows).
int SearchRowStride(const nlsq::XpcsFitSession& session, std::int64_t max_points);

// Collective over the session's communicator; every rank returns the same summary. Steps
// 2–5 above after `warm`, the local fit from the configured start (nullopt: no warm start,
// the search starts from the configured start). `report` receives the stage's diagnostics
// and `cmaes_seconds` the strategy's time (0 when skipped).
nlsq::SolverSummary RunGlobalStage(nlsq::XpcsFitSession& session, const GlobalStageOptions& g,
                                   double scale_ratio,
                                   const std::optional<nlsq::SolverSummary>& warm,
                                   const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                                   const Logger& logger, bool progress,
                                   nlsq::GlobalSearchReport& report, double& cmaes_seconds);

// Collective over `comm`; every rank returns the same result. The whole pipeline above;
// the result's report carries the stage's diagnostics (nlsq::FitReport::global_search).
nlsq::NlsqRunResult RunGlobalNlsqFit(const Comm& comm, const config::Config& cfg,
                                     const nlsq::NlsqRunOptions& options,
                                     const GlobalStageOptions& g, double scale_ratio,
                                     const Logger& logger);

}  // namespace homodyne::global
