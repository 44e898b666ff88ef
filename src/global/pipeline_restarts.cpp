#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "global/latin_hypercube.h"
#include "global/pipeline_context.h"
#include "global/pipeline_stages.h"

// The pipeline's restarts: the rule that calls a local fit suspect, the stall recovery's
// Latin-hypercube restarts and the phi0 check.
namespace homodyne::global {
namespace {

// phi0's index when it is fitted (free), else −1.
int Phi0Index(const nlsq::XpcsFitSession& session) {
  const int i = session.ParameterIndex("phi0");
  return i >= 0 && session.upper()[i] > session.lower()[i] ? i : -1;
}

}  // namespace

std::string PhysicalAtBound(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s) {
  std::string out;
  const std::size_t n = s.x.size();
  if (s.at_lower_bound.size() != n || s.at_upper_bound.size() != n) return out;
  for (std::size_t i = n - static_cast<std::size_t>(session.num_physical()); i < n; ++i) {
    if (!s.at_lower_bound[i] && !s.at_upper_bound[i]) continue;
    out += (out.empty() ? "" : ", ") + session.parameter_names()[i] +
           (s.at_lower_bound[i] ? " at its lower bound" : " at its upper bound");
  }
  return out;
}

bool Suspect(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s) {
  return s.termination != lsq::Termination::kConverged || !PhysicalAtBound(session, s).empty();
}

std::string WhyRestart(const nlsq::XpcsFitSession& session, const nlsq::SolverSummary& s) {
  if (s.termination != lsq::Termination::kConverged) {
    return fmt::format("ended {}", ToString(s.termination));
  }
  return fmt::format("converged with {}", PhysicalAtBound(session, s));
}

std::vector<std::vector<double>> StallRestartStarts(const nlsq::XpcsFitSession& session,
                                                    int n_starts, std::uint64_t seed) {
  const std::vector<double>& x0 = session.x0();
  const std::size_t n = x0.size();
  const std::size_t first_physical = n - static_cast<std::size_t>(session.num_physical());
  std::vector<double> lo = x0, hi = x0;
  std::vector<bool> log_scale(n, false);
  for (std::size_t i = first_physical; i < n; ++i) {
    const std::string& name = session.parameter_names()[i];
    if (name == "D_offset" || name == "gamma_dot_t_offset") continue;  // kept at the start's
    lo[i] = session.lower()[i];
    hi[i] = session.upper()[i];
    if (lo[i] > 0.0 && hi[i] > 100.0 * lo[i]) {
      log_scale[i] = true;
      lo[i] = std::log(lo[i]);
      hi[i] = std::log(hi[i]);
    }
  }
  std::vector<std::vector<double>> starts = LatinHypercube(n_starts, lo, hi, seed);
  for (auto& x : starts) {
    for (std::size_t i = 0; i < n; ++i) {
      if (log_scale[i]) x[i] = std::clamp(std::exp(x[i]), session.lower()[i], session.upper()[i]);
    }
  }
  return starts;
}

int RecoveryRowStride(const PipelineContext& ctx) {
  return SearchRowStride(ctx.session, ctx.recovery.screen_max_points);
}

std::vector<RowScreenStart> SelectByRows(std::vector<nlsq::SolverSummary> rows, double reference,
                                         bool reference_is_minimum) {
  const auto converged = [](const nlsq::SolverSummary& s) {
    return s.termination == lsq::Termination::kConverged;
  };
  // Two converged row fits at one value, to Lower's tolerance, are the same minimum.
  const auto same = [](double a, double b) {
    return std::abs(a - b) <= kLowerMinimumRelTol * std::max(std::abs(a), std::abs(b));
  };
  std::vector<RowScreenStart> candidates;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const nlsq::SolverSummary& r = rows[k];
    if (!r.IsUsable() || r.x.empty() || !std::isfinite(r.final_chi2)) continue;
    if (std::isfinite(reference) && r.final_chi2 >= reference * (1.0 + kScreenKeepRelTol)) {
      continue;
    }
    if (reference_is_minimum && converged(r) && same(r.final_chi2, reference)) continue;
    candidates.push_back({static_cast<int>(k), std::move(rows[k]), false});
  }
  // By row value, ties by index: the order does not depend on anything but the values.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const RowScreenStart& a, const RowScreenStart& b) {
                     return a.rows.final_chi2 < b.rows.final_chi2;
                   });
  std::vector<RowScreenStart> kept;
  for (RowScreenStart& c : candidates) {
    const bool duplicate =
        converged(c.rows) && std::any_of(kept.begin(), kept.end(), [&](const RowScreenStart& k) {
          return converged(k.rows) && same(k.rows.final_chi2, c.rows.final_chi2);
        });
    if (duplicate) continue;
    c.required = kept.empty() ||
                 c.rows.final_chi2 <= kept.front().rows.final_chi2 * (1.0 + kScreenKeepRelTol);
    kept.push_back(std::move(c));
  }
  return kept;
}

