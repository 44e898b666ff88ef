#include "global/fit_pipeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/key_paths.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "global/anti_degeneracy.h"
#include "global/latin_hypercube.h"
#include "global/start_screen.h"
#include "model/heterodyne_symmetry.h"
#include "parallel/collective.h"

namespace homodyne::global {
namespace {

// A restart replaces the incumbent when it ends lower by more than a converged fit's
// distance to its own minimum (the Gauss–Newton decrement test stops within about ftol =
// 1e-8 of it, relative): the same minimum reached again is not a new answer. A converged
// restart also replaces a stalled incumbent at the same χ² (to rounding): the label then
// tells the truth about that point.
constexpr double kLowerMinimumRelTol = 1e-6;
constexpr double kSameChi2RelTol = 1e-9;

// The scans' χ² grids on large data: every stride-th row (each with every lag) above this many
// points, as the CMA-ES search does.
constexpr std::int64_t kScanMaxPoints = 200000;

bool Usable(const nlsq::SolverSummary& s) { return s.IsUsable() && std::isfinite(s.final_chi2); }

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

RecoveryOptions RecoveryOptions::FromConfig(const config::NlsqRecovery& r) {
  RecoveryOptions o;
  o.on_stall = r.on_stall;
  o.stall_starts = r.stall_starts;
  o.phi0_restarts = r.phi0_restarts;
  o.mirror_check = r.mirror_check;
  o.velocity_scan = r.velocity_scan;
  o.transport_scan = r.transport_scan;
  o.start_screen = r.start_screen;
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
}

std::vector<double> Phi0RestartValues(double lo, double hi, int n) {
  std::vector<double> v;
  for (int k = 0; k < n; ++k) v.push_back(lo + (hi - lo) * (k + 0.5) / n);
  return v;
}

nlsq::SolverSummary CheckPhi0Basins(
    nlsq::XpcsFitSession& session, const nlsq::SolverSummary& best, int n_restarts,
    const std::optional<checkpoint::CheckpointSettings>& checkpoints, const Logger& logger,
    bool progress, std::vector<std::string>& actions) {
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
  for (std::size_t k = 0; k < values.size(); ++k) {
    std::vector<double> start = best.x;
    start[i] = values[k];
    nlsq::SolverSummary s = session.Solve(
        start, progress, checkpoint::InSubfolder(checkpoints, fmt::format("phi0_restart_{}", k)));
    logger.Info("NLSQ phi0 check: from phi0 {:.6g}: {} at {} {:.12g}, phi0 {:.6g}", values[k],
                ToString(s.termination), model::ObjectiveName(session.problem_loss()), s.final_chi2,
                s.x.empty() ? std::nan("") : s.x[i]);
    if (Better(s, chosen)) {
      chosen = std::move(s);
      chosen_k = static_cast<int>(k);
    }
  }
  if (chosen_k < 0) {
    actions.push_back(fmt::format(
        "phi0 check: {} restart(s) from phi0 = {} found no lower minimum than chi2 {:.12g} (phi0 "
        "{:.6g})",
        values.size(), fmt::join(values, ", "), best.final_chi2, best.x[i]));
    logger.Info("NLSQ phi0 check: no restart found a lower minimum; the answer stands");
  } else {
    const bool lower = Lower(chosen, best);
    actions.push_back(fmt::format(
        "phi0 check: the restart from phi0 = {:.6g} ended {} at chi2 {:.12g} (phi0 {:.6g}) against "
        "{} at {:.12g} (phi0 {:.6g}): {}",
        values[chosen_k], ToString(chosen.termination), chosen.final_chi2, chosen.x[i],
        ToString(best.termination), best.final_chi2, best.x[i],
        lower ? "a lower minimum; the first answer was not the minimum"
              : "the same minimum, now converged"));
    if (lower) {
      logger.Warn("NLSQ {}", actions.back());
    } else {
      logger.Info("NLSQ {}", actions.back());
    }
  }
  return chosen;
}

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
                                            const std::vector<double>& x) {
  namespace het = model::heterodyne::het;
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent) return {};
  const std::vector<double> e = session.layout().Expand(x);
  const model::ExpandedIndex& ex = session.layout().expanded_index();
  const auto p = [&](int k) { return e[static_cast<std::size_t>(ex.phys(k))]; };
  const bool same_transport = p(het::kD0Ref) == p(het::kD0Sample) &&
                              p(het::kAlphaRef) == p(het::kAlphaSample) &&
                              p(het::kDOffsetRef) == p(het::kDOffsetSample);
  const bool half = (p(het::kF1) == 0.0 || p(het::kF0) == 0.0) && p(het::kF0) + p(het::kF3) == 0.5;
  if (!same_transport || !half) return {};
  // Moves x[name] by `by` inside the box; false if it cannot move (held or at the bound).
  const auto move = [&](std::vector<double>& y, const char* name, double by) {
    const int i = session.ParameterIndex(name);
    if (i < 0) return false;
    const auto k = static_cast<std::size_t>(i);
    const double before = y[k];
    y[k] = std::clamp(before + by, session.lower()[k], session.upper()[k]);
    return y[k] != before;
  };
  std::vector<OffMirrorStart> out;
  std::vector<double> fraction = x;
  if (move(fraction, "f3", 0.05) || move(fraction, "f0", 0.05)) {
    out.push_back({"the sample fraction 0.55", "off_mirror", std::move(fraction)});
  }
  std::vector<double> exponents = x;
  if (move(exponents, "alpha_ref", -0.1) && move(exponents, "alpha_sample", 0.1)) {
    out.push_back({"the exponents split (alpha_ref - 0.1, alpha_sample + 0.1)",
                   "off_mirror_exponents", std::move(exponents)});
  }
  return out;
}

