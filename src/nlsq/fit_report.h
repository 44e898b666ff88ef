// What an NLSQ fit reports: the answer in the expanded per-angle layout and the
// diagnostics of every stage. The result files (outputs/nlsq_result_files.h) are written
// from it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "nlsq/degeneracy.h"
#include "nlsq/gradient_monitor.h"

namespace homodyne::nlsq {

// The anti-degeneracy stage of a laminar fit (anti_degeneracy.h), as
// analysis_results_nlsq.json's nlsq_diagnostics reports it. χ² that do not exist are NaN.
struct AntiDegeneracyReport {
  bool hierarchical_active = false;
  std::string inactive_reason;      // why the stage did not run (empty when it ran)
  bool skipped_by_trigger = false;  // enabled and applicable, not run by hierarchical.trigger
  int outer_iterations = 0;
  std::string stop;                   // outer_tolerance | max_outer_iterations | failed
  std::vector<double> chi2;           // unweighted χ² after each outer iteration
  double physical_change = 0.0;       // of the last outer iteration (2-norm in bound widths)
  std::vector<double> shear_weights;  // the last weights (empty: the stage ran unweighted)
  double stage_chi_squared = std::numeric_limits<double>::quiet_NaN();  // joint fit after it
  double plain_chi_squared = std::numeric_limits<double>::quiet_NaN();  // plain local fit
  std::string selected;                                                 // hierarchical | plain
  // two_component's two-stage path (xpcsjax's L2) instead of the alternation: 2 when it
  // ran (0: the alternation or nothing), the χ² of the data after its stage 1 (physics
  // with the scaling held at the quantile estimates) and after its stage 2 (the joint fit).
  int two_stage_stages = 0;
  double stage1_chi_squared = std::numeric_limits<double>::quiet_NaN();
  double stage2_chi_squared = std::numeric_limits<double>::quiet_NaN();
};

// xpcsjax's layer L3 (scaling_penalty.h) as it entered the fit. χ² in the report's units.
struct RegularizationReport {
  bool active = false;
  std::string mode;  // regularization.mode as configured
  double lambda = 0.0;
  int penalty_rows = 0;
  double data_chi_squared = 0.0;   // the data alone (= the report's chi_squared)
  double total_chi_squared = 0.0;  // with the penalty rows: what the fit minimised
};

// The CMA-ES global stage of a fit (global_stage.h): what ran and which answer was kept.
// χ² values that do not exist (no CMA-ES run, no refinement) are NaN (null in JSON).
struct GlobalSearchReport {
  std::string method = "cmaes";
  // nlsq_warmstart (the local fit's answer) | cmaes_refined | cmaes (unrefined)
  std::string selected;
  bool cmaes_skipped = false;  // the warm start was good enough (warmstart_auto_skip)
  bool warmstart_ran = false;
  std::string warmstart_termination;  // the local solver's termination
  double warmstart_chi_squared = 0.0;
  double warmstart_reduced_chi2 = 0.0;
  double scale_ratio = 0.0;  // widest / narrowest bound width
  // CMA-ES.
  int generations = 0;
  std::int64_t evaluations = 0;
  int restarts = 0;
  std::string convergence_reason;  // tol_x | tol_fun | max_generations | max_restarts | ...
  std::string restart_strategy;    // none | bipop (as run)
  int popsize = 0;                 // base λ (bipop runs use 2λ and smaller ones)
  std::vector<int> run_popsizes;
  int max_generations = 0;  // per run
  double sigma = 0.0;
  std::uint64_t seed = 0;
  bool normalization_enabled = true;
  double global_search_time_s = 0.0;
  double cmaes_chi_squared = 0.0;  // at the search's answer, all points
  // The search's rows: every search_row_stride-th row of each angle (1: all points), and its
  // best χ² on those rows (NaN when it ran on all points).
  int search_row_stride = 1;
  double search_chi_squared_on_rows = std::numeric_limits<double>::quiet_NaN();
  // Refinement: improved | not_improved | skipped_worse | failed | disabled | none.
  std::string refinement = "none";
  double refined_chi_squared = 0.0;
  double chi_squared_improvement = 0.0;  // warm start χ² − final χ² (0 without a warm start)
};

// The rest of analysis_results_nlsq.json's nlsq_diagnostics (xpcsjax's keys, heterodyne spec
// §7, with this fit's values): the solve that gave the answer, the χ² split, the scaling
// layout's values and the gradient monitor.
struct NlsqDiagnosticsReport {
  std::vector<double> chi2_per_angle;  // raw χ² of each angle; sums to chi_squared
  std::string scaling_source;          // quantile_fixed | averaged_then_fitted | fitted
  int fourier_basis_dim = 0;           // coefficients per group (fourier); 0: null
  int fourier_order = 0;               // K (fourier)
  // The fitted parameters, physics first in kernel names (beta, phi0), then the scaling:
  // contrast, offset | contrast[k]…, offset[k]… | contrast_c0, contrast_c1, contrast_s1, …
  std::vector<std::string> parameter_names;
  std::string convergence_reason;  // the answer's solve: converged | stalled | max_iter | …
  std::string message;             // its solver message
  int n_function_evals = 0;        // its data passes (with and without derivatives)
  int n_iterations = 0;
  double wall_time_seconds = 0.0;      // the whole NLSQ stage
  std::vector<double> scaling_fitted;  // the optimiser's scaling values (fourier coefficients)
  // averaged: the per-angle quantile estimates and the averaged start.
  std::vector<double> contrast_quantile, offset_quantile;
  double contrast_initial_average = std::numeric_limits<double>::quiet_NaN();
  double offset_initial_average = std::numeric_limits<double>::quiet_NaN();
  GradientMonitorReport gradient_monitor;
};

// Everything the result files report, in the expanded per-angle layout.
struct FitReport {
  std::string analysis_mode;                // "static" | "laminar_flow"
  std::string per_angle_mode;               // layout used by the optimiser
  std::vector<std::string> physical_names;  // D0, alpha, ...
  std::vector<double> physical_values, physical_uncertainties;
  // true: held at its value (not fitted; uncertainty 0); empty: every parameter was fitted.
  std::vector<bool> physical_held;
  std::vector<double> phi_deg;                         // kept angles (normalised)
  std::vector<double> contrast, contrast_uncertainty;  // per angle
  std::vector<double> offset, offset_uncertainty;      // per angle
  double chi_squared = 0.0;                            // the plain Σ w·r², whatever the loss
  double reduced_chi_squared = 0.0;
  // The loss in force (model/robust_loss.h): its name, its f_scale and the objective the solver
  // minimised over the data (C²·Σ w·ρ(z); = chi_squared under the linear loss).
  std::string loss = "linear";
  double f_scale = 1.0;
  double loss_objective = 0.0;
  std::int64_t n_data = 0;  // n_phi · n_t² (homodyne's convention)
  int n_params = 0;         // expanded parameter count used for the DOF (held ones excluded)
  int n_time_points = 0;    // n_t of the fit grid (t = 0 excluded)
  double q = 0.0;
  std::string convergence_status;  // ConvergenceStatus(): converged | stalled | max_iter | failed
  int iterations = 0;
  double execution_time = 0.0;
  // The data's own noise level (noise_level.h) and χ² in its units: Σ_k SSR_k/σ_k² over the
  // unique pairs, / (pairs − optimised parameters). NaN / empty sigma where not measured.
  double noise_reduced_chi_squared = std::numeric_limits<double>::quiet_NaN();
  std::int64_t noise_degrees_of_freedom = 0;
  // Below it the noise-based reduced χ² is consistent with the noise (NoiseMisfitThreshold).
  double noise_misfit_threshold = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> noise_sigma;              // per angle (NaN: not measurable)
  std::vector<std::int64_t> noise_differences;  // per angle: third differences used
  std::string noise_unmeasured;                 // why not measured (empty: it was)
  // Held per-angle scaling (constant layouts): the drop of the noise-based reduced χ² that
  // fitting it at the answer's physics gives; NaN when the scaling was fitted.
  double held_scaling_gain = std::numeric_limits<double>::quiet_NaN();
  std::string quality_flag;
  bool quality_passed = false;
  std::vector<std::string> quality_warnings;
  // Why a converged answer does not describe the data (exit 5, docs/errors.md); empty: none.
  std::vector<std::string> misfit_reasons;
  DegeneracyDiagnostics degeneracy;  // correlated pairs, weak directions (degeneracy.h)
  std::optional<GlobalSearchReport> global_search;  // optimization.nlsq.cmaes ran
  AntiDegeneracyReport anti_degeneracy;
  NlsqDiagnosticsReport diagnostics;
  RegularizationReport regularization;
  std::vector<std::string> recovery_actions;
  // Where it ran.
  int mpi_ranks = 1;
  int threads_per_rank = 1;
  std::vector<std::string> placement;  // one line per rank: host, cpuset, NUMA, PUs
  std::string hostname;
  std::string cpu_model;
  std::string timestamp;  // ISO-8601, set by the caller (one clock for all files)

  // The full optimiser vector in homodyne's order: contrasts, offsets, physics.
  std::vector<double> FullVector() const;
  bool IsHeld(std::size_t physical) const;  // physical_held[physical], false when unset
  std::vector<std::string> HeldNames() const;
};

}  // namespace homodyne::nlsq