RowScreen ScreenOnRows(PipelineContext& ctx, const nlsq::SolverSummary& incumbent,
                       const std::vector<std::vector<double>>& starts, int stride) {
  nlsq::XpcsFitSession& session = ctx.session;
  RowScreen screen;
  screen.stride = stride;
  screen.starts = static_cast<int>(starts.size());
  screen.points = session.PointsOnRows(stride);
  // A converged incumbent's own minimum on the rows; else its value there (a row fit from a
  // stalled point may travel to another minimum, which must not hide the starts that reach it).
  screen.reference_fit = incumbent.termination == lsq::Termination::kConverged;
  if (screen.reference_fit) {
    const nlsq::SolverSummary own = session.SolveOnRows(incumbent.x, stride);
    screen.reference_fit = own.termination == lsq::Termination::kConverged;
    screen.reference = own.final_chi2;
    screen.passes += own.evaluations + own.objective_evaluations;
  }
  if (!screen.reference_fit) {
    std::vector<double> value;
    session.Chi2BatchOnRows(std::vector<std::vector<double>>{incumbent.x}, value, stride);
    screen.reference = value.at(0);
    screen.passes += 1;
  }
  std::vector<nlsq::SolverSummary> rows;
  for (const std::vector<double>& x : starts) {
    rows.push_back(session.SolveOnRows(x, stride));
    const nlsq::SolverSummary& r = rows.back();
    screen.passes += r.evaluations + r.objective_evaluations;
    ctx.logger.Info("NLSQ screen on rows: start {}: {} at {} {:.12g} ({} iterations)",
                    rows.size() - 1, ToString(r.termination), ctx.Objective(), r.final_chi2,
                    r.iterations);
  }
  screen.fits = rows;
  screen.kept = SelectByRows(std::move(rows), screen.reference, screen.reference_fit);
  return screen;
}

std::string RowScreen::Describe() const {
  std::vector<int> which;
  for (const RowScreenStart& k : kept) which.push_back(k.index);
  return fmt::format(
      "screened on every {}th row ({} points, {} row passes): the answer's {} there {:.12g}; "
      "{} of {} start(s) kept for a full fit{}{}",
      stride, points, passes, reference_fit ? "row minimum" : "value", reference, kept.size(),
      starts, kept.empty() ? "" : ": ", fmt::join(which, ", "));
}

namespace {

// The full fits from the screen's kept starts, each from the end of its row fit, in order:
// every required one, the others only while no full fit so far is acceptable (!Suspect).
// Returns the best (Better) of `incumbent` and them, and the start it came from (−1: the
// incumbent). Each fit checkpoints under "<dir>/<prefix>_<start index>".
struct FullFits {
  nlsq::SolverSummary chosen;
  int chosen_index = -1;
  int fits = 0;
};
FullFits SolveKept(PipelineContext& ctx, const nlsq::SolverSummary& incumbent,
                   const RowScreen& screen, const std::string& prefix) {
  FullFits out{incumbent, -1, 0};
  bool acceptable = false;
  for (const RowScreenStart& k : screen.kept) {
    if (!k.required && acceptable) break;
    nlsq::SolverSummary s = ctx.session.Solve(
        k.rows.x, ctx.progress,
        checkpoint::InSubfolder(ctx.checkpoints, fmt::format("{}_{}", prefix, k.index)));
    ++out.fits;
    ctx.logger.Info("NLSQ screen on rows: full fit from start {}'s row fit: {} at {}", k.index,
                    ToString(s.termination), ctx.Named(s.final_chi2));
    acceptable = acceptable || !Suspect(ctx.session, s);
    if (Better(s, out.chosen)) {
      out.chosen = std::move(s);
      out.chosen_index = k.index;
    }
  }
  return out;
}

}  // namespace