std::vector<double> ScalingFittedStart(nlsq::XpcsFitSession& session, const std::vector<double>& x0,
                                       const Logger& logger) {
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent) return x0;
  const std::size_t n_scaling = x0.size() - static_cast<std::size_t>(session.num_physical());
  if (n_scaling == 0) return x0;
  std::vector<bool> free(x0.size(), false);
  std::fill(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(n_scaling), true);
  // c2 is linear in contrast and offset: a few Gauss-Newton steps solve them exactly.
  constexpr int kMaxIterations = 20;
  constexpr double kFtol = 1e-10;
  const nlsq::SolverSummary s = session.SolvePart(x0, free, {}, kMaxIterations, kFtol);
  if (!s.IsUsable() || s.x.size() != x0.size()) return x0;
  logger.Info(
      "NLSQ: per-angle scaling of the start fitted with the physics held: chi2 {:.12g} -> "
      "{:.12g}",
      s.initial_chi2, s.final_chi2);
  return s.x;
}

nlsq::SolverSummary TwoStagePath(nlsq::XpcsFitSession& session, const nlsq::SolverSummary& plain,
                                 const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                                 const Logger& logger, bool progress,
                                 std::vector<std::string>& actions,
                                 nlsq::AntiDegeneracyReport& report) {
  report.hierarchical_active = true;
  report.inactive_reason.clear();
  report.two_stage_stages = 2;
  report.plain_chi_squared = plain.final_chi2;
  const std::vector<double>& x0 = session.x0();
  const auto n_phys = static_cast<std::size_t>(session.num_physical());
  const auto first_physical = static_cast<std::ptrdiff_t>(x0.size() - n_phys);
  logger.Info(
      "NLSQ two-stage path: stage 1, the physics from the configured start with every angle's "
      "scaling held at the quantile estimates");
  const nlsq::SolverSummary s1 =
      session.SolveQuantileScaling(std::vector<double>(x0.begin() + first_physical, x0.end()),
                                   progress, checkpoint::InSubfolder(checkpoints, "two_stage_1"));
  report.stage1_chi_squared = s1.final_chi2;
  if (!s1.IsUsable() || s1.x.size() != n_phys) {
    report.selected = "plain";
    actions.push_back(fmt::format("two-stage path: stage 1 ended {} ({}); the plain fit is kept",
                                  ToString(s1.termination), s1.message));
    logger.Warn("NLSQ {}", actions.back());
    return plain;
  }
  std::vector<double> base = x0;
  std::copy(s1.x.begin(), s1.x.end(), base.begin() + first_physical);
  logger.Info("NLSQ two-stage path: stage 1 ended {} at {} {:.12g}; stage 2, the joint fit",
              ToString(s1.termination), model::ObjectiveName(session.problem_loss()),
              s1.final_chi2);
  nlsq::SolverSummary s2 = session.Solve(ScalingFittedStart(session, base, logger), progress,
                                         checkpoint::InSubfolder(checkpoints, "two_stage_2"));
  report.stage_chi_squared = s2.final_chi2;
  report.stage2_chi_squared = session.scaling_penalty().active() && s2.IsUsable()
                                  ? session.DataChi2At(s2.x)
                                  : s2.final_chi2;
  const bool better = Better(s2, plain);
  report.selected = better ? "hierarchical" : "plain";
  actions.push_back(fmt::format(
      "two-stage path: stage 1 (scaling held at the quantile estimates) ended {} at chi2 "
      "{:.12g}, stage 2 (the joint fit) {} at {:.12g} against the plain fit's {} at {:.12g}: {}",
      ToString(s1.termination), s1.final_chi2, ToString(s2.termination), s2.final_chi2,
      ToString(plain.termination), plain.final_chi2,
      better ? "stage 2 kept" : "the plain fit kept"));
  logger.Info("NLSQ {}", actions.back());
  return better ? s2 : plain;
}

std::vector<double> TransportScanRates(double q, double dt, std::int64_t n_times) {
  std::vector<double> rates;
  if (!(q > 0.0) || !(dt > 0.0) || n_times < 2) return rates;
  const double q2 = q * q;
  const double t_end = dt * static_cast<double>(n_times);
  const double d_lo = 1.0 / (10.0 * q2 * t_end);
  const double d_hi = 1.0 / (q2 * dt);
  const double step = std::numbers::sqrt2;
  const int n = static_cast<int>(std::floor(std::log(d_hi / d_lo) / std::log(step) + 1e-9)) + 1;
  for (int k = 0; k < n; ++k) rates.push_back(d_lo * std::pow(step, k));
  return rates;
}

