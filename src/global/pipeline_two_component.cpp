#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <numeric>

#include <fmt/format.h>

#include "global/pipeline_context.h"
#include "global/pipeline_stages.h"
#include "model/heterodyne_symmetry.h"
#include "nlsq/row_subsets.h"

// two_component's own steps of the NLSQ pipeline: the paths off the mirror-symmetric start,
// the scaling fitted before a local fit, the two-stage path, the transport and velocity scans
// and the mirror check.
namespace homodyne::global {
namespace {

// The scans' χ² grids on large data: every stride-th row above nlsq::kScanMaxPoints points.
using nlsq::kScanMaxPoints;

}  // namespace

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
      "NLSQ: per-angle scaling of the start fitted with the physics held: {} {:.12g} -> {:.12g}",
      model::ObjectiveName(session.problem_loss()), s.initial_chi2, s.final_chi2);
  return s.x;
}

nlsq::SolverSummary TwoStagePath(PipelineContext& ctx, const nlsq::SolverSummary& plain) {
  nlsq::XpcsFitSession& session = ctx.session;
  const Logger& logger = ctx.logger;
  nlsq::AntiDegeneracyReport& report = ctx.anti_degeneracy_report;
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
  const nlsq::SolverSummary s1 = session.SolveQuantileScaling(
      std::vector<double>(x0.begin() + first_physical, x0.end()), ctx.progress,
      checkpoint::InSubfolder(ctx.checkpoints, "two_stage_1"));
  report.stage1_chi_squared = s1.final_chi2;
  if (!s1.IsUsable() || s1.x.size() != n_phys) {
    report.selected = "plain";
    ctx.Note(fmt::format("two-stage path: stage 1 ended {} ({}); the plain fit is kept",
                         ToString(s1.termination), s1.message),
             /*warn=*/true);
    return plain;
  }
  std::vector<double> base = x0;
  std::copy(s1.x.begin(), s1.x.end(), base.begin() + first_physical);
  logger.Info("NLSQ two-stage path: stage 1 ended {} at {} {:.12g}; stage 2, the joint fit",
              ToString(s1.termination), model::ObjectiveName(session.problem_loss()),
              s1.final_chi2);
  nlsq::SolverSummary s2 = session.Solve(ScalingFittedStart(session, base, logger), ctx.progress,
                                         checkpoint::InSubfolder(ctx.checkpoints, "two_stage_2"));
  report.stage_chi_squared = s2.final_chi2;
  report.stage2_chi_squared = session.scaling_penalty().active() && s2.IsUsable()
                                  ? session.DataChi2At(s2.x)
                                  : s2.final_chi2;
  const bool better = Better(s2, plain);
  report.selected = better ? "hierarchical" : "plain";
  ctx.Note(fmt::format(
      "two-stage path: stage 1 (scaling held at the quantile estimates) ended {} at {}, stage 2 "
      "(the joint fit) {} at {:.12g} against the plain fit's {} at {:.12g}: {}",
      ToString(s1.termination), ctx.Named(s1.final_chi2), ToString(s2.termination), s2.final_chi2,
      ToString(plain.termination), plain.final_chi2,
      better ? "stage 2 kept" : "the plain fit kept"));
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

std::vector<double> ScanTransport(PipelineContext& ctx, const std::vector<double>& start) {
  nlsq::XpcsFitSession& session = ctx.session;
  const double q = ctx.cfg.analyzer.wavevector_q;
  const double dt = ctx.cfg.analyzer.dt;
  const bool velocity_configured = ctx.v0_configured;
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
  ctx.Note(fmt::format(
      "transport scan: {} of {} shared rates D0_ref = D0_sample from {:.6g} to {:.6g} and the "
      "start's {:.6g}{}{}: the lowest at {:.6g} ({}; the start's {:.12g}){}",
      ctx.Objective(), rates.size() - 1, rates.front(), rates[rates.size() - 2], start[r],
      velocity_configured ? "" : ", the velocity at 0",
      stride > 1 ? fmt::format(", on every {}th row", stride) : std::string(), out[r],
      ctx.Named(chi2[best]), chi2[points.size() - 1],
      out[r] == start[r] ? ", the start's rate stands" : ", where the paths start first"));
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
  const std::string objective = model::ObjectiveName(session.problem_loss());
  logger.Info(
      "NLSQ velocity scan: {} of {} (v0, v_beta) points around the start{}{}; local fits from "
      "the {} lowest of each",
      objective, points.size(), points.size() > n_first ? " and its local fit" : "",
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
                ToString(s.termination), objective, s.final_chi2);
    if (Better(s, chosen)) {
      chosen = std::move(s);
      chosen_k = k;
    }
  }
  if (chosen_k < 0) {
    actions.push_back(fmt::format(
        "velocity scan: {} local fit(s) from the lowest (v0, v_beta) by {} of {} found no lower "
        "minimum than the configured start's ({} at {} {:.12g})",
        n_fits, objective, points.size(), ToString(configured.termination), objective,
        configured.final_chi2));
  } else {
    const auto& x = points[order[static_cast<std::size_t>(chosen_k)]];
    actions.push_back(fmt::format(
        "velocity scan: the local fit from v0 {:.6g}, v_beta {:.6g} ended {} at {} {:.12g}, "
        "below the configured start's {} at {:.12g}: kept",
        x[iv], x[ib], ToString(chosen.termination), objective, chosen.final_chi2,
        ToString(configured.termination), configured.final_chi2));
  }
  logger.Info("NLSQ {}", actions.back());
  return chosen;
}

nlsq::SolverSummary CheckMirrorBasin(PipelineContext& ctx, const nlsq::SolverSummary& best,
                                     const Checkpoints& where) {
  nlsq::XpcsFitSession& session = ctx.session;
  const Logger& logger = ctx.logger;
  const double dt = ctx.cfg.analyzer.dt;
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
      "NLSQ mirror check: a local fit from the answer's reference<->sample mirror ({}; "
      "mirrored fraction RMS {:.3g})",
      ctx.Named(best.final_chi2), fraction.rms);
  nlsq::SolverSummary s =
      session.Solve(start, ctx.progress, checkpoint::InSubfolder(where, "mirror"));
  const bool better = Better(s, best);
  const bool lower = Lower(s, best);
  ctx.Note(fmt::format("mirror check: the fit from the reference<->sample mirror ended {} at {} "
                       "against {} at {:.12g}: {}",
                       ToString(s.termination), ctx.Named(s.final_chi2), ToString(best.termination),
                       best.final_chi2,
                       !better ? "the answer stands"
                       : lower ? "a lower minimum; the first answer was in the mirror's basin"
                               : "the same minimum, now converged"),
           /*warn=*/better && lower);
  return better ? s : best;
}

}  // namespace homodyne::global