namespace {

// Whether `other` (a restart's fit, on the rows when stride > 1) is a minimum as good as
// `answer`'s and separate from it (CheckPhi0Basins); `answer_objective` is the answer's
// objective on the same points. Collective (one objective evaluation) when the first tests
// pass.
std::optional<nlsq::EquivalentMinimum> EquivalentPhi0(PipelineContext& ctx,
                                                      const nlsq::SolverSummary& answer,
                                                      double answer_objective,
                                                      const nlsq::SolverSummary& other, int stride,
                                                      std::string found_by) {
  const nlsq::XpcsFitSession& session = ctx.session;
  const int i = Phi0Index(session);
  const auto converged = [](const nlsq::SolverSummary& s) {
    return s.IsUsable() && s.termination == lsq::Termination::kConverged && !s.x.empty() &&
           std::isfinite(s.final_chi2);
  };
  if (i < 0 || !converged(answer) || !converged(other) || other.x.size() != answer.x.size()) {
    return std::nullopt;
  }
  const double width = session.upper()[i] - session.lower()[i];
  if (std::abs(other.x[i] - answer.x[i]) <= kEquivalentPhi0Separation * width) return std::nullopt;
  if (std::abs(other.final_chi2 - answer_objective) >
      kLowerMinimumRelTol * std::max(std::abs(other.final_chi2), std::abs(answer_objective))) {
    return std::nullopt;
  }
  std::vector<double> mid(answer.x.size());
  for (std::size_t k = 0; k < mid.size(); ++k) mid[k] = 0.5 * (answer.x[k] + other.x[k]);
  double barrier = 0.0;
  if (stride > 1) {
    std::vector<double> value;
    ctx.session.Chi2BatchOnRows(std::vector<std::vector<double>>{mid}, value, stride);
    barrier = value.at(0);
  } else {
    barrier = ctx.session.Chi2At(mid);
  }
  const double higher = std::max(answer_objective, other.final_chi2);
  if (!(barrier > higher * (1.0 + kBarrierRelTol))) return std::nullopt;
  nlsq::EquivalentMinimum m;
  m.parameter = "phi0";
  m.answer_value = answer.x[i];
  m.value = other.x[i];
  m.answer_objective = answer_objective;
  m.objective = other.final_chi2;
  m.barrier_objective = barrier;
  m.on_rows = stride > 1;
  m.found_by = std::move(found_by);
  return m;
}

// The equivalent minima among the phi0 check's fits (full fits, else row fits), one per
// separate phi0, into the context's (FinishRun warns).
void NoteEquivalentPhi0(PipelineContext& ctx, const nlsq::SolverSummary& answer,
                        const std::vector<std::pair<std::string, const nlsq::SolverSummary*>>& fits,
                        double answer_objective, int stride) {
  const int i = Phi0Index(ctx.session);
  if (i < 0) return;
  const double width = ctx.session.upper()[i] - ctx.session.lower()[i];
  std::vector<double> seen;
  for (const auto& [found_by, fit] : fits) {
    if (std::any_of(seen.begin(), seen.end(), [&](double v) {
          return !fit->x.empty() && std::abs(fit->x[i] - v) <= kEquivalentPhi0Separation * width;
        })) {
      continue;
    }
    std::optional<nlsq::EquivalentMinimum> m =
        EquivalentPhi0(ctx, answer, answer_objective, *fit, stride, found_by);
    if (!m) continue;
    seen.push_back(m->value);
    ctx.equivalent_minima.push_back(std::move(*m));
  }
}

}  // namespace

std::vector<double> Phi0RestartValues(double lo, double hi, int n) {
  std::vector<double> v;
  for (int k = 0; k < n; ++k) v.push_back(lo + (hi - lo) * (k + 0.5) / n);
  return v;
}