std::vector<double> ScanTransport(nlsq::XpcsFitSession& session, const std::vector<double>& start,
                                  double q, double dt, bool velocity_configured,
                                  const Logger& logger, std::vector<std::string>& actions) {
  const int ir = session.ParameterIndex("D0_ref");
  const int is = session.ParameterIndex("D0_sample");
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent || ir < 0 || is < 0) {
    return start;
  }
  const auto r = static_cast<std::size_t>(ir), s = static_cast<std::size_t>(is);
  // Only a start with one transport for both populations, which the scan keeps.
  if (start[r] != start[s]) return start;
  std::vector<double> rates = TransportScanRates(q, dt, session.time_points());
  if (rates.empty()) return start;
  rates.push_back(start[r]);  // the start's own rate competes
  // The velocity of the registry's start (v0 = 1e3, v_beta = 1) is a guess across the cross
  // term's fringes (the velocity scan's reason): its cos θ, wildly oscillating over the grid,
  // would add to χ² the most where the decay is slow and push the scan towards rates that
  // damp it. The scan therefore sees the decays alone, with the velocity at 0 (θ = 0).
  std::vector<double> base = start;
  if (!velocity_configured) {
    for (const char* name : {"v0", "v_offset"}) {
      const int i = session.ParameterIndex(name);
      if (i < 0) continue;
      const auto k = static_cast<std::size_t>(i);
      base[k] = std::clamp(0.0, session.lower()[k], session.upper()[k]);
    }
  }
  std::vector<std::vector<double>> points;
  for (const double d : rates) {
    std::vector<double> x = base;
    x[r] = std::clamp(d, session.lower()[r], session.upper()[r]);
    x[s] = std::clamp(d, session.lower()[s], session.upper()[s]);
    points.push_back(std::move(x));
  }
  std::vector<double> chi2;
  const int stride = SearchRowStride(session, kScanMaxPoints);
  session.Chi2BatchOnRows(points, chi2, stride);
  std::size_t best = points.size() - 1;  // the start's
  for (std::size_t k = 0; k + 1 < points.size(); ++k) {
    if (std::isfinite(chi2[k]) && !(chi2[k] >= chi2[best])) best = k;
  }
  std::vector<double> out = start;
  out[r] = points[best][r];
  out[s] = points[best][s];
  actions.push_back(fmt::format(
      "transport scan: chi2 of {} shared rates D0_ref = D0_sample from {:.6g} to {:.6g} and the "
      "start's {:.6g}{}{}: the lowest at {:.6g} (chi2 {:.12g}; the start's {:.12g}){}",
      rates.size() - 1, rates.front(), rates[rates.size() - 2], start[r],
      velocity_configured ? "" : ", the velocity at 0",
      stride > 1 ? fmt::format(", on every {}th row", stride) : std::string(), out[r], chi2[best],
      chi2[points.size() - 1],
      out[r] == start[r] ? ", the start's rate stands" : ", where the paths start first"));
  logger.Info("NLSQ {}", actions.back());
  return out;
}

std::vector<std::vector<double>> VelocityScanPoints(const nlsq::XpcsFitSession& session,
                                                    const std::vector<double>& base, double q,
                                                    double dt) {
  const int iv = session.ParameterIndex("v0");
  const int ib = session.ParameterIndex("v_beta");
  std::vector<std::vector<double>> points;
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent || iv < 0 || ib < 0 ||
      !(q > 0.0) || !(dt > 0.0) || session.time_points() < 2) {
    return points;
  }
  const auto v = static_cast<std::size_t>(iv), b = static_cast<std::size_t>(ib);
  const double t_end = dt * static_cast<double>(session.time_points());
  const double v_lo = std::numbers::pi / (10.0 * q * t_end);
  const double v_hi = std::numbers::pi / (q * dt);
  constexpr double kStep = 1.03;
  const int n_v = static_cast<int>(std::ceil(std::log(v_hi / v_lo) / std::log(kStep))) + 1;
  constexpr int kBetas = 4;
  for (int kb = 0; kb < kBetas; ++kb) {
    const double beta =
        session.lower()[b] + (session.upper()[b] - session.lower()[b]) * kb / (kBetas - 1);
    // Mean of t^beta over (0, T]: T^beta / (1 + beta); beta ≤ −1 has no finite mean, so the
    // value at the window's end stands in.
    const double mean_power =
        beta > -1.0 + 1e-9 ? std::pow(t_end, beta) / (1.0 + beta) : std::pow(t_end, beta);
    for (int kv = 0; kv < n_v; ++kv) {
      const double v0 = v_lo * std::pow(kStep, kv) / mean_power;
      std::vector<double> x = base;
      x[b] = beta;
      x[v] = std::clamp(v0, session.lower()[v], session.upper()[v]);
      points.push_back(std::move(x));
    }
  }
  return points;
}

