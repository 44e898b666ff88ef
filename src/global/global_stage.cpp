#include "global/global_stage.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/interrupt.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "core/progress.h"
#include "model/robust_loss.h"
#include "nlsq/row_subsets.h"
#include "parallel/collective.h"

namespace homodyne::global {
namespace {

std::string CmaesKey(std::string_view leaf) {
  return config::keys::Key(config::keys::kNlsqCmaes, leaf);
}
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The refinement is skipped when CMA-ES ends this much worse than the warm start.
constexpr double kRefineWorseFactor = 10.0;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

GlobalStageOptions GlobalStageOptions::FromConfig(const config::Cmaes& c) {
  GlobalStageOptions o;
  o.enable = c.enable;
  o.preset = c.preset;
  o.max_generations = c.max_generations;
  o.sigma = c.sigma;
  o.sigma_warmstart = c.sigma_warmstart;
  o.nlsq_warmstart = c.nlsq_warmstart;
  o.warmstart_auto_skip = c.warmstart_auto_skip;
  o.warmstart_skip_threshold = c.warmstart_skip_threshold;
  o.popsize = c.popsize;
  o.tol_fun = c.tol_fun;
  o.tol_x = c.tol_x;
  o.restart_strategy = c.restart_strategy;
  o.max_restarts = c.max_restarts;
  o.auto_select = c.auto_select;
  o.scale_threshold = c.scale_threshold;
  o.normalization_epsilon = c.normalization_epsilon;
  o.refine_with_nlsq = c.refine_with_nlsq;
  o.refinement_loss = c.refinement_loss;
  o.search_max_points = c.search_max_points;
  if (c.search_max_points < 0) {
    ThrowBadInput(fmt::format("search_max_points must be ≥ 0 (got {})", c.search_max_points), {},
                  CmaesKey("search_max_points"));
  }
  if (c.seed < 0)
    ThrowBadInput(fmt::format("seed must be ≥ 0 (got {})", c.seed), {}, CmaesKey("seed"));
  o.seed = static_cast<std::uint64_t>(c.seed);
  o.Validate();
  return o;
}

int GlobalStageOptions::PresetGenerations() const {
  switch (preset) {
    case config::CmaesPreset::kFast:
      return 50;
    case config::CmaesPreset::kStandard:
      return 100;
    case config::CmaesPreset::kGlobal:
      return 200;
  }
  ThrowInternal("CMA-ES preset outside its enum");
}

void GlobalStageOptions::Validate() const {
  PresetGenerations();
  if (!(sigma_warmstart > 0.0 && sigma_warmstart <= 1.0)) {
    ThrowBadInput(fmt::format("sigma_warmstart must be in (0, 1] (got {})", sigma_warmstart), {},
                  CmaesKey("sigma_warmstart"));
  }
  if (!(warmstart_skip_threshold > 0.0)) {
    ThrowBadInput(
        fmt::format("warmstart_skip_threshold must be > 0 (got {})", warmstart_skip_threshold), {},
        CmaesKey("warmstart_skip_threshold"));
  }
  if (!(scale_threshold > 0.0)) {
    ThrowBadInput(fmt::format("scale_threshold must be > 0 (got {})", scale_threshold), {},
                  CmaesKey("scale_threshold"));
  }
  // The strategy's own checks name the same keys.
  if (popsize && *popsize < 4) {
    ThrowBadInput(fmt::format("popsize must be ≥ 4 (got {})", *popsize), {}, CmaesKey("popsize"));
  }
  StrategyOptions().Validate();
}

CmaesOptions GlobalStageOptions::StrategyOptions() const {
  CmaesOptions c;
  c.popsize = popsize.value_or(0);
  c.max_generations = max_generations.value_or(PresetGenerations());
  c.sigma = sigma;
  c.tol_fun = tol_fun;
  c.tol_x = tol_x;
  c.restart_strategy = restart_strategy;
  c.max_restarts = max_restarts;
  c.seed = seed;
  c.normalization_epsilon = normalization_epsilon;
  return c;
}

double BoundScaleRatio(const config::Config& cfg) {
  std::vector<double> widths;
  auto add = [&](const config::EffectiveParameter& p) {
    const double w = p.max - p.min;
    if (w > 0.0 && std::isfinite(w)) widths.push_back(w);
  };
  add(cfg.contrast);
  add(cfg.offset);
  for (const auto& p : cfg.parameters) {
    if (p.vary) add(p);  // a held parameter is not searched
  }
  if (widths.size() < 2) return 1.0;
  const auto [lo, hi] = std::minmax_element(widths.begin(), widths.end());
  return *hi / *lo;
}

GlobalSelection SelectGlobalStage(const config::Config& cfg, const GlobalStageOptions& o) {
  GlobalSelection s;
  s.scale_ratio = BoundScaleRatio(cfg);
  if (!o.enable) {
    s.reason = CmaesKey("enable") + " is false";
    return s;
  }
  if (o.auto_select && s.scale_ratio < o.scale_threshold) {
    s.reason = fmt::format("bound scale ratio {:.3g} < scale_threshold {:.3g}", s.scale_ratio,
                           o.scale_threshold);
    return s;
  }
  s.run = true;
  s.reason = o.auto_select ? fmt::format("bound scale ratio {:.3g} ≥ scale_threshold {:.3g}",
                                         s.scale_ratio, o.scale_threshold)
                           : "enabled (auto_select false)";
  return s;
}

CmaesBudget PlanCmaesBudget(const GlobalStageOptions& o, int n_searched, double scale_ratio) {
  CmaesBudget b;
  const int n = std::max(n_searched, 1);
  b.popsize_default =
      o.popsize.value_or(std::max(4, 4 + static_cast<int>(std::floor(3.0 * std::log(n)))));
  b.generations_default = o.max_generations.value_or(o.PresetGenerations());
  b.popsize = b.popsize_default;
  b.max_generations = b.generations_default;
  // Wide scale ratios (bounds spanning many decades) need larger populations and more
  // generations; an explicit popsize or max_generations is used as given.
  if (!o.popsize && scale_ratio > 1000.0) {
    b.adapted = true;
    const int l0 = b.popsize_default;
    const int g0 = b.generations_default;
    const bool fixed_g = o.max_generations.has_value();
    if (scale_ratio > 1e6) {
      b.popsize = std::max(200, 10 * l0);
      if (!fixed_g) b.max_generations = std::max(500, 3 * g0);
    } else if (scale_ratio > 1e4) {
      b.popsize = std::max(100, 5 * l0);
      if (!fixed_g) b.max_generations = std::max(300, 2 * g0);
    } else {
      b.popsize = std::max(50, 3 * l0);
      if (!fixed_g) b.max_generations = std::max(200, g0);
    }
  }
  return b;
}

CmaesSummary RunCmaes(const Comm& comm, Cmaes& es, const BatchObjective& f,
                      const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                      const std::string& data_description, const Logger& logger,
                      bool print_progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& ck = checkpoints;
  const bool use_store = ck && (ck->enabled || ck->resume);
  std::unique_ptr<checkpoint::CheckpointStore> store;
  const std::vector<double> setup = es.Setup();
  if (use_store) {
    ck->Validate();
    store = std::make_unique<checkpoint::CheckpointStore>(
        comm, checkpoint::StoreOptions{ck->dir, "cmaes", ck->keep_last},
        checkpoint::RunIdentity{ck->config_description, data_description}, logger);
    if (ck->resume) {
      if (auto loaded = store->LoadNewest()) {
        RunCollectively(comm, [&] {
          if (!loaded->record.Has("cmaes.setup") ||
              loaded->record.Doubles("cmaes.setup") != setup) {
            ThrowBadInput(
                "the CMA-ES checkpoint was written for another start, bounds or CMA-ES settings "
                "(did the warm start end differently?)",
                loaded->path.string(), "cmaes.setup");
          }
          es.Restore(CmaesState::Load(loaded->record, "cmaes."));
        });
        logger.Info("CMA-ES: resuming from {} (run {}, generation {}, best chi2 {:.10g})",
                    loaded->path.string(), es.state().run + 1, es.state().total_generations,
                    es.state().best_chi2);
      } else {
        logger.Info("CMA-ES: resume: no CMA-ES checkpoint in {}; starting from the beginning",
                    ck->dir.string());
      }
    }
  }
  auto record = [&] {
    checkpoint::CheckpointRecord r;
    r.PutDoubles("cmaes.setup", setup);
    es.state().Store(r, "cmaes.");
    return r;
  };

  Progress progress(print_progress ? logger : Logger::Silent(), "CMA-ES");
  while (!es.finished()) {
    // A stop request inside the generation's pass saves the state before it (Step draws the
    // population first): resumed, the generation is drawn and evaluated again, the same.
    std::optional<checkpoint::CheckpointRecord> before;
    if (use_store && ck->stop_on_signal) before = record();
    CmaesGeneration g;
    try {
      g = es.Step(f);
    } catch (const lsq::PassInterrupted&) {
      if (!before) throw;  // no stop check was set for this search: not ours to save
      const auto path = store->Write(*before);
      throw MarkAgreed(Error(ErrorKind::kCheckpointed, checkpoint::ResumeMessage(path.string())));
    }
    if (print_progress) {
      logger.Debug(
          "  CMA-ES run {:>2} gen {:>4}  lambda {:>4}  gen best {:>16.9e}  best {:>16.9e}  "
          "sigma {:>10.3e}",
          g.run + 1, g.generation, g.popsize, g.generation_best, g.best_chi2, g.sigma);
      progress.Update(fmt::format(
          "run {}, generation {} (λ {}), best chi2 {:.6e}, {} evaluations, "
          "{:.1f} s",
          g.run + 1, g.generation, g.popsize, g.best_chi2, g.evaluations, progress.elapsed()));
      if (g.run_ended) {
        logger.Info(
            "CMA-ES: run {} (λ {}) ended after {} generation(s): {}; best chi2 so far {:.8e}",
            g.run + 1, g.popsize, g.generation, ToString(g.run_stop), g.best_chi2);
      }
    }
    checkpoint::MaybeKill("cmaes_gen", g.total_generations);
    checkpoint::MaybeSignal("cmaes_gen", g.total_generations, comm.rank());
    checkpoint::MaybePause("cmaes_gen", g.total_generations);
    if (!use_store) continue;
    const bool stop = ck->stop_on_signal && checkpoint::AgreeOnStop(comm);
    const bool due = ck->enabled && (g.total_generations % ck->frequency == 0 || es.finished());
    if (stop && !es.finished()) {  // the exit code promises a checkpoint
      const auto path = store->Write(record());
      throw MarkAgreed(Error(ErrorKind::kCheckpointed, checkpoint::ResumeMessage(path.string())));
    }
    if (due || stop) {
      if (const auto path = store->TryWrite(record(), ck->fatal_write_errors)) {
        logger.Debug("CMA-ES checkpoint {} (generation {})", path->string(), g.total_generations);
      }
    }
  }
  CmaesSummary s = es.Summary();
  s.seconds = Seconds(t0);
  progress.Done(
      fmt::format("{} generation(s), {} evaluations, {} restart(s), best chi2 {:.6e}, "
                  "{:.1f} s",
                  s.generations, s.evaluations, s.restarts, s.chi2, s.seconds));
  return s;
}

int SearchRowStride(const nlsq::XpcsFitSession& session, std::int64_t max_points) {
  return nlsq::RowSubsetStride(session.total_points(), session.time_points(), max_points);
}

namespace {

// What the steps of one global stage share.
struct StageRun {
  nlsq::XpcsFitSession& session;
  const GlobalStageOptions& g;
  const std::optional<checkpoint::CheckpointSettings>& checkpoints;
  const Logger& logger;
  bool progress;
  nlsq::GlobalSearchReport& rep;
};

// The report before the stage: every χ² not yet known.
void StartReport(nlsq::GlobalSearchReport& rep, double scale_ratio, std::uint64_t seed) {
  rep = nlsq::GlobalSearchReport{};
  rep.scale_ratio = scale_ratio;
  rep.seed = seed;
  rep.warmstart_chi_squared = kNaN;
  rep.warmstart_reduced_chi2 = kNaN;
  rep.cmaes_chi_squared = kNaN;
  rep.refined_chi_squared = kNaN;
  rep.chi_squared_improvement = kNaN;
}

// Step 2, auto-skip: a converged warm start with reduced χ² below warmstart_skip_threshold
// needs no global search. Records the warm start in the report either way.
bool SkipAfterWarmStart(StageRun& run, const nlsq::SolverSummary& warm, bool warm_converged) {
  nlsq::GlobalSearchReport& rep = run.rep;
  rep.warmstart_ran = true;
  rep.warmstart_termination = std::string(ToString(warm.termination));
  rep.warmstart_chi_squared = warm.final_chi2;
  rep.warmstart_reduced_chi2 = run.session.ReducedChi2(warm.final_chi2);
  if (!warm_converged || !run.g.warmstart_auto_skip ||
      !(rep.warmstart_reduced_chi2 < run.g.warmstart_skip_threshold)) {
    return false;
  }
  run.logger.Info(
      "CMA-ES: the warm start converged with reduced chi2 {:.5g} < warmstart_skip_threshold "
      "{:.5g}: keeping it, no global search",
      rep.warmstart_reduced_chi2, run.g.warmstart_skip_threshold);
  rep.cmaes_skipped = true;
  rep.selected = "nlsq_warmstart";
  rep.chi_squared_improvement = 0.0;
  return true;
}

// The strategy's options for this stage: the budget for the searched dimension and scale
// ratio; after a converged warm start, sigma_warmstart and no restarts.
CmaesOptions PlanSearch(const StageRun& run, double scale_ratio, bool warm_converged) {
  const nlsq::XpcsFitSession& session = run.session;
  const GlobalStageOptions& g = run.g;
  int n_searched = 0;
  for (std::size_t i = 0; i < session.x0().size(); ++i) {
    n_searched += session.upper()[i] - session.lower()[i] > g.normalization_epsilon ? 1 : 0;
  }
  const CmaesBudget budget = PlanCmaesBudget(g, n_searched, scale_ratio);
  if (budget.adapted) {
    run.logger.Info(
        "CMA-ES: adaptive scaling for bound scale ratio {:.3g}: popsize {} -> {}, "
        "max_generations {} -> {}",
        scale_ratio, budget.popsize_default, budget.popsize, budget.generations_default,
        budget.max_generations);
  }
  CmaesOptions co = g.StrategyOptions();
  co.popsize = budget.popsize;
  co.max_generations = budget.max_generations;
  if (warm_converged) {  // polish near the warm start (homodyne's contract)
    co.sigma = g.sigma_warmstart;
    co.restart_strategy = RestartStrategy::kNone;
  }
  if (warm_converged && g.restart_strategy != RestartStrategy::kNone) {
    run.logger.Info(
        "CMA-ES: warm start converged: sigma_warmstart {} and restart_strategy {} -> none",
        g.sigma_warmstart, ToString(g.restart_strategy));
  }
  run.logger.Info(
      "CMA-ES phase 2: global search over {} parameter(s) from the {}: popsize {}, up to {} "
      "generation(s) per run, sigma {}, restarts {}, seed {}",
      n_searched, warm_converged ? "warm start" : "configured start", co.popsize,
      co.max_generations, co.sigma,
      co.restart_strategy == RestartStrategy::kBipop ? fmt::format("bipop × {}", co.max_restarts)
                                                     : std::string("none"),
      co.seed);
  return co;
}

// Step 3: the CMA-ES search from `start`, its χ² on all points at the end.
CmaesSummary SearchBox(StageRun& run, const CmaesOptions& co, const std::vector<double>& start) {
  nlsq::XpcsFitSession& session = run.session;
  nlsq::GlobalSearchReport& rep = run.rep;
  // On large data the search evaluates every stride-th row of each angle only: its
  // thousands of evaluations then cost what a few local fits do (23 angles x 1000 frames:
  // 54 s on all points), while every row keeps every lag; the refinement and the comparison
  // with the warm start below use all points.
  const std::int64_t points = session.total_points();
  const int stride = SearchRowStride(session, run.g.search_max_points);
  std::string identity = session.DataDescription();
  if (stride > 1) {
    const std::int64_t searched = session.PointsOnRows(stride);
    run.logger.Info(
        "CMA-ES: the search evaluates every {}th row of each angle ({} of {} points; "
        "search_max_points {}); the refinement uses all points",
        stride, searched, points, run.g.search_max_points);
    identity += fmt::format("; search on every {}th row", stride);
  }
  rep.search_row_stride = stride;
  Cmaes es = RunCollectively(session.comm(),
                             [&] { return Cmaes(co, start, session.lower(), session.upper()); });
  // Generations' passes end within one block of a stop request when there is a store to
  // save the search in (RunCmaes).
  struct StopCheck {
    nlsq::XpcsFitSession& session;
    ~StopCheck() { session.SetStopCheck({}); }
  } stop_check{session};
  const auto& checkpoints = run.checkpoints;
  if (checkpoints && (checkpoints->enabled || checkpoints->resume) && checkpoints->stop_on_signal) {
    session.SetStopCheck([] { return checkpoint::LocalStopSignal() != 0; });
  }
  CmaesSummary cs = RunCmaes(
      session.comm(), es,
      [&](std::span<const std::vector<double>> xs, std::vector<double>& chi2) {
        session.Chi2BatchOnRows(xs, chi2, stride);
      },
      checkpoints, identity, run.logger, run.progress);
  if (stride > 1) {
    rep.search_chi_squared_on_rows = cs.chi2;
    cs.chi2 = session.Chi2At(cs.x);  // all points, comparable with the warm start's
  }
  return cs;
}

// The search's counts and settings in the report.
void ReportSearch(StageRun& run, const CmaesOptions& co, const CmaesSummary& cs) {
  run.logger.Info(
      "CMA-ES: global search done: {} {:.8e} after {} generation(s), {} evaluations, {} "
      "restart(s) ({}, {:.1f} s)",
      model::ObjectiveName(run.session.problem_loss()), cs.chi2, cs.generations, cs.evaluations,
      cs.restarts, ToString(cs.stop), cs.seconds);
  nlsq::GlobalSearchReport& rep = run.rep;
  rep.generations = cs.generations;
  rep.evaluations = cs.evaluations;
  rep.restarts = cs.restarts;
  rep.convergence_reason = std::string(ToString(cs.stop));
  rep.restart_strategy = std::string(ToString(co.restart_strategy));
  rep.popsize = cs.base_popsize;
  for (const CmaesRun& r : cs.runs) rep.run_popsizes.push_back(r.popsize);
  rep.max_generations = co.max_generations;
  rep.sigma = co.sigma;
  rep.global_search_time_s = cs.seconds;
  rep.cmaes_chi_squared = cs.chi2;
}

// The local fit from the CMA-ES point under cmaes.refinement_loss; its objective and normal
// equations then under the fit's loss (for the comparisons and the covariance), its label
// its own solve's. Its checkpoints go to a subdirectory, apart from the warm start's (a
// resume continues each where it was).
nlsq::SolverSummary SolveRefinement(StageRun& run, const std::vector<double>& x) {
  nlsq::XpcsFitSession& session = run.session;
  // homodyne's refinement minimises cmaes.refinement_loss, whatever the fit's loss; every
  // candidate is then compared (and the answer reported) under the fit's loss.
  const model::RobustLoss fit_loss = session.loss();
  // Its C is 1 on the sigma-scaled residual: homodyne's refinement passes sigma and no f_scale.
  const model::RobustLoss refine_loss{run.g.refinement_loss, 1.0};
  const bool other_loss = refine_loss.kind != fit_loss.kind;
  if (other_loss) {
    run.logger.Info(
        "CMA-ES: the refinement minimises the {} loss (cmaes.refinement_loss), the fit {}",
        model::Describe(refine_loss), model::Describe(fit_loss));
    session.SetProblemLoss(refine_loss);
  }
  nlsq::SolverSummary refined;
  try {
    refined = session.Solve(x, run.progress,
                            checkpoint::InSubfolder(run.checkpoints, "cmaes_refinement"));
  } catch (...) {
    session.SetProblemLoss(fit_loss);
    throw;
  }
  if (other_loss) {
    session.SetProblemLoss(fit_loss);
    const nlsq::SolverSummary at =
        session.SummaryAt(refined.x, refined.termination, refined.message);
    refined.final_equations = at.final_equations;
    refined.final_chi2 = at.final_chi2;
    refined.optimality = at.optimality;
    refined.message += fmt::format(" (refined under the {} loss; objective under the fit's {})",
                                   model::Describe(refine_loss), model::Describe(fit_loss));
  }
  return refined;
}

// Step 4: the refinement, unless disabled or the CMA-ES point is more than
// kRefineWorseFactor worse than the warm start. Empty: no usable refined answer.
std::optional<nlsq::SolverSummary> Refine(StageRun& run, const CmaesSummary& cs,
                                          const std::optional<nlsq::SolverSummary>& warm) {
  nlsq::GlobalSearchReport& rep = run.rep;
  if (!run.g.refine_with_nlsq) {
    rep.refinement = "disabled";
    return std::nullopt;
  }
  if (warm && std::isfinite(warm->final_chi2) &&
      !(cs.chi2 <= kRefineWorseFactor * warm->final_chi2)) {
    rep.refinement = "skipped_worse";
    run.logger.Info("CMA-ES: no refinement: {} {:.6e} is more than {}× the warm start's {:.6e}",
                    model::ObjectiveName(run.session.problem_loss()), cs.chi2, kRefineWorseFactor,
                    warm->final_chi2);
    return std::nullopt;
  }
  run.logger.Info("CMA-ES phase 3: local fit from the CMA-ES point (refinement)");
  nlsq::SolverSummary refined = SolveRefinement(run, cs.x);
  rep.refined_chi_squared = refined.final_chi2;
  if (!refined.IsUsable() || !std::isfinite(refined.final_chi2)) {
    rep.refinement = "failed";
    run.logger.Warn("CMA-ES: the refinement did not converge ({}); using the CMA-ES point",
                    refined.message);
    return std::nullopt;
  }
  rep.refinement = refined.final_chi2 < cs.chi2 ? "improved" : "not_improved";
  if (refined.final_chi2 < cs.chi2) {
    run.logger.Info("CMA-ES: refinement improved {} {:.12g} -> {:.12g}",
                    model::ObjectiveName(run.session.problem_loss()), cs.chi2, refined.final_chi2);
  }
  return refined;
}

// Step 5, keep-better: the warm start's answer when the global stage did not beat it, else
// the refined answer, else the CMA-ES point itself.
nlsq::SolverSummary KeepBetter(StageRun& run, const CmaesSummary& cs,
                               std::optional<nlsq::SolverSummary> chosen,
                               const std::optional<nlsq::SolverSummary>& warm) {
  nlsq::GlobalSearchReport& rep = run.rep;
  const double global_chi2 = chosen ? chosen->final_chi2 : cs.chi2;
  if (warm && warm->IsUsable() && std::isfinite(warm->final_chi2) &&
      warm->final_chi2 < global_chi2) {
    run.logger.Info("CMA-ES: the warm start is better ({} {:.12g} < {:.12g}): keeping it",
                    model::ObjectiveName(run.session.problem_loss()), warm->final_chi2,
                    global_chi2);
    rep.selected = "nlsq_warmstart";
    return *warm;
  }
  if (chosen) {
    rep.selected = "cmaes_refined";
    return std::move(*chosen);
  }
  rep.selected = "cmaes";
  // The strategy's own stop (not a budget running out) is converged only if the point
  // passes the optimality test too (SummaryAt decides; else it is stalled).
  const bool converged = cs.stop == CmaesStop::kTolX || cs.stop == CmaesStop::kTolFun;
  return run.session.SummaryAt(
      cs.x, converged ? lsq::Termination::kConverged : lsq::Termination::kMaxIterations,
      fmt::format("CMA-ES point ({})", ToString(cs.stop)));
}

}  // namespace

nlsq::SolverSummary RunGlobalStage(nlsq::XpcsFitSession& session, const GlobalStageOptions& g,
                                   double scale_ratio,
                                   const std::optional<nlsq::SolverSummary>& warm,
                                   const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                                   const Logger& logger, bool progress,
                                   nlsq::GlobalSearchReport& rep, double& cmaes_seconds) {
  StartReport(rep, scale_ratio, g.seed);
  cmaes_seconds = 0.0;
  StageRun run{session, g, checkpoints, logger, progress, rep};
  const bool warm_converged =
      warm && warm->termination == lsq::Termination::kConverged && std::isfinite(warm->final_chi2);
  if (warm && SkipAfterWarmStart(run, *warm, warm_converged)) return *warm;
  const std::vector<double> start = warm_converged ? warm->x : session.x0();
  const CmaesOptions co = PlanSearch(run, scale_ratio, warm_converged);
  const CmaesSummary cs = SearchBox(run, co, start);
  ReportSearch(run, co, cs);
  std::optional<nlsq::SolverSummary> chosen = Refine(run, cs, warm);
  nlsq::SolverSummary answer = KeepBetter(run, cs, std::move(chosen), warm);
  if (warm && std::isfinite(warm->final_chi2)) {
    rep.chi_squared_improvement = warm->final_chi2 - answer.final_chi2;
  }
  cmaes_seconds = cs.seconds;
  return answer;
}

nlsq::NlsqRunResult RunGlobalNlsqFit(const Comm& comm, const config::Config& cfg,
                                     const nlsq::NlsqRunOptions& options,
                                     const GlobalStageOptions& g, double scale_ratio,
                                     const Logger& logger) {
  nlsq::XpcsFitSession session(comm, cfg, options, logger);
  std::optional<nlsq::SolverSummary> warm;
  if (g.nlsq_warmstart) {
    logger.Info("CMA-ES phase 1: local fit from the configured start (warm start)");
    warm = session.Solve(session.x0(), options.print_progress);
  }
  nlsq::GlobalSearchReport rep;
  double cmaes_seconds = 0.0;
  const nlsq::SolverSummary answer =
      RunGlobalStage(session, g, scale_ratio, warm, options.checkpoints, logger,
                     options.print_progress, rep, cmaes_seconds);
  nlsq::NlsqRunResult r = session.Finish(answer);
  if (cmaes_seconds > 0.0) r.phases.Add("cmaes", cmaes_seconds);
  r.report.global_search = rep;
  return r;
}

}  // namespace homodyne::global
