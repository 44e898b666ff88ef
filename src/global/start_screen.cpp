#include "global/start_screen.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/fault_injection.h"
#include "global/fit_pipeline.h"
#include "global/global_stage.h"
#include "model/robust_loss.h"
#include "nlsq/row_subsets.h"

namespace homodyne::global {
namespace {

// Rates D (Å²/s) whose decay time 1/(q²·D) runs from ten windows down to one frame, in
// factor-2 steps; mean velocities from a tenth of a half turn over the window to a half turn
// per frame in factor-kScreenVelocityStep steps.
constexpr double kScreenRateStep = 2.0;
constexpr double kScreenVelocityStep = 1.15;
// The lowest pairs of the coarse grid refined on the fine velocity grid and ranked again
// after their per-angle scaling is fitted, and of those the few that get a short fit. The
// coarse grid judges every point at the start's scaling, which suits no candidate: on tb025
// and tb022 of the broad study its lowest pairs were in a wrong basin.
constexpr int kScreenPairsRefined = 10;
constexpr int kScreenPairsKept = 3;
constexpr double kScreenFractionShift = 0.25;  // of the sample fraction, both ways
// The sloped fractions' ends: f_s from 0.25 to 0.75 over the window (rising) or back.
constexpr double kScreenSlopeLow = 0.25;
constexpr double kScreenSlopeHigh = 0.75;
// Rows per angle the screen's χ² sees. Each row carries every lag of its t1, so the decays and
// the cross term's fringes are all on it; on the broad study's data (100-200 frames) this is
// every 6th-12th row, and the screen's ~35 000 points cost what ~3 000 on all rows did. The
// searches' minimum rows per angle, which the memory plan counts for this screen too.
constexpr std::int64_t kScreenRows = nlsq::kMinRowSubsetRows;
// Iterations of each short fit from a screened point. They only have to show which basin the
// point is in; the full fit from the lowest follows.
constexpr int kScreenShortIterations = 100;

const auto kKey = [](double c) { return std::isfinite(c) ? c : HUGE_VAL; };

struct Indices {
  std::size_t r, s, v, b;
};

struct Grid {
  std::vector<std::pair<double, double>> pairs;  // (D0_ref, D0_sample)
  std::vector<std::vector<double>> points;
  std::vector<std::size_t> pair_of;      // the pair of each point
  std::vector<std::size_t> fraction_of;  // its sample fraction (of FractionVariants)
  std::size_t fractions = 0;
};

double MeanPower(double beta, double t_end) {
  // Mean of t^beta over (0, T]: T^beta / (1 + beta); beta ≤ −1 has no finite mean, so the
  // value at the window's end stands in.
  return beta > -1.0 + 1e-9 ? std::pow(t_end, beta) / (1.0 + beta) : std::pow(t_end, beta);
}

// The sample fractions the grid screens: the start's; f3 (or f0 if f3 is held) shifted by
// ± kScreenFractionShift; and, when f0 and f1 are free, a fraction rising from
// kScreenSlopeLow at t = 0 to kScreenSlopeHigh at the window's end and one falling between
// them (f3 at 0). A fraction that changes over the window weighs the two populations
// differently at early and late times, which no constant fraction mimics: on tb022, tb025,
// tb040 and tb043 of the broad study (f_s rising from ~0.2-0.3 to ~0.7-0.85) every pair
// screened at a constant fraction was in a wrong basin.
std::vector<std::vector<double>> FractionVariants(const nlsq::XpcsFitSession& session,
                                                  const std::vector<double>& base, double t_end) {
  const std::vector<double>& lo = session.lower();
  const std::vector<double>& hi = session.upper();
  std::vector<std::vector<double>> out{base};
  const int i_f3 = session.ParameterIndex("f3");
  const int i_f = i_f3 >= 0 ? i_f3 : session.ParameterIndex("f0");
  if (i_f >= 0) {
    const auto k = static_cast<std::size_t>(i_f);
    for (const double by : {-kScreenFractionShift, kScreenFractionShift}) {
      std::vector<double> x = base;
      x[k] = std::clamp(base[k] + by, lo[k], hi[k]);
      if (x[k] != base[k]) out.push_back(std::move(x));
    }
  }
  const int i_f0 = session.ParameterIndex("f0");
  const int i_f1 = session.ParameterIndex("f1");
  if (i_f0 < 0 || i_f1 < 0 || !(t_end > 0.0)) return out;
  const auto k0 = static_cast<std::size_t>(i_f0);
  const auto k1 = static_cast<std::size_t>(i_f1);
  const double rate = std::log(kScreenSlopeHigh / kScreenSlopeLow) / t_end;
  for (const auto& [amplitude, slope] :
       {std::pair{kScreenSlopeLow, rate}, std::pair{kScreenSlopeHigh, -rate}}) {
    std::vector<double> x = base;
    x[k0] = std::clamp(amplitude, lo[k0], hi[k0]);
    x[k1] = std::clamp(slope, lo[k1], hi[k1]);
    if (i_f3 >= 0) {
      const auto k3 = static_cast<std::size_t>(i_f3);
      x[k3] = std::clamp(0.0, lo[k3], hi[k3]);
    }
    out.push_back(std::move(x));
  }
  return out;
}

// Stage 1's points: every pair of rates (reference ≤ sample: the start's fraction is the
// mirror's too when it is 0.5, and the mirror check covers the other labelling; the sloped
// fractions cover both labellings too) × the sample fractions of FractionVariants × v_beta
// at 0, ¼ and ½ of its bounds ×
// v0 so that the mean velocity over the window, v0·T^beta/(1 + beta), runs over the grid.
Grid ScreenGrid(const nlsq::XpcsFitSession& session, const std::vector<double>& start,
                const Indices& ix, double q, double dt) {
  const std::vector<double>& lo = session.lower();
  const std::vector<double>& hi = session.upper();
  const double q2 = q * q;
  const double t_end = dt * static_cast<double>(session.time_points());
  std::vector<double> rates;
  for (double d = 1.0 / (10.0 * q2 * t_end); d <= 1.0 / (q2 * dt) * (1.0 + 1e-12);
       d *= kScreenRateStep) {
    rates.push_back(std::clamp(d, lo[ix.r], hi[ix.r]));
  }
  std::vector<double> betas;
  for (const double w : {0.0, 0.25, 0.5}) betas.push_back(lo[ix.b] + (hi[ix.b] - lo[ix.b]) * w);
  const double v_lo = std::numbers::pi / (10.0 * q * t_end);
  const double v_hi = std::numbers::pi / (q * dt);
  std::vector<double> base = start;
  if (const int io = session.ParameterIndex("v_offset"); io >= 0) {
    const auto k = static_cast<std::size_t>(io);
    base[k] = std::clamp(0.0, lo[k], hi[k]);
  }
  // The ranking of the rate pairs depends on the fraction: on tb049 of the broad study (f_s
  // rising from 0.34 to 0.9) at the start's 0.5 alone the lowest pairs had the sample rate 3x
  // the truth's, and every short fit from them stalled or hit its cap at 47-62x the minimum;
  // with the shifted fractions every short fit converges at the minimum. f3, or f0 if f3 is
  // held; clipped to the box.
  const std::vector<std::vector<double>> fractions = FractionVariants(session, base, t_end);
  Grid g;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    for (std::size_t j = i; j < rates.size(); ++j) {
      for (std::size_t f = 0; f < fractions.size(); ++f) {
        std::vector<double> xf = fractions[f];
        xf[ix.r] = rates[i];
        xf[ix.s] = std::clamp(rates[j], lo[ix.s], hi[ix.s]);
        for (const double beta : betas) {
          const double mean_power = MeanPower(beta, t_end);
          for (double vm = v_lo; vm <= v_hi * (1.0 + 1e-12); vm *= kScreenVelocityStep) {
            std::vector<double> p = xf;
            p[ix.b] = beta;
            p[ix.v] = std::clamp(vm / mean_power, lo[ix.v], hi[ix.v]);
            g.points.push_back(std::move(p));
            g.pair_of.push_back(g.pairs.size());
            g.fraction_of.push_back(f);
          }
        }
      }
      g.pairs.emplace_back(rates[i], rates[j]);
    }
  }
  g.fractions = fractions.size();
  return g;
}

// The kScreenPairsRefined pairs with the lowest χ² at any of their points, and each one's point;
// then each sample fraction's lowest point when it is not one of those.
std::vector<std::pair<std::size_t, std::size_t>> LowestPairs(const Grid& g,
                                                             const std::vector<double>& chi2) {
  std::vector<double> pair_best(g.pairs.size(), HUGE_VAL);
  std::vector<std::size_t> pair_point(g.pairs.size(), 0);
  for (std::size_t k = 0; k < g.points.size(); ++k) {
    if (kKey(chi2[k]) < pair_best[g.pair_of[k]]) {
      pair_best[g.pair_of[k]] = kKey(chi2[k]);
      pair_point[g.pair_of[k]] = k;
    }
  }
  std::vector<std::size_t> order(g.pairs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t c) { return pair_best[a] < pair_best[c]; });
  order.resize(std::min<std::size_t>(order.size(), kScreenPairsRefined));
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const std::size_t p : order) out.emplace_back(p, pair_point[p]);
  std::vector<std::size_t> fraction_point(g.fractions, g.points.size());
  for (std::size_t k = 0; k < g.points.size(); ++k) {
    std::size_t& at = fraction_point[g.fraction_of[k]];
    if (at == g.points.size() || kKey(chi2[k]) < kKey(chi2[at])) at = k;
  }
  for (const std::size_t k : fraction_point) {
    const bool known = std::any_of(out.begin(), out.end(), [&](const auto& e) {
      return g.pair_of[e.second] == g.pair_of[k] && g.fraction_of[e.second] == g.fraction_of[k];
    });
    if (k < g.points.size() && !known) out.emplace_back(g.pair_of[k], k);
  }
  return out;
}