nlsq::SolverSummary ScanVelocity(nlsq::XpcsFitSession& session, const std::vector<double>& start,
                                 const nlsq::SolverSummary& configured, double q, double dt,
                                 int keep,
                                 const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                                 const Logger& logger, bool progress,
                                 std::vector<std::string>& actions) {
  // Around the start and around its local fit's answer: at the start the other
  // parameters are the registry's; at the answer they have adapted to its fringe (the
  // transport damping a cross term that does not match), so each finds fringes the other
  // misses.
  std::vector<std::vector<double>> points = VelocityScanPoints(session, start, q, dt);
  if (points.empty()) return configured;
  const std::size_t n_first = points.size();
  if (configured.IsUsable() && configured.x.size() == start.size() && configured.x != start) {
    auto more = VelocityScanPoints(session, configured.x, q, dt);
    points.insert(points.end(), more.begin(), more.end());
  }
  const int stride = SearchRowStride(session, kScanMaxPoints);
  std::vector<double> chi2;
  session.Chi2BatchOnRows(points, chi2, stride);
  // The `keep` lowest of each grid.
  const auto key = [&](std::size_t i) { return std::isfinite(chi2[i]) ? chi2[i] : HUGE_VAL; };
  std::vector<std::size_t> order;
  for (const auto& [from, to] :
       {std::pair{std::size_t{0}, n_first}, std::pair{n_first, points.size()}}) {
    std::vector<std::size_t> part(to - from);
    std::iota(part.begin(), part.end(), from);
    std::stable_sort(part.begin(), part.end(),
                     [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    part.resize(std::min<std::size_t>(part.size(), static_cast<std::size_t>(keep)));
    order.insert(order.end(), part.begin(), part.end());
  }
  const int iv = session.ParameterIndex("v0");
  const int ib = session.ParameterIndex("v_beta");
  const int n_fits = static_cast<int>(order.size());
  logger.Info(
      "NLSQ velocity scan: chi2 of {} (v0, v_beta) points around the start{}{}; local fits "
      "from the {} lowest of each",
      points.size(), points.size() > n_first ? " and its local fit" : "",
      stride > 1 ? fmt::format(" on every {}th row", stride) : std::string(), keep);
  nlsq::SolverSummary chosen = configured;
  int chosen_k = -1;
  for (int k = 0; k < n_fits; ++k) {
    const auto& x = points[order[static_cast<std::size_t>(k)]];
    // From the point's own fitted scaling, as every other path starts. With the start's
    // quantile scaling the first gradient is dominated by the scaling's misfit, and at the
    // grid's slowest velocities every step it gives, however damped, clips v0 to its bound
    // 0, where the cross term's phase is stationary in v (it enters through a cosine), so
    // the model stops responding to v0 to first order and the Levenberg-Marquardt plateau
    // rule rejected the step: the scan's local fits made 0 iterations and ended "stalled"
    // at the scan point's chi2 (4-angle two-component template case, 2.6e7 against 1.8e5).
    nlsq::SolverSummary s =
        session.Solve(ScalingFittedStart(session, x, logger), progress,
                      checkpoint::InSubfolder(checkpoints, fmt::format("velocity_scan_{}", k)));
    logger.Info("NLSQ velocity scan: from v0 {:.6g}, v_beta {:.6g}: {} at {} {:.12g}", x[iv], x[ib],
                ToString(s.termination), model::ObjectiveName(session.problem_loss()),
                s.final_chi2);
    if (Better(s, chosen)) {
      chosen = std::move(s);
      chosen_k = k;
    }
  }
  if (chosen_k < 0) {
    actions.push_back(fmt::format(
        "velocity scan: {} local fit(s) from the lowest-chi2 (v0, v_beta) of {} found no lower "
        "minimum than the configured start's ({} at chi2 {:.12g})",
        n_fits, points.size(), ToString(configured.termination), configured.final_chi2));
  } else {
    const auto& x = points[order[static_cast<std::size_t>(chosen_k)]];
    actions.push_back(fmt::format(
        "velocity scan: the local fit from v0 {:.6g}, v_beta {:.6g} ended {} at chi2 {:.12g}, "
        "below the configured start's {} at {:.12g}: kept",
        x[iv], x[ib], ToString(chosen.termination), chosen.final_chi2,
        ToString(configured.termination), configured.final_chi2));
  }
  logger.Info("NLSQ {}", actions.back());
  return chosen;
}

nlsq::SolverSummary CheckMirrorBasin(
    nlsq::XpcsFitSession& session, const nlsq::SolverSummary& best, double dt,
    const std::optional<checkpoint::CheckpointSettings>& checkpoints, const Logger& logger,
    bool progress, std::vector<std::string>& actions) {
  namespace het = model::heterodyne::het;
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent || !best.IsUsable() ||
      best.x.empty()) {
    return best;
  }
  // The optimiser index of every physical parameter; the swap needs the transport and the
  // fraction's f0, f1, f3 free (a held one cannot take its partner's value).
  const auto& names = model::heterodyne::ParameterNames();
  const std::vector<double> expanded = session.layout().Expand(best.x);
  const model::ExpandedIndex& ex = session.layout().expanded_index();
  std::array<int, model::heterodyne::kNumPhysical> index{};
  std::vector<double> physical(names.size());
  for (std::size_t p = 0; p < names.size(); ++p) {
    const int pi = static_cast<int>(p);
    index[p] = session.ParameterIndex(names[p]);
    const bool needed =
        pi <= het::kDOffsetSample || pi == het::kF0 || pi == het::kF1 || pi == het::kF3;
    if (index[p] < 0 && needed) {
      logger.Info("NLSQ mirror check: skipped ({} is held)", names[p]);
      return best;
    }
    physical[p] = expanded[static_cast<std::size_t>(ex.phys(pi))];
  }
  std::vector<double> times(static_cast<std::size_t>(session.time_points()));
  for (std::size_t m = 0; m < times.size(); ++m) times[m] = dt * static_cast<double>(m + 1);
  const auto bounds = [&](int p) {
    const auto i = static_cast<std::size_t>(index[static_cast<std::size_t>(p)]);
    return std::array<double, 2>{session.lower()[i], session.upper()[i]};
  };
  const model::heterodyne::MirrorFraction fraction = model::heterodyne::MirrorSampleFraction(
      physical, times, bounds(het::kF0), bounds(het::kF1), bounds(het::kF3));
  const std::vector<double> mirror = model::heterodyne::MirrorParameters(physical, fraction);
  std::vector<double> start = best.x;
  for (std::size_t p = 0; p < names.size(); ++p) {
    if (index[p] < 0) continue;
    const auto i = static_cast<std::size_t>(index[p]);
    start[i] = std::clamp(mirror[p], session.lower()[i], session.upper()[i]);
  }
  logger.Info(
      "NLSQ mirror check: a local fit from the answer's reference<->sample mirror (chi2 "
      "{:.12g}; mirrored fraction RMS {:.3g})",
      best.final_chi2, fraction.rms);
  nlsq::SolverSummary s =
      session.Solve(start, progress, checkpoint::InSubfolder(checkpoints, "mirror"));
  const bool better = Better(s, best);
  const bool lower = Lower(s, best);
  actions.push_back(fmt::format(
      "mirror check: the fit from the reference<->sample mirror ended {} at chi2 {:.12g} against "
      "{} at {:.12g}: {}",
      ToString(s.termination), s.final_chi2, ToString(best.termination), best.final_chi2,
      !better ? "the answer stands"
      : lower ? "a lower minimum; the first answer was in the mirror's basin"
              : "the same minimum, now converged"));
  if (better && lower) {
    logger.Warn("NLSQ {}", actions.back());
  } else {
    logger.Info("NLSQ {}", actions.back());
  }
  return better ? s : best;
}

nlsq::SolverSummary RestartAfterStall(
    nlsq::XpcsFitSession& session, const nlsq::SolverSummary& stalled, int n_starts,
    std::uint64_t seed, const std::optional<checkpoint::CheckpointSettings>& checkpoints,
    const Logger& logger, bool progress, std::vector<std::string>& actions) {
  const auto starts = StallRestartStarts(session, n_starts, seed);
  std::vector<double> chi2;
  session.Chi2Batch(starts, chi2);
  std::vector<int> order(starts.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](int i) { return std::isfinite(chi2[i]) ? chi2[i] : HUGE_VAL; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  const int keep = std::min(n_starts, std::max(3, n_starts / 2));
  logger.Info(
      "NLSQ stall recovery: local fits from the {} lowest-chi2 of {} Latin-hypercube starts "
      "(seed {})",
      keep, n_starts, seed);
  nlsq::SolverSummary chosen = stalled;
  int chosen_k = -1;
  for (int k = 0; k < keep; ++k) {
    nlsq::SolverSummary s =
        session.Solve(starts[order[k]], progress,
                      checkpoint::InSubfolder(checkpoints, fmt::format("stall_restart_{}", k)));
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
    actions.push_back(fmt::format(
        "restarts (the local fit {}, chi2 {:.12g}): {} local fit(s) from Latin-hypercube starts "
        "found no lower minimum",
        why, stalled.final_chi2, keep));
  } else {
    actions.push_back(fmt::format(
        "restarts (the local fit {}, chi2 {:.12g}): the fit from Latin-hypercube start {} of {} "
        "ended {} at chi2 {:.12g}",
        why, stalled.final_chi2, order[chosen_k], n_starts, ToString(chosen.termination),
        chosen.final_chi2));
  }
  logger.Info("NLSQ {}", actions.back());
  return chosen;
}

nlsq::NlsqRunResult RunNlsqPipeline(const Comm& comm, const config::Config& cfg,
                                    const nlsq::NlsqRunOptions& options, const Logger& logger) {
  const auto global = RunCollectively(
      comm, [&] { return GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes); });
  const auto recovery = RunCollectively(
      comm, [&] { return RecoveryOptions::FromConfig(cfg.optimization.nlsq.recovery); });
  const auto anti_degeneracy = RunCollectively(comm, [&] {
    return AntiDegeneracyOptions::FromConfig(cfg.optimization.nlsq.anti_degeneracy);
  });
  const GlobalSelection selection = SelectGlobalStage(cfg, global);
  const bool progress = options.print_progress;

  nlsq::XpcsFitSession session(comm, cfg, options, logger);
  std::vector<std::string> actions;
  std::optional<nlsq::GlobalSearchReport> global_report;
  double cmaes_seconds = 0.0;

  // The mirror check (phase 4; two_component). auto: a configured transport is the user's
  // labelling of the populations; the check costs a full local fit (on 23 angles x 1000
  // frames 5x the main one).
  bool transport_configured = false;
  if (cfg.analysis_mode == model::AnalysisMode::kTwoComponent) {
    for (int p = 0; p <= model::heterodyne::het::kDOffsetSample; ++p) {
      transport_configured = transport_configured ||
                             cfg.parameters.at(static_cast<std::size_t>(p)).initial_from_config;
    }
  }
  const bool mirror_check =
      recovery.mirror_check == RecoveryOptions::Mirror::kAlways ||
      (recovery.mirror_check == RecoveryOptions::Mirror::kAuto && !transport_configured);

  const bool two_component = session.layout().mode() == model::AnalysisMode::kTwoComponent;

  // Phase 1: the local fit from the configured start.
  std::optional<nlsq::SolverSummary> local;
  if (!selection.run || global.nlsq_warmstart) {
    if (selection.run) logger.Info("CMA-ES phase 1: local fit from the configured start");
    const ScopedFaultStage stage("local");
    // two_component: v0 from the registry default is a guess across the cross term's
    // fringes; a configured v0 is the user's start and is taken as it is.
    const int iv = session.ParameterIndex("v0");
    const bool v0_configured =
        two_component && cfg.parameters.at(static_cast<std::size_t>(model::heterodyne::het::kV0))
                             .initial_from_config;
    const bool scan = recovery.velocity_scan && iv >= 0 && !v0_configured;
    // The start's local fit, then the velocity scan around both.
    const auto path = [&](const std::vector<double>& x,
                          const std::optional<checkpoint::CheckpointSettings>& where) {
      const std::vector<double> start = ScalingFittedStart(session, x, logger);
      nlsq::SolverSummary fit = session.Solve(start, progress, where);
      if (!scan) return fit;
      const ScopedFaultStage scan_stage("velocity_scan");
      return ScanVelocity(session, x, fit, cfg.analyzer.wavevector_q, cfg.analyzer.dt, 2, where,
                          logger, progress, actions);
    };
    // The start's path and, for a start on the mirror-symmetric set (OffTheMirrorSet), the
    // paths from copies off it, the best answer kept. No path wins everywhere. On the
    // two-component recovery study (docs/model.md) the start's own path failed on 2 of 20
    // datasets after a change of the kernel's rounding, the fraction's on 4, the exponents'
    // on 1, and together, with each path's mirror check, on none.
    const auto paths = [&](const std::vector<double>& x0,
                           const std::optional<checkpoint::CheckpointSettings>& where) {
      nlsq::SolverSummary best = path(x0, where);
      for (OffMirrorStart& off : OffTheMirrorSet(session, x0)) {
        logger.Info(
            "NLSQ: the start (equal reference and sample transport, sample fraction 0.5) is its "
            "own reference<->sample mirror; another path starts with {}",
            off.what);
        const auto off_where = checkpoint::InSubfolder(where, off.subfolder);
        nlsq::SolverSummary other_path = path(off.x, off_where);
        const bool kept = Better(other_path, best);
        actions.push_back(fmt::format(
            "mirror-symmetric start: the path from {} ended {} at chi2 {:.12g} against {} at "
            "{:.12g}: {}",
            off.what, ToString(other_path.termination), other_path.final_chi2,
            ToString(best.termination), best.final_chi2,
            kept ? "kept" : "the answer so far stands"));
        logger.Info("NLSQ {}", actions.back());
        if (kept) std::swap(other_path, best);
        // The answer goes on to the mirror check of phase 4; every path not kept gets its
        // own here, since each can end in the minimum's mirror basin (tc001 of the study).
        if (mirror_check) {
          const ScopedFaultStage mirror_stage("mirror");
          nlsq::SolverSummary mirrored = CheckMirrorBasin(session, other_path, cfg.analyzer.dt,
                                                          off_where, logger, progress, actions);
          if (Better(mirrored, best)) best = std::move(mirrored);
        }
      }
      return best;
    };
    // The registry's transport (D0_ref = D0_sample = 1e4) is tied to no time scale of the
    // data either. Without a configured transport the paths start first from the transport
    // scan's shared rate; the registry's own start follows only when that answer is not
    // converged or is a misfit by the noise level (the quality verdict's rule), and the
    // better of the two goes on. Neither start wins everywhere: on the recovery study the
    // scan's alone missed the lowest chi2 on 3 of 20 datasets (tc007 converged at 62x), the
    // registry's alone on 2; from the registry's, the 4-angle template case of 150 frames
    // (tests/cli/test_two_component_template_plateau.sh) ended at 53x the noise floor.
    // The start screen first: its answer (after a velocity scan when the fit from the screen's
    // point is not acceptable) is taken when it converged and is no misfit by the noise level.
    // Otherwise the paths below run as well and the lowest answer goes on.
    std::optional<nlsq::SolverSummary> screened;
    if (two_component && recovery.start_screen && !transport_configured && !v0_configured) {
      const ScopedFaultStage screen_stage("start_screen");
      ScreenOutcome so =
          RunStartScreen(session, cfg, options.checkpoints, scan, logger, progress, actions);
      local = std::move(so.accepted);
      screened = std::move(so.other);
    }
    std::vector<double> scanned;
    if (local) {
      // The start screen's answer stands.
    } else if (two_component && recovery.transport_scan && !transport_configured) {
      const ScopedFaultStage transport_stage("transport_scan");
      scanned = ScanTransport(session, session.x0(), cfg.analyzer.wavevector_q, cfg.analyzer.dt,
                              v0_configured, logger, actions);
    }
    if (local) {
      // The start screen's answer stands.
    } else if (scanned.empty() || scanned == session.x0()) {
      local = paths(session.x0(), options.checkpoints);
    } else {
      const auto where = checkpoint::InSubfolder(options.checkpoints, "transport_scan");
      local = paths(scanned, where);
      const nlsq::XpcsFitSession::NoiseFit noise = session.NoiseFitAt(local->x);
      const bool accept =
          local->termination == lsq::Termination::kConverged && noise.measured && !noise.misfit();
      if (!accept) {
        const std::string why =
            local->termination != lsq::Termination::kConverged
                ? fmt::format("ended {}", ToString(local->termination))
            : !noise.measured
                ? std::string("cannot be judged against the noise level (not measurable)")
                : fmt::format(
                      "is a misfit (reduced chi2 {:.4g} in units of the noise level, "
                      ">= {:.4g})",
                      noise.reduced_chi2, noise.misfit_threshold);
        logger.Info(
            "NLSQ: the answer from the transport scan's rate (chi2 {:.12g}) {}; the paths from "
            "the registry's start follow",
            local->final_chi2, why);
        nlsq::SolverSummary registry = paths(session.x0(), options.checkpoints);
        const bool kept = Better(registry, *local);
        actions.push_back(fmt::format(
            "transport scan: the answer from its rate {} at chi2 {:.12g} {}; the registry's start "
            "ended {} at {:.12g}: {}",
            ToString(local->termination), local->final_chi2, why, ToString(registry.termination),
            registry.final_chi2, kept ? "the registry's kept" : "the scan's kept"));
        logger.Info("NLSQ {}", actions.back());
        if (kept) std::swap(registry, *local);
        if (mirror_check) {
          const ScopedFaultStage mirror_stage("mirror");
          nlsq::SolverSummary mirrored =
              CheckMirrorBasin(session, registry, cfg.analyzer.dt,
                               checkpoint::InSubfolder(options.checkpoints, "other_start"), logger,
                               progress, actions);
          if (Better(mirrored, *local)) local = std::move(mirrored);
        }
      }
    }
    if (screened && Better(*screened, *local)) {
      actions.push_back(fmt::format(
          "start screen: its answer ({} at chi2 {:.12g}) is below the other paths' ({} at "
          "{:.12g}): kept",
          ToString(screened->termination), screened->final_chi2, ToString(local->termination),
          local->final_chi2));
      logger.Info("NLSQ {}", actions.back());
      local = std::move(screened);
    }
  }

  // Phase 1b: the anti-degeneracy stage, a second path from the same start. By default only
  // after a plain fit that is suspect by the restarts' rule (below): after a converged answer
  // inside the box it cost tens of local fits where it was measured (23 angles x 1000
  // frames: 22 s beside a 0.8 s fit) and kept the plain answer. two_component's two stages
  // run only when hierarchical.enable is written (HierarchicalInactiveReason): on its
  // recovery study they never improved a final answer (docs/global.md).
  nlsq::AntiDegeneracyReport adr;
  adr.inactive_reason = HierarchicalInactiveReason(cfg, session);
  if (adr.inactive_reason.empty() && !local) adr.inactive_reason = "no local fit to compare with";
  if (adr.inactive_reason.empty() && !anti_degeneracy.always && !Suspect(session, *local)) {
    adr.inactive_reason =
        "the plain fit converged with no physical parameter at a bound (hierarchical.trigger: "
        "suspect)";
  }
  if (adr.inactive_reason.empty() && two_component) {
    const ScopedFaultStage stage("hierarchical");
    local = TwoStagePath(session, *local, options.checkpoints, logger, progress, actions, adr);
  } else if (adr.inactive_reason.empty()) {
    const ScopedFaultStage stage("hierarchical");
    const std::vector<double> xh =
        RunHierarchicalStage(session, session.x0(), anti_degeneracy, logger, adr);
    nlsq::SolverSummary joint =
        session.Solve(xh, progress, checkpoint::InSubfolder(options.checkpoints, "hierarchical"));
    adr.stage_chi_squared = joint.final_chi2;
    adr.plain_chi_squared = local->final_chi2;
    if (Better(joint, *local)) {
      adr.selected = "hierarchical";
      actions.push_back(fmt::format(
          "anti-degeneracy: the joint fit after the hierarchical stage ended {} at chi2 {:.12g}, "
          "below the plain fit's {} at {:.12g}: kept",
          ToString(joint.termination), joint.final_chi2, ToString(local->termination),
          local->final_chi2));
      logger.Info("NLSQ {}", actions.back());
      local = std::move(joint);
    } else {
      adr.selected = "plain";
      logger.Info(
          "NLSQ anti-degeneracy: the joint fit after the hierarchical stage ended {} at chi2 "
          "{:.12g}; the plain fit ({} at {:.12g}) is kept",
          ToString(joint.termination), joint.final_chi2, ToString(local->termination),
          local->final_chi2);
    }
  }

  // Phase 2: the global stage as configured, or the recovery after a stall.
  nlsq::SolverSummary answer;
  // Restarts after a stall, and after a converged answer with a physical parameter at a
  // bound of the box: those are where the recovery studies found the remaining local
  // minima labelled converged (gamma_dot_t_offset at -0.1 with D_offset far below zero).
  const bool stalled = local && local->termination != lsq::Termination::kConverged;
  // two_component: no box restarts. Over the 20 datasets of its recovery study they found a
  // lower minimum in 0 of 19 rounds, and on 23 angles x 1000 frames each round costs 5 full
  // local fits; the velocity scan and the mirror check are this mode's global steps.
  if (!selection.run && local && Suspect(session, *local) &&
      recovery.on_stall == StallRecovery::kRestarts && two_component) {
    actions.push_back(fmt::format(
        "no restarts from the box after the local fit {} (chi2 {:.12g}): two_component uses the "
        "velocity scan and the mirror check instead",
        WhyRestart(session, *local), local->final_chi2));
    logger.Info("NLSQ {}", actions.back());
    answer = *local;
  } else if (!selection.run && local && Suspect(session, *local) &&
             recovery.on_stall == StallRecovery::kRestarts) {
    logger.Warn(
        "NLSQ: the local fit {} (chi2 {:.12g}); restarting from the box "
        "(optimization.nlsq.recovery.on_stall: restarts)",
        WhyRestart(session, *local), local->final_chi2);
    const ScopedFaultStage stage("restarts");
    answer = RestartAfterStall(session, *local, recovery.stall_starts, recovery.seed,
                               options.checkpoints, logger, progress, actions);
  } else if (selection.run || (stalled && recovery.on_stall == StallRecovery::kCmaes)) {
    if (!selection.run) {
      logger.Warn(
          "NLSQ: the local fit ended {} (chi2 {:.12g}); searching the box with the CMA-ES "
          "stage (optimization.nlsq.recovery.on_stall: cmaes)",
          ToString(local->termination), local->final_chi2);
    }
    nlsq::GlobalSearchReport rep;
    const ScopedFaultStage stage("global");
    answer = RunGlobalStage(session, global, selection.scale_ratio, local, options.checkpoints,
                            logger, progress, rep, cmaes_seconds);
    if (!selection.run) {
      actions.push_back(fmt::format(
          "global search after a {} local fit (chi2 {:.12g}): {} at chi2 {:.12g}, kept {}",
          ToString(local->termination), local->final_chi2, rep.convergence_reason,
          rep.cmaes_chi_squared, rep.selected));
    }
    global_report = rep;
  } else {
    answer = *local;
  }

  // Phase 3: the phi0 check.
  {
    const ScopedFaultStage stage("phi0");
    answer = CheckPhi0Basins(session, answer, recovery.phi0_restarts, options.checkpoints, logger,
                             progress, actions);
  }
  // Phase 4: the mirror check (two_component).
  if (mirror_check) {
    const ScopedFaultStage stage("mirror");
    answer = CheckMirrorBasin(session, answer, cfg.analyzer.dt, options.checkpoints, logger,
                              progress, actions);
  }

  nlsq::NlsqRunResult r = session.Finish(answer);
  if (cmaes_seconds > 0.0) r.phases.Add("cmaes", cmaes_seconds);
  r.report.global_search = global_report;
  r.report.recovery_actions = actions;
  r.report.anti_degeneracy = adr;
  for (const auto& w : r.report.quality_warnings) logger.Warn("{}", w);
  for (const auto& w : r.report.degeneracy.warnings) logger.Warn("{}", w);
  return r;
}

}  // namespace homodyne::global