nlsq::SolverSummary CheckPhi0Basins(PipelineContext& ctx, const nlsq::SolverSummary& best) {
  nlsq::XpcsFitSession& session = ctx.session;
  const Logger& logger = ctx.logger;
  const int n_restarts = ctx.recovery.phi0_restarts;
  const int i = Phi0Index(session);
  if (i < 0 || n_restarts <= 0 || !best.IsUsable() || best.x.empty()) return best;
  const std::vector<double> values =
      Phi0RestartValues(session.lower()[i], session.upper()[i], n_restarts);
  logger.Info(
      "NLSQ phi0 check: {} local fit(s) from the answer ({} {:.12g}, phi0 {:.6g}) with phi0 "
      "at {}",
      values.size(), model::ObjectiveName(session.problem_loss()), best.final_chi2, best.x[i],
      fmt::join(values, ", "));
  nlsq::SolverSummary chosen = best;
  int chosen_k = -1;
  std::string screened;
  std::vector<nlsq::SolverSummary> restarts;  // the full fits without a screen
  std::optional<RowScreen> row_screen;
  if (const int stride = RecoveryRowStride(ctx); stride > 1) {
    std::vector<std::vector<double>> starts;
    for (double v : values) {
      starts.push_back(best.x);
      starts.back()[i] = v;
    }
    const RowScreen screen = ScreenOnRows(ctx, best, starts, stride);
    screened = screen.Describe() + "; ";
    logger.Info("NLSQ phi0 check: {}", screen.Describe());
    FullFits full = SolveKept(ctx, best, screen, "phi0_restart");
    chosen = std::move(full.chosen);
    chosen_k = full.chosen_index;
    row_screen = screen;
  }
  for (std::size_t k = 0; screened.empty() && k < values.size(); ++k) {
    std::vector<double> start = best.x;
    start[i] = values[k];
    nlsq::SolverSummary s =
        session.Solve(start, ctx.progress,
                      checkpoint::InSubfolder(ctx.checkpoints, fmt::format("phi0_restart_{}", k)));
    logger.Info("NLSQ phi0 check: from phi0 {:.6g}: {} at {} {:.12g}, phi0 {:.6g}", values[k],
                ToString(s.termination), model::ObjectiveName(session.problem_loss()), s.final_chi2,
                s.x.empty() ? std::nan("") : s.x[i]);
    if (Better(s, chosen)) {
      chosen = s;
      chosen_k = static_cast<int>(k);
    }
    restarts.push_back(std::move(s));
  }
  // Equivalent minima of the answer (chosen). Without a screen: the restarts' and the first
  // answer's full fits. With one: the row fits, against the answer's row minimum when the
  // screen took it from the answer it keeps (no full restart ended lower).
  std::vector<std::pair<std::string, const nlsq::SolverSummary*>> fits;
  if (!row_screen) {
    if (chosen_k >= 0) fits.emplace_back("the phi0 check's first answer", &best);
    for (std::size_t k = 0; k < restarts.size(); ++k) {
      if (static_cast<int>(k) == chosen_k) continue;
      fits.emplace_back(fmt::format("the phi0 check's restart from phi0 = {:.6g}", values[k]),
                        &restarts[k]);
    }
    NoteEquivalentPhi0(ctx, chosen, fits, chosen.final_chi2, 1);
  } else if (chosen_k < 0 && row_screen->reference_fit) {
    for (std::size_t k = 0; k < row_screen->fits.size(); ++k) {
      fits.emplace_back(fmt::format("the phi0 check's row fit from phi0 = {:.6g}", values.at(k)),
                        &row_screen->fits[k]);
    }
    NoteEquivalentPhi0(ctx, chosen, fits, row_screen->reference, row_screen->stride);
  }
  if (chosen_k < 0) {
    ctx.actions.push_back(fmt::format(
        "phi0 check: {} restart(s) from phi0 = {} {}found no lower minimum than {} (phi0 {:.6g})",
        values.size(), fmt::join(values, ", "), screened, ctx.Named(best.final_chi2), best.x[i]));
    logger.Info("NLSQ phi0 check: no restart found a lower minimum; the answer stands");
  } else {
    const bool lower = Lower(chosen, best);
    ctx.Note(fmt::format("phi0 check: {}the restart from phi0 = {:.6g} ended {} at {} (phi0 "
                         "{:.6g}) against {} at {:.12g} (phi0 {:.6g}): {}",
                         screened, values[chosen_k], ToString(chosen.termination),
                         ctx.Named(chosen.final_chi2), chosen.x[i], ToString(best.termination),
                         best.final_chi2, best.x[i],
                         lower ? "a lower minimum; the first answer was not the minimum"
                               : "the same minimum, now converged"),
             /*warn=*/lower);
  }
  return chosen;
}