// Stage 2: each kept pair's best point on the velocity scan's fine grid (every v_beta of its
// bounds), the coarse grid's best competing.
std::vector<std::vector<double>> RefineVelocity(
    nlsq::XpcsFitSession& session, const Grid& g,
    const std::vector<std::pair<std::size_t, std::size_t>>& kept, double q, double dt, int stride,
    std::size_t& n_points) {
  std::vector<std::vector<double>> fine;
  std::vector<std::size_t> owner;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    for (auto& x : VelocityScanPoints(session, g.points[kept[k].second], q, dt)) {
      fine.push_back(std::move(x));
      owner.push_back(k);
    }
    fine.push_back(g.points[kept[k].second]);
    owner.push_back(k);
  }
  std::vector<double> chi2;
  session.Chi2BatchOnRows(fine, chi2, stride);
  n_points = fine.size();
  std::vector<std::size_t> at(kept.size(), fine.size());
  for (std::size_t k = 0; k < fine.size(); ++k) {
    std::size_t& a = at[owner[k]];
    if (a == fine.size() || kKey(chi2[k]) < kKey(chi2[a])) a = k;
  }
  std::vector<std::vector<double>> out;
  for (const std::size_t a : at) out.push_back(fine[a]);
  return out;
}

// The sample fraction's parameters of a point, for the log lines.
std::string FractionText(const nlsq::XpcsFitSession& session, const std::vector<double>& x) {
  std::string out;
  for (const char* name : {"f0", "f1", "f3"}) {
    if (const int i = session.ParameterIndex(name); i >= 0) {
      out +=
          fmt::format("{}{} {:.3g}", out.empty() ? "" : ", ", name, x[static_cast<std::size_t>(i)]);
    }
  }
  return out;
}

}  // namespace

