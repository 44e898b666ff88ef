#include "global/anti_degeneracy.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/key_paths.h"
#include "core/errors.h"

namespace homodyne::global {
namespace {

// The per-angle solves only need to follow the physics, not to converge tightly
// (homodyne's inner tolerances).
constexpr double kPhysicalFtol = 1e-8;
constexpr double kPerAngleFtol = 1e-6;

}  // namespace

AntiDegeneracyOptions AntiDegeneracyOptions::FromConfig(const config::AntiDegeneracy& a) {
  AntiDegeneracyOptions o;
  o.hierarchical = a.hierarchical_enable;
  o.always = a.hierarchical_trigger == config::HierarchicalTrigger::kAlways;
  o.max_outer_iterations = a.hierarchical_max_outer;
  o.outer_tolerance = a.hierarchical_outer_tolerance;
  o.physical_max_iterations = a.hierarchical_physical_max_it;
  o.per_angle_max_iterations = a.hierarchical_per_angle_max_it;
  o.shear_weighting = a.shear_weighting_enable;
  o.alpha = a.shear_weighting_alpha;
  o.min_weight = a.shear_weighting_min_weight;
  o.update_frequency = a.shear_weighting_update_frequency;
  o.normalize = a.shear_weighting_normalize;
  o.Validate();
  return o;
}

void AntiDegeneracyOptions::Validate() const {
  const auto bad = [](const std::string& what, const std::string& key) {
    ThrowBadInput(what, {}, config::keys::Key(config::keys::kNlsqAntiDegeneracy, key));
  };
  if (max_outer_iterations < 1) bad("must be ≥ 1", "hierarchical.max_outer_iterations");
  if (!(outer_tolerance > 0.0)) bad("must be > 0", "hierarchical.outer_tolerance");
  if (physical_max_iterations < 1) bad("must be ≥ 1", "hierarchical.physical_max_iterations");
  if (per_angle_max_iterations < 1) bad("must be ≥ 1", "hierarchical.per_angle_max_iterations");
  if (!(alpha >= 0.0) || !std::isfinite(alpha))
    bad("must be finite and ≥ 0", "shear_weighting.alpha");
  if (!(min_weight >= 0.0 && min_weight <= 1.0)) {
    bad(fmt::format("must be in [0, 1] (got {})", min_weight), "shear_weighting.min_weight");
  }
  if (update_frequency < 1) bad("must be ≥ 1", "shear_weighting.update_frequency");
}

std::vector<double> ShearWeights(std::span<const double> phi_deg, double phi0_deg,
                                 double min_weight, double alpha, bool normalize) {
  constexpr double kDeg = std::numbers::pi / 180.0;
  std::vector<double> w;
  double sum = 0.0;
  for (double phi : phi_deg) {
    const double c = std::max(std::abs(std::cos((phi0_deg - phi) * kDeg)), 1e-10);
    w.push_back(min_weight + (1.0 - min_weight) * std::pow(c, alpha));
    sum += w.back();
  }
  if (normalize && sum > 0.0) {
    for (double& v : w) v *= static_cast<double>(w.size()) / sum;
  }
  return w;
}

std::string HierarchicalInactiveReason(const config::Config& cfg,
                                       const nlsq::XpcsFitSession& session) {
  const auto& ad = cfg.optimization.nlsq.anti_degeneracy;
  if (session.layout().mode() == model::AnalysisMode::kStatic) return "static mode";
  if (session.layout().mode() == model::AnalysisMode::kTwoComponent) {
    // xpcsjax's two-stage path; it reads hierarchical.enable only (not anti_degeneracy.enable),
    // default false: on the recovery study it never lowered a final answer (docs/global.md).
    if (!ad.hierarchical_enable_written) {
      return "hierarchical.enable is not written (two_component's default false, as xpcsjax's)";
    }
    if (!ad.hierarchical_enable) return "hierarchical.enable is false";
    if (session.num_physical() == 0) return "no physical parameter is fitted";
    if (session.layout().layout() == model::ScalingLayout::kFixedConstant) {
      return "constant per-angle layout (its fit is the first stage itself)";
    }
    return {};
  }
  if (!ad.enable) return "anti_degeneracy.enable is false";
  if (!ad.hierarchical_enable) return "hierarchical.enable is false";
  const model::ScalingLayout l = session.layout().layout();
  if (l == model::ScalingLayout::kIndividual || l == model::ScalingLayout::kFourier) return {};
  return fmt::format("{} per-angle layout (no per-angle parameters)", model::ToString(l));
}

std::vector<double> RunHierarchicalStage(nlsq::XpcsFitSession& session,
                                         const std::vector<double>& x0,
                                         const AntiDegeneracyOptions& o, const Logger& logger,
                                         nlsq::AntiDegeneracyReport& report) {
  report.hierarchical_active = true;
  report.inactive_reason.clear();
  const std::size_t n = x0.size();
  const std::size_t n_phys = static_cast<std::size_t>(session.num_physical());
  std::vector<bool> physical(n, false), per_angle(n, true);
  for (std::size_t i = n - n_phys; i < n; ++i) {
    physical[i] = true;
    per_angle[i] = false;
  }
  // phi0 fitted (its index in x) or held (its value); neither: no shear weights.
  const int phi0 = session.ParameterIndex("phi0");
  const std::optional<double> phi0_held = session.HeldValue("phi0");
  const bool weighted =
      o.shear_weighting && (phi0 >= 0 || phi0_held) && session.phi_deg().size() >= 3;
  logger.Info(
      "NLSQ anti-degeneracy: hierarchical stage (up to {} outer iterations: physical solve{}, "
      "then per-angle solve)",
      o.max_outer_iterations, weighted ? " with shear-sensitivity weights" : "");
  std::vector<double> x = x0;
  std::vector<double> weights;
  report.stop = "max_outer_iterations";
  for (int outer = 0; outer < o.max_outer_iterations; ++outer) {
    if (weighted && outer % o.update_frequency == 0) {
      weights = ShearWeights(session.phi_deg(),
                             phi0 >= 0 ? x[static_cast<std::size_t>(phi0)] : *phi0_held,
                             o.min_weight, o.alpha, o.normalize);
    }
    const std::vector<double> before = x;
    const nlsq::SolverSummary phys =
        session.SolvePart(x, physical, weights, o.physical_max_iterations, kPhysicalFtol);
    if (!phys.IsUsable()) {
      report.stop = "failed";
      logger.Warn("NLSQ anti-degeneracy: the physical solve failed ({}); the stage stops",
                  phys.message);
      break;
    }
    x = phys.x;
    const nlsq::SolverSummary angles =
        session.SolvePart(x, per_angle, {}, o.per_angle_max_iterations, kPerAngleFtol);
    if (!angles.IsUsable()) {
      report.stop = "failed";
      logger.Warn("NLSQ anti-degeneracy: the per-angle solve failed ({}); the stage stops",
                  angles.message);
      break;
    }
    x = angles.x;
    double change = 0.0;
    for (std::size_t i = n - n_phys; i < n; ++i) {
      const double width = session.upper()[i] - session.lower()[i];
      if (width > 0.0) change += std::pow((x[i] - before[i]) / width, 2);
    }
    report.physical_change = std::sqrt(change);
    report.chi2.push_back(angles.final_chi2);
    report.outer_iterations = outer + 1;
    logger.Info("NLSQ anti-degeneracy: outer iteration {}: {} {:.12g}, physics moved {:.3g}",
                outer + 1, model::ObjectiveName(session.problem_loss()), angles.final_chi2,
                report.physical_change);
    if (report.physical_change < o.outer_tolerance) {
      report.stop = "outer_tolerance";
      break;
    }
  }
  report.shear_weights = weights;
  if (weighted) {
    logger.Info("NLSQ anti-degeneracy: shear weights {:.4g}", fmt::join(weights, ", "));
  }
  return x;
}

}  // namespace homodyne::global
