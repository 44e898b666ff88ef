// The anti-degeneracy stage of a laminar_flow NLSQ fit with per-angle parameters
// (optimization.nlsq.anti_degeneracy.hierarchical and .shear_weighting; docs/global.md).
//
// With a contrast and an offset per angle, the per-angle block can absorb the
// angle-dependent shear signal, and the fit can trade γ̇0 against the scaling of the
// angles. homodyne's answer is to alternate: solve the physical parameters with the
// per-angle block held, with the angles near the flow direction weighted up (the shear
// term is largest where |cos(φ0 − φ)| is), then the per-angle block with the physics held,
// until the physics stop moving; then the joint fit. Here the stage is a second path to
// the minimum beside the plain local fit: the pipeline keeps the lower χ² of the two.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::global {

struct AntiDegeneracyOptions {
  bool hierarchical = true;
  // Run the stage after every plain fit (true), or only after one that stalled or ended with
  // a physical parameter at a bound (false, the default).
  bool always = false;
  int max_outer_iterations = 5;
  double outer_tolerance = 1e-6;  // ‖Δ physics / bound width‖₂
  int physical_max_iterations = 100;
  int per_angle_max_iterations = 50;
  bool shear_weighting = true;
  double alpha = 1.0;
  double min_weight = 0.3;
  int update_frequency = 1;  // outer iterations between weight updates
  bool normalize = true;

  // Validates (bad input naming optimization.nlsq.anti_degeneracy.<key>).
  static AntiDegeneracyOptions FromConfig(const config::AntiDegeneracy& a);
  void Validate() const;
};

// Shear-sensitivity weights, one per angle: min_weight + (1 − min_weight)·
// max(|cos(φ0 − φ_k)|, 1e-10)^alpha with φ0 and φ in degrees; scaled to mean 1 if normalize.
std::vector<double> ShearWeights(std::span<const double> phi_deg, double phi0_deg,
                                 double min_weight, double alpha, bool normalize);

// Why the stage does not apply (empty: it does). It applies to laminar_flow with
// anti_degeneracy.enable and hierarchical.enable and a per-angle layout with parameters per
// angle (individual or fourier); averaged and constant layouts have no per-angle block
// that could absorb the shear signal (homodyne leaves the stage inactive there too).
// two_component has xpcsjax's two-stage path instead (fit_pipeline.h, TwoStagePath): with
// hierarchical.enable written true, fitted physics and a layout that fits scaling (not
// constant).
std::string HierarchicalInactiveReason(const config::Config& cfg,
                                       const nlsq::XpcsFitSession& session);

// Collective. The alternation from x0 (no checkpoints: it is deterministic, so a resumed
// run repeats it and gets the same point). Returns the point it ends at; fills the
// report's stage fields (hierarchical_active, outer_iterations, stop, chi2,
// physical_change, shear_weights).
std::vector<double> RunHierarchicalStage(nlsq::XpcsFitSession& session,
                                         const std::vector<double>& x0,
                                         const AntiDegeneracyOptions& o, const Logger& logger,
                                         nlsq::AntiDegeneracyReport& report);

}  // namespace homodyne::global