nlsq::SolverSummary RestartAfterStall(PipelineContext& ctx, const nlsq::SolverSummary& stalled) {
  nlsq::XpcsFitSession& session = ctx.session;
  const Logger& logger = ctx.logger;
  const int n_starts = ctx.recovery.stall_starts;
  const std::uint64_t seed = ctx.recovery.seed;
  const auto starts = StallRestartStarts(session, n_starts, seed);
  if (const int stride = RecoveryRowStride(ctx); stride > 1) {
    // Every start's row fit costs 1/stride of a full one: all of them are fitted, where the
    // full check fits only the lowest half by the value at the start.
    logger.Info("NLSQ stall recovery: {} Latin-hypercube starts (seed {}) fitted on rows first",
                n_starts, seed);
    const RowScreen screen = ScreenOnRows(ctx, stalled, starts, stride);
    logger.Info("NLSQ stall recovery: {}", screen.Describe());
    FullFits full = SolveKept(ctx, stalled, screen, "stall_restart");
    const std::string why = WhyRestart(session, stalled);
    if (full.chosen_index < 0) {
      ctx.Note(fmt::format(
          "restarts (the local fit {}, {}): {}; {} local fit(s) from them found no lower minimum",
          why, ctx.Named(stalled.final_chi2), screen.Describe(), full.fits));
    } else {
      ctx.Note(fmt::format(
          "restarts (the local fit {}, {}): {}; the fit from Latin-hypercube start {} of {} ended "
          "{} at {}",
          why, ctx.Named(stalled.final_chi2), screen.Describe(), full.chosen_index, n_starts,
          ToString(full.chosen.termination), ctx.Named(full.chosen.final_chi2)));
    }
    return full.chosen;
  }
  std::vector<double> chi2;
  session.Chi2Batch(starts, chi2);
  std::vector<int> order(starts.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](int i) { return std::isfinite(chi2[i]) ? chi2[i] : HUGE_VAL; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  const int keep = std::min(n_starts, std::max(3, n_starts / 2));
  logger.Info(
      "NLSQ stall recovery: local fits from the {} lowest by {} of {} Latin-hypercube starts "
      "(seed {})",
      keep, ctx.Objective(), n_starts, seed);
  nlsq::SolverSummary chosen = stalled;
  int chosen_k = -1;
  for (int k = 0; k < keep; ++k) {
    nlsq::SolverSummary s =
        session.Solve(starts[order[k]], ctx.progress,
                      checkpoint::InSubfolder(ctx.checkpoints, fmt::format("stall_restart_{}", k)));
    const std::string objective = model::ObjectiveName(session.problem_loss());
    logger.Info("NLSQ stall recovery: start {} ({} {:.6g}): {} at {} {:.12g}", order[k], objective,
                chi2[order[k]], ToString(s.termination), objective, s.final_chi2);
    if (Better(s, chosen)) {
      chosen = std::move(s);
      chosen_k = k;
    }
  }
  const std::string why = WhyRestart(session, stalled);
  if (chosen_k < 0) {
    ctx.Note(fmt::format(
        "restarts (the local fit {}, {}): {} local fit(s) from Latin-hypercube starts found no "
        "lower minimum",
        why, ctx.Named(stalled.final_chi2), keep));
  } else {
    ctx.Note(fmt::format(
        "restarts (the local fit {}, {}): the fit from Latin-hypercube start {} of {} ended {} at "
        "{}",
        why, ctx.Named(stalled.final_chi2), order[chosen_k], n_starts, ToString(chosen.termination),
        ctx.Named(chosen.final_chi2)));
  }
  return chosen;
}

}  // namespace homodyne::global