int ScreenRowStride(const nlsq::XpcsFitSession& session) {
  // The scans' stride (SearchRowStride) keeps at least kScreenRows rows as well, so it never
  // exceeds this one.
  return static_cast<int>(std::max<std::int64_t>(1, session.time_points() / kScreenRows));
}

namespace {

// In `order`, the lowest point of each sample fraction that `first` does not hold.
std::vector<std::size_t> LowestOfOtherFractions(
    const Grid& g, const std::vector<std::pair<std::size_t, std::size_t>>& kept,
    const std::vector<std::size_t>& order, const std::vector<std::size_t>& first) {
  std::vector<std::size_t> more;
  for (const std::size_t k : order) {
    const std::size_t f = g.fraction_of[kept[k].second];
    const auto same = [&](std::size_t c) { return g.fraction_of[kept[c].second] == f; };
    if (std::none_of(first.begin(), first.end(), same) &&
        std::none_of(more.begin(), more.end(), same)) {
      more.push_back(k);
    }
  }
  return more;
}

}  // namespace

ScreenedStart ScreenStart(nlsq::XpcsFitSession& session, const std::vector<double>& start, double q,
                          double dt, double ftol, const Logger& logger,
                          std::vector<std::string>& actions) {
  ScreenedStart out;
  const int ir = session.ParameterIndex("D0_ref");
  const int is = session.ParameterIndex("D0_sample");
  const int iv = session.ParameterIndex("v0");
  const int ib = session.ParameterIndex("v_beta");
  if (session.layout().mode() != model::AnalysisMode::kTwoComponent || ir < 0 || is < 0 || iv < 0 ||
      ib < 0 || !(q > 0.0) || !(dt > 0.0) || session.time_points() < 2) {
    return out;
  }
  const Indices ix{static_cast<std::size_t>(ir), static_cast<std::size_t>(is),
                   static_cast<std::size_t>(iv), static_cast<std::size_t>(ib)};
  const Grid g = ScreenGrid(session, start, ix, q, dt);
  const int stride = ScreenRowStride(session);
  std::vector<double> chi2;
  session.Chi2BatchOnRows(g.points, chi2, stride);
  const auto kept = LowestPairs(g, chi2);
  std::size_t n_fine = 0;
  const std::vector<std::vector<double>> refined =
      RefineVelocity(session, g, kept, q, dt, stride, n_fine);
  // Stage 3: every refined point with its per-angle scaling fitted (physics held), ranked by
  // the χ² of the data then; a short local fit from each of the kScreenPairsKept lowest, then,
  // while none of the short fits is acceptable (converged, no misfit by the noise level), from
  // the lowest of each sample fraction not yet tried. The ranking at a point is not the basin's:
  // on tb040 of the broad study the 10 lowest pairs all had a constant fraction and their
  // short fits converged at 555x the minimum, while a fit from the rising fraction's pair
  // reaches the minimum in 22 steps.
  std::vector<std::vector<double>> scaled;
  std::vector<double> scaled_chi2;
  for (const auto& x : refined) {
    scaled.push_back(ScalingFittedStart(session, x, Logger::Silent()));
    scaled_chi2.push_back(session.Chi2At(scaled.back()));
  }
  std::vector<std::size_t> order(refined.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
    return kKey(scaled_chi2[a]) < kKey(scaled_chi2[c]);
  });
  std::vector<std::string> ranked;
  for (const std::size_t k : order) {
    ranked.push_back(fmt::format("D0 {:.4g}/{:.4g} ({}): {:.6g}", g.pairs[kept[k].first].first,
                                 g.pairs[kept[k].first].second, FractionText(session, refined[k]),
                                 scaled_chi2[k]));
  }
  logger.Info("NLSQ start screen: the refined pairs with their scaling fitted, lowest first: {}",
              fmt::join(ranked, "; "));
  std::vector<std::size_t> first(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(
                                         std::min<std::size_t>(order.size(), kScreenPairsKept)));
  const std::vector<std::size_t> more = LowestOfOtherFractions(g, kept, order, first);
  std::vector<std::string> tried;
  const std::vector<bool> all_free(start.size(), true);
  out.chi2 = HUGE_VAL;
  bool found = false;
  std::size_t n_short = 0;
  std::vector<std::size_t> runs = first;
  runs.insert(runs.end(), more.begin(), more.end());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (r >= first.size() && found) break;
    const std::size_t k = runs[r];
    ++n_short;
    const std::vector<double>& x0 = scaled[k];
    const nlsq::SolverSummary fit =
        session.SolvePart(x0, all_free, {}, kScreenShortIterations, ftol);
    const bool usable =
        fit.IsUsable() && fit.x.size() == start.size() && std::isfinite(fit.final_chi2);
    const auto& [d_ref, d_sample] = g.pairs[kept[k].first];
    tried.push_back(
        fmt::format("D0 {:.4g}/{:.4g}, {}, v0 {:.4g}, v_beta {:.3g}: {} at {:.6g}", d_ref, d_sample,
                    FractionText(session, refined[k]), refined[k][ix.v], refined[k][ix.b],
                    usable ? ToString(fit.termination) : std::string("unusable"), fit.final_chi2));
    if (usable && fit.final_chi2 < out.chi2) {
      out.chi2 = fit.final_chi2;
      out.x = fit.x;
    }
    if (usable && fit.termination == lsq::Termination::kConverged && !found) {
      const nlsq::XpcsFitSession::NoiseFit noise = session.NoiseFitAt(fit.x);
      found = noise.measured && !noise.misfit();
    }
  }
  actions.push_back(fmt::format(
      "start screen: {} of {} (D0_ref, D0_sample, v0, v_beta) points{} at {} sample "
      "fractions, {} more for the {} lowest rate pairs and fractions; short fits ({} iterations "
      "at most) from {} of them with their scaling fitted (the {} lowest, then each fraction's "
      "lowest until one is converged with no misfit): {}{}",
      model::ObjectiveName(session.problem_loss()), g.points.size(),
      stride > 1 ? fmt::format(" on every {}th row", stride) : std::string(), g.fractions, n_fine,
      kept.size(), kScreenShortIterations, n_short, first.size(), fmt::join(tried, "; "),
      out.x.empty() ? "; none usable"
                    : fmt::format("; the paths start first from {:.12g}", out.chi2)));
  logger.Info("NLSQ {}", actions.back());
  return out;
}

ScreenOutcome RunStartScreen(nlsq::XpcsFitSession& session, const config::Config& cfg,
                             const std::optional<checkpoint::CheckpointSettings>& checkpoints,
                             bool velocity_scan, const Logger& logger, bool progress,
                             std::vector<std::string>& actions) {
  ScreenOutcome out;
  const double q = cfg.analyzer.wavevector_q;
  const double dt = cfg.analyzer.dt;
  const ScreenedStart ss =
      ScreenStart(session, session.x0(), q, dt, cfg.optimization.nlsq.tolerance, logger, actions);
  if (ss.x.empty()) return out;
  const auto where = checkpoint::InSubfolder(checkpoints, "start_screen");
  const auto acceptable = [&](const nlsq::SolverSummary& fit) {
    if (fit.termination != lsq::Termination::kConverged) return false;
    const nlsq::XpcsFitSession::NoiseFit noise = session.NoiseFitAt(fit.x);
    return noise.measured && !noise.misfit();
  };
  nlsq::SolverSummary fit = session.Solve(ss.x, progress, where);
  bool accept = acceptable(fit);
  if (!accept && velocity_scan) {
    const ScopedFaultStage scan_stage("velocity_scan");
    fit = ScanVelocity(session, ss.x, fit, q, dt, 2, where, logger, progress, actions);
    accept = acceptable(fit);
  }
  actions.push_back(fmt::format(
      "start screen: the fit from its point ended {} at {} {:.12g}: {}", ToString(fit.termination),
      model::ObjectiveName(session.problem_loss()), fit.final_chi2,
      accept ? "converged and no misfit by the noise level, taken"
             : "not acceptable alone; the transport scan's and the registry's paths follow"));
  logger.Info("NLSQ {}", actions.back());
  (accept ? out.accepted : out.other) = std::move(fit);
  return out;
}

}  // namespace homodyne::global
