// Key table: optimization.nlsq (spec §3, §1.9). Defaults are homodyne's code defaults
// where they differ from its templates (max_iterations 1000, shear update_frequency 1).
#include <algorithm>

#include <fmt/format.h>

#include "key_table_builder.h"

namespace homodyne::config::detail {
namespace {
using T = KeyType;
using PM = model::PerAngleMode;

// The fit's layouts (constant_averaged is CMC's) and xpcsjax's alias independent.
std::vector<std::string> NlsqPerAngleModes() {
  return ChoiceNames<model::PerAngleMode>({PM::kAuto, PM::kConstant, PM::kIndividual, PM::kFourier},
                                          /*aliases=*/true);
}
constexpr auto kAcc = KeyStatus::kAccepted;
constexpr auto kUse = KeyStatus::kUsed;

void AddNlsqBasics(const KeyAdder& n) {
  const FieldsOf f([](auto& c) -> auto& { return c.optimization.nlsq; });
  n.Section("", kUse, "Nonlinear least-squares fit");
  n.Acc("workflow", T::kString, "auto", NoRule(), "Workflow selection (informational)");
  n.Acc("goal", T::kString, "quality", NoRule(), "Optimization goal (informational)");
  n.Used("memory_fraction", T::kFloat, "0.75", Fraction(),
         "Fraction of the node's RAM the fit may use, shared by the node's ranks; picks in-core "
         "or streaming (clamped to [0.1, 0.9]; env NLSQ_MEMORY_FRACTION overrides)",
         f(&NlsqOptions::memory_fraction));
  n.Used("memory_threshold_gb", T::kFloat, "null", Positive(),
         "Memory limit in GiB per node, shared by its ranks (overrides memory_fraction)",
         f(&NlsqOptions::memory_threshold_gb), kNullable);
  n.Used("max_iterations", T::kInt, "1000", AtLeast(1),
         "Maximum solver iterations (homodyne code default 1000; templates 100)",
         f(&NlsqOptions::max_iterations));
  n.Used("tolerance", T::kFloat, "1e-8", Positive(),
         "ftol: converged when the Gauss-Newton decrement (the relative chi2 decrease the "
         "local model still promises) is at most this, with the gradient cosine at most 1e-4 "
         "beside it (docs/errors.md)",
         f(&NlsqOptions::tolerance));
  n.Used("xtol", T::kFloat, "1e-8", Positive(),
         "A scaled step below xtol times the scaled parameter norm makes no progress (a stall "
         "unless the optimality test holds)",
         f(&NlsqOptions::xtol));
  n.Used("gtol", T::kFloat, "1e-8", Positive(),
         "Converged when every free parameter's Jacobian column is within this cosine of "
         "orthogonal to the residual",
         f(&NlsqOptions::gtol));
  n.Used("local_solver", T::kString, "lm", OneOf(ChoiceNames<lsq::LocalMethod>()),
         "Local method: lm (Levenberg-Marquardt, checkpointable), or PETSc/TAO's bnls, bntr, "
         "bntl (no checkpoints)",
         f(&NlsqOptions::local_solver));
  n.Acc("trust_region_scale", T::kFloat, "1.0", Positive(), "Initial trust-region scale");
  n.Acc("verbose", T::kAny, "false", NoRule(), "Solver verbosity");
  n.Used("loss", T::kString, "soft_l1", OneOf(ChoiceNames<model::LossKind>()),
         "Loss of the fit, as homodyne and xpcsjax apply it (SciPy least_squares' losses on "
         "the unscaled residual c2_exp - c2_model, z = (residual / f_scale)^2): the fit "
         "minimises sum w (f_scale/sigma)^2 rho(z), which equals chi2 for linear; the report "
         "gives this objective and the plain chi2 beside it. With the default f_scale of 1 "
         "(c2 units) soft_l1 differs from linear by about z/4, a few parts in a million on "
         "typical data, as in homodyne; set f_scale near the noise level of c2 for a fit that "
         "down-weights outliers (docs/migrating.md, \"Robust losses\")",
         f(&NlsqOptions::loss));
  n.Used("f_scale", T::kFloat, "1.0", Positive(),
         "Scale C of the robust loss, in units of c2 (as homodyne's): residuals much larger "
         "than C are down-weighted; not used by the linear loss",
         f(&NlsqOptions::f_scale));
  n.Acc("x_scale", T::kAny, "jac", CustomRule("\"jac\""),
        "xpcsjax's step scaling; only \"jac\" (what the local solver always does: Moré's "
        "scaling by the Jacobian's column norms); any other value is rejected");
  n.Acc("x_scale_map", T::kMapping, "null", NoRule(),
        "Per-parameter step scales; read and checked (names, positive values) but not used: "
        "the local solver scales its steps by the Jacobian's column norms (Moré)",
        kNullable);
  n.Acc("x_scale_map.*", T::kFloat, "", Positive(), "name: scale (not used)");
  n.Section("progress", kAcc, "Progress reporting", kNullable);
  n.Acc("progress.enable", T::kBool, "true", NoRule(), "Show progress");
  n.Acc("progress.verbose", T::kInt, "1", NonNegative(), "Progress verbosity");
  n.Acc("progress.log_interval", T::kInt, "10", AtLeast(1), "Iterations between log lines");
  n.Section("diagnostics", kAcc, "Solver diagnostics", kNullable);
  n.Acc("diagnostics.enabled", T::kBool, "false", NoRule(), "Collect diagnostics");
  n.Acc("diagnostics.sample_size", T::kInt, "2048", AtLeast(1), "Points sampled");
  n.Acc("diagnostics.check_gradients", T::kBool, "false", NoRule(), "Check gradients");
  n.Acc("diagnostics.log_jacobian_norms", T::kBool, "false", NoRule(), "Log Jacobian norms");
}

void AddHybridStreaming(const KeyAdder& h) {
  h.Section("", kAcc, "Adam warm-up + Gauss-Newton path for very large data", kNullable);
  h.Acc("enable", T::kBool, "true", NoRule(), "Use the hybrid path above ~10M points");
  h.Acc("normalize", T::kBool, "true", NoRule(), "Normalize parameters");
  h.Acc("normalization_strategy", T::kString, "auto", NoRule(), "Normalization strategy");
  h.Acc("warmup_iterations", T::kInt, "200", NonNegative(), "Adam warm-up iterations");
  h.Acc("max_warmup_iterations", T::kInt, "500", NonNegative(), "Maximum warm-up iterations");
  h.Acc("warmup_learning_rate", T::kFloat, "1e-3", Positive(), "Adam learning rate");
  h.Acc("gauss_newton_max_iterations", T::kInt, "100", AtLeast(1), "Gauss-Newton iterations");
  h.Acc("gauss_newton_tol", T::kFloat, "1e-8", Positive(), "Gauss-Newton tolerance");
  h.Acc("chunk_size", T::kInt, "10000", AtLeast(1), "Points per chunk");
  h.Acc("trust_region_initial", T::kFloat, "1.0", Positive(), "Initial trust radius");
  h.Acc("regularization_factor", T::kFloat, "1e-10", NonNegative(), "Damping");
  h.Acc("enable_checkpoints", T::kBool, "false", NoRule(), "Checkpoint the hybrid fit");
  h.Acc("checkpoint_frequency", T::kInt, "100", AtLeast(1), "Iterations between checkpoints");
  h.Acc("validate_numerics", T::kBool, "true", NoRule(), "Check for NaN/Inf");
  h.Acc("verbose", T::kInt, "1", NonNegative(), "Verbosity");
  h.Acc("log_frequency", T::kInt, "1", AtLeast(1), "Iterations between log lines");
  h.Acc("enable_warm_start_detection", T::kBool, "true", NoRule(), "Detect warm starts");
  h.Acc("warm_start_threshold", T::kFloat, "0.01", NonNegative(), "Warm-start threshold");
  h.Acc("enable_adaptive_warmup_lr", T::kBool, "true", NoRule(), "Adapt the learning rate");
  h.Acc("warmup_lr_refinement", T::kFloat, "1e-6", Positive(), "Learning rate, refinement");
  h.Acc("warmup_lr_careful", T::kFloat, "1e-5", Positive(), "Learning rate, careful");
  h.Acc("enable_cost_guard", T::kBool, "true", NoRule(), "Abort warm-up on cost increase");
  h.Acc("cost_increase_tolerance", T::kFloat, "0.05", NonNegative(), "Allowed increase");
  h.Acc("enable_step_clipping", T::kBool, "true", NoRule(), "Clip warm-up steps");
  h.Acc("max_warmup_step_size", T::kFloat, "0.1", Positive(), "Maximum warm-up step");
}

void AddAntiDegeneracy(const KeyAdder& a) {
  const FieldsOf f([](auto& c) -> auto& { return c.optimization.nlsq.anti_degeneracy; });
  a.Section("", kUse, "Per-angle scaling treatment of the NLSQ fit", kNullable);
  a.Used("enable", T::kBool, "true", NoRule(), "Enable the anti-degeneracy system",
         f(&AntiDegeneracy::enable));
  a.Used("per_angle_mode", T::kString, "auto", OneOf(NlsqPerAngleModes()),
         "Scaling layout: auto, constant, individual or fourier (independent: xpcsjax's "
         "deprecated name of individual). two_component: constant holds xpcsjax's Q95 "
         "quantile estimates (fewer than 100 points per angle is an error), individual "
         "bounds every contrast by [0.1, 0.8] unless the contrast bounds are other than "
         "[0, 1] (docs/model.md)",
         f(&AntiDegeneracy::per_angle_mode));
  a.Used("constant_scaling_threshold", T::kInt, "3", AtLeast(1),
         "auto uses averaged scaling when n_phi >= this",
         f(&AntiDegeneracy::constant_scaling_threshold));
  a.Used("fourier_order", T::kInt, "2", AtLeast(1), "Fourier order K of the fourier mode",
         f(&AntiDegeneracy::fourier_order));
  a.Acc("fourier_auto_threshold", T::kInt, "6", AtLeast(1), "n_phi for automatic Fourier");
  a.Acc("execute_layers", T::kBool, "false", CustomRule("false (true is not implemented)"),
        "xpcsjax's L2/L3 escape after the baseline solve of its >= 1M-point stratified path; "
        "not implemented: true is rejected (laminar_flow's own stage is hierarchical below)");
  a.Section("hierarchical", kUse,
            "laminar_flow with per-angle parameters (individual, fourier): alternating "
            "physical and per-angle solves, then the joint fit; two_component (averaged, "
            "individual, fourier): xpcsjax's two stages, the physics with the scaling held at "
            "the quantile estimates, then the joint fit. The lower chi2 of it and the plain "
            "fit is kept (docs/global.md)",
            kNullable);
  a.Used("hierarchical.enable", T::kBool, "true", NoRule(),
         "Run the stage (laminar_flow: only where per-angle parameters can absorb the shear "
         "signal; two_component: only when written true, xpcsjax's default being false)",
         f(&AntiDegeneracy::hierarchical_enable));
  a.Used("hierarchical.trigger", T::kString, "suspect", OneOf(ChoiceNames<HierarchicalTrigger>()),
         "When the stage runs: suspect (after a plain fit that stalled or ended with a physical "
         "parameter at a bound; two_component: only after one that did not converge) or always "
         "(homodyne-hpc's earlier default; docs/global.md)",
         f(&AntiDegeneracy::hierarchical_trigger));
  a.Used("hierarchical.max_outer_iterations", T::kInt, "5", AtLeast(1),
         "Physical/per-angle alternations at most", f(&AntiDegeneracy::hierarchical_max_outer));
  a.Used("hierarchical.outer_tolerance", T::kFloat, "1e-6", Positive(),
         "Stop when the physical parameters move less than this (2-norm, each in units of its "
         "bound width)",
         f(&AntiDegeneracy::hierarchical_outer_tolerance));
  a.Used("hierarchical.physical_max_iterations", T::kInt, "100", AtLeast(1),
         "Iterations of each physical solve", f(&AntiDegeneracy::hierarchical_physical_max_it));
  a.Used("hierarchical.per_angle_max_iterations", T::kInt, "50", AtLeast(1),
         "Iterations of each per-angle solve", f(&AntiDegeneracy::hierarchical_per_angle_max_it));
  a.Acc("hierarchical.inner_tolerance", T::kFloat, "1e-6", Positive(),
        "xpcsjax (>= 1M-point and streaming paths); not used");
  a.Section("regularization", kUse,
            "two_component with a contrast and offset per angle (individual, fourier): "
            "xpcsjax's CV penalty on their spread (layer L3, docs/global.md); not used in "
            "the homodyne modes",
            kNullable);
  a.Acc("regularization.enable", T::kBool, "false", NoRule(),
        "Not read (xpcsjax reads only mode on this path: its template's enable: false with "
        "mode: relative regularises)");
  a.Used("regularization.mode", T::kString, "none", OneOf(ChoiceNames<RegularizationMode>()),
         "two_component: anything but none adds two residual rows sqrt(lambda)*CV(contrast_k) "
         "and sqrt(lambda)*CV(offset_k) over the angles (CV = std/|mean|; the same rows for "
         "every mode, as in xpcsjax); averaged and constant layouts: no rows. Homodyne modes: "
         "not used (homodyne's default relative)",
         f(&AntiDegeneracy::regularization_mode));
  a.Used("regularization.lambda", T::kFloat, "null", NonNegative(),
         "two_component: lambda of the penalty rows (null: xpcsjax's heterodyne default 0.01; "
         "its template writes 1.0). Homodyne modes: not used (homodyne's default 1.0)",
         f(&AntiDegeneracy::regularization_lambda), kNullable);
  a.Acc("regularization.target_cv", T::kFloat, "0.10", NonNegative(),
        "Not used (xpcsjax's heterodyne path only logs it)");
  a.Acc("regularization.target_contribution", T::kFloat, "0.10", NonNegative(),
        "Not used (homodyne's lambda auto-tuning)");
  a.Acc("regularization.max_cv", T::kFloat, "0.20", NonNegative(), "Not used");
  a.Acc("regularization.auto_tune_lambda", T::kBool, "true", NoRule(),
        "Not applied: lambda is used as given (xpcsjax's heterodyne path switches its "
        "auto-tuning off whatever this says)");
  a.Section("gradient_monitoring", kUse,
            "Gradient-collapse monitor (observational: the fit is the same with it on or off; "
            "nlsq_diagnostics.gradient_monitor reports it, docs/outputs.md)",
            kNullable);
  a.Used("gradient_monitoring.enable", T::kBool, "true", NoRule(),
         "Watch ||grad physics|| / ||grad per-angle scaling|| at every iteration of the local "
         "fit",
         f(&AntiDegeneracy::gradient_monitoring_enable));
  a.Used("gradient_monitoring.ratio_threshold", T::kFloat, "0.01", Positive(),
         "A ratio below this is a trigger", f(&AntiDegeneracy::gradient_ratio_threshold));
  a.Used("gradient_monitoring.consecutive_triggers", T::kInt, "5", AtLeast(1),
         "Triggers in a row that make a collapse event (a warning)",
         f(&AntiDegeneracy::gradient_consecutive_triggers));
  a.Used("gradient_monitoring.response", T::kString, "hierarchical",
         OneOf(ChoiceNames<GradientResponse>()),
         "xpcsjax's response to a collapse: recorded in the report, never executed (xpcsjax "
         "executes none either); a collapse is a warning whatever the value",
         f(&AntiDegeneracy::gradient_response));
  a.Section("shear_weighting", kUse,
            "Shear-sensitivity weights of the angles in the hierarchical stage's physical solves",
            kNullable);
  a.Used("shear_weighting.enable", T::kBool, "true", NoRule(),
         "Weight angle k by min_weight + (1 - min_weight)|cos(phi0 - phi_k)|^alpha",
         f(&AntiDegeneracy::shear_weighting_enable));
  a.Used("shear_weighting.alpha", T::kFloat, "1.0", NonNegative(), "Exponent of |cos|",
         f(&AntiDegeneracy::shear_weighting_alpha));
  a.Used("shear_weighting.min_weight", T::kFloat, "0.3", Fraction(), "Weight floor",
         f(&AntiDegeneracy::shear_weighting_min_weight));
  a.Used("shear_weighting.update_frequency", T::kInt, "1", AtLeast(1),
         "Outer iterations between recomputing the weights from the current phi0 (code "
         "default 1; templates 50)",
         f(&AntiDegeneracy::shear_weighting_update_frequency));
  a.Used("shear_weighting.normalize", T::kBool, "true", NoRule(), "Scale the weights to mean 1",
         f(&AntiDegeneracy::shear_weighting_normalize));
}

void AddMultiStart(const KeyAdder& m) {
  const FieldsOf f([](auto& c) -> auto& { return c.optimization.nlsq.multi_start; });
  m.Section("", kUse, "Multi-start global search", kNullable);
  m.Used("enable", T::kBool, "false", NoRule(), "Run several local fits from sampled starts",
         f(&MultiStart::enable));
  m.Used("n_starts", T::kInt, "10", AtLeast(1), "Number of starting points",
         f(&MultiStart::n_starts));
  m.Used("seed", T::kInt, "42", NonNegative(), "Random seed of the sampling", f(&MultiStart::seed));
  m.Used("sampling_strategy", T::kString, "latin_hypercube", OneOf(ChoiceNames<SamplingStrategy>()),
         "How starting points are drawn: latin_hypercube (one point per stratum of every "
         "parameter's range) or random (independent uniform draws in the bounds)",
         f(&MultiStart::sampling_strategy));
  m.Acc("n_workers", T::kInt, "0", NonNegative(),
        "Parallel workers (no effect here: the starts are shared among the MPI ranks)",
        f(&MultiStart::n_workers));
  m.Used("use_screening", T::kBool, "true", NoRule(), "Screen starts by initial cost",
         f(&MultiStart::use_screening));
  m.Used("screen_keep_fraction", T::kFloat, "0.5", Fraction(), "Fraction kept by screening",
         f(&MultiStart::screen_keep_fraction));
  m.Acc("refine_top_k", T::kInt, "3", AtLeast(1),
        "Best starts refined (no effect here: every kept start is solved to its end)",
        f(&MultiStart::refine_top_k));
  m.Acc("refinement_ftol", T::kFloat, "1e-12", Positive(),
        "Refinement tolerance (no effect here: the starts use optimization.nlsq's tolerances)",
        f(&MultiStart::refinement_ftol));
  m.Used("degeneracy_threshold", T::kFloat, "0.1", NonNegative(),
         "Relative cost gap below which solutions count as degenerate",
         f(&MultiStart::degeneracy_threshold));
}

void AddRecovery(const KeyAdder& r) {
  const FieldsOf f([](auto& c) -> auto& { return c.optimization.nlsq.recovery; });
  r.Section("", kUse,
            "What the fit does when its local answer may not be the minimum (docs/global.md)",
            kNullable);
  r.Used("on_stall", T::kString, "restarts", OneOf(ChoiceNames<StallRecovery>()),
         "After a local fit that ends stalled or at max_iterations: restarts (local fits from "
         "the lowest-chi2 half of stall_starts Latin-hypercube starts: D0, alpha, gamma_dot_t0, "
         "beta, phi0 drawn from their bounds), cmaes (the "
         "CMA-ES box search of optimization.nlsq.cmaes, then refinement) or none; the lowest "
         "chi2 is kept",
         f(&NlsqRecovery::on_stall));
  r.Used("stall_starts", T::kInt, "10", AtLeast(1),
         "Latin-hypercube starts screened by chi2 for on_stall: restarts (seed 42)",
         f(&NlsqRecovery::stall_starts));
  r.Used("phi0_restarts", T::kInt, "4", NonNegative(),
         "laminar_flow: local fits restarted from the answer with phi0 at this many evenly "
         "spaced points of its bounds (the shear term's sinc^2 makes chi2 multimodal in "
         "phi0); the lowest chi2 is kept; 0: none",
         f(&NlsqRecovery::phi0_restarts));
  r.Used("mirror_check", T::kString, "auto", OneOf(ChoiceNames<MirrorCheck>()),
         "two_component: one local fit from the answer's mirror (reference and sample "
         "transport swapped, the sample fraction replaced by the closest one to 1 - f_s); "
         "c2 is symmetric under that swap, so a fit from a start symmetric between the "
         "populations can end in the mirror's basin; the lowest chi2 is kept. auto: when "
         "the start's transport is not configured (the registry's symmetric start)",
         f(&NlsqRecovery::mirror_check));
  r.Used("velocity_scan", T::kBool, "true", NoRule(),
         "two_component without a configured v0: chi2 of a grid of (v0, v_beta) around the "
         "configured start and around its local fit, local fits from the 2 lowest of each, "
         "the lowest chi2 kept; the cross term's cos(q cos(phi + phi0_het) * integral of v) "
         "makes chi2 oscillate in v0",
         f(&NlsqRecovery::velocity_scan));
  r.Used("transport_scan", T::kBool, "true", NoRule(),
         "two_component without any configured transport parameter: chi2 of the start with "
         "one shared rate D0_ref = D0_sample on a log grid of decay times from a frame to ten "
         "windows (the velocity at 0 unless v0 is configured); the fit's paths start first "
         "from the lowest, and the registry's start (1e4, tied to no time scale of the data) "
         "follows only when that answer is not converged or is a misfit by the noise level",
         f(&NlsqRecovery::transport_scan));
  r.Used("start_screen", T::kBool, "true", NoRule(),
         "two_component without a configured transport or v0: chi2 on every k-th row of a log "
         "grid of (D0_ref, D0_sample) pairs times the sample fraction times a grid of (v0, "
         "v_beta), the lowest pairs refined on the velocity scan's grid and ranked again with "
         "their per-angle scaling fitted, short local fits from the best; the fit from the "
         "lowest is taken when it converges and is no misfit by the noise level, else the "
         "transport scan's and the registry's paths follow and the lowest answer goes on",
         f(&NlsqRecovery::start_screen));
  r.Used("screen_max_points", T::kInt, "250000", AtLeast(0),
         "Above this many points the restarts after a stall and the phi0 check first fit each "
         "start on every k-th row of each angle (k as cmaes.search_max_points's) and run a "
         "full local fit only from those whose row fit is within 0.1 % of, or below, the "
         "answer's on the same rows and not the same minimum (docs/global.md); 0: every "
         "start's fit on all points",
         f(&NlsqRecovery::screen_max_points));
}

void AddCmaes(const KeyAdder& c) {
  const FieldsOf f([](auto& cfg) -> auto& { return cfg.optimization.nlsq.cmaes; });
  c.Section("", kUse, "CMA-ES global stage of the NLSQ fit (has priority over multi_start)",
            kNullable);
  c.Used("enable", T::kBool, "false", NoRule(),
         "Warm start, CMA-ES, refinement and keep-better instead of the plain local fit",
         f(&Cmaes::enable));
  c.Used("preset", T::kString, "cmaes", OneOf(ChoiceNames<CmaesPreset>()),
         "Generations per run: cmaes-fast 50, cmaes 100, cmaes-global 200", f(&Cmaes::preset));
  c.Used("max_generations", T::kInt, "null", AtLeast(1),
         "Generations per run; overrides the preset (and is not adapted)",
         f(&Cmaes::max_generations), kNullable);
  c.Used("sigma", T::kFloat, "0.5", Fraction(),
         "Initial step size in logit units of the normalised box (static template 0.3)",
         f(&Cmaes::sigma));
  c.Used("sigma_warmstart", T::kFloat, "0.05", Fraction(),
         "Step size when the warm start converged", f(&Cmaes::sigma_warmstart));
  c.Used("nlsq_warmstart", T::kBool, "true", NoRule(),
         "Run the local fit first and start CMA-ES from its answer", f(&Cmaes::nlsq_warmstart));
  c.Used("warmstart_auto_skip", T::kBool, "true", NoRule(),
         "Skip CMA-ES when the converged warm start's reduced chi2 is below the threshold",
         f(&Cmaes::warmstart_auto_skip));
  c.Used("warmstart_skip_threshold", T::kFloat, "5.0", Positive(),
         "Reduced chi2 below which the warm start is kept without CMA-ES",
         f(&Cmaes::warmstart_skip_threshold));
  c.Used("popsize", T::kInt, "null", AtLeast(4),
         "Population size (null: 4 + floor(3 ln n), adapted to the bounds' scale ratio)",
         f(&Cmaes::popsize), kNullable);
  c.Used("tol_fun", T::kFloat, "1e-8", Positive(),
         "A run ends when the population's chi2 spread stays below tol_fun x best chi2 for 5 "
         "generations",
         f(&Cmaes::tol_fun));
  c.Used("tol_x", T::kFloat, "1e-8", Positive(),
         "A run ends when the largest step standard deviation (logit units) is below this",
         f(&Cmaes::tol_x));
  c.Used("restart_strategy", T::kString, "bipop", OneOf(ChoiceNames<CmaesRestart>()),
         "none or bipop (alternating large/small populations); none after a converged warm start",
         f(&Cmaes::restart_strategy));
  c.Used("max_restarts", T::kInt, "9", NonNegative(),
         "bipop: runs after the first (laminar template 10)", f(&Cmaes::max_restarts));
  c.Used("seed", T::kInt, "42", NonNegative(),
         "Seed of the CMA-ES random streams (results are reproducible for a seed)",
         f(&Cmaes::seed));
  c.Acc("population_batch_size", T::kInt, "null", AtLeast(1),
        "Not used: every generation is evaluated in one batched data pass", kNullable);
  c.Acc("data_chunk_size", T::kInt, "null", AtLeast(1),
        "Not used: the data pass uses the fit's own blocks (and streaming windows)", kNullable);
  c.Acc("memory_limit_gb", T::kFloat, "8", Positive(),
        "Not used: the fit's memory plan (memory_fraction, --memory-limit) applies");
  c.Used("auto_select", T::kBool, "true", NoRule(),
         "Run CMA-ES only when the bounds' scale ratio reaches scale_threshold (static template "
         "false)",
         f(&Cmaes::auto_select));
  c.Used("scale_threshold", T::kFloat, "1000", Positive(),
         "Ratio of the widest to the narrowest bound width that selects CMA-ES",
         f(&Cmaes::scale_threshold));
  c.Acc("normalize", T::kBool, "true", NoRule(),
        "The search always runs in the normalised box (logistic transform); false is accepted");
  c.Used("normalization_epsilon", T::kFloat, "1e-12", Positive(),
         "Bound widths at most this are held fixed, not searched",
         f(&Cmaes::normalization_epsilon));
  c.Used("refine_with_nlsq", T::kBool, "true", NoRule(),
         "Refine the CMA-ES answer with the local fit", f(&Cmaes::refine_with_nlsq));
  c.Used("search_max_points", T::kInt, "250000", AtLeast(0),
         "Above this many points the search evaluates every k-th row of each angle only "
         "(k = ceil(points / search_max_points), keeping at least 16 rows per angle); the "
         "refinement and the comparison with the warm start use all points. 0: every point "
         "(docs/global.md)",
         f(&Cmaes::search_max_points));
  c.Acc("refinement_workflow", T::kString, "auto", NoRule(),
        "Not used: the refinement is the ordinary local fit");
  c.Acc("refinement_ftol", T::kFloat, "1e-10", Positive(),
        "Not used: the refinement uses optimization.nlsq.tolerance");
  c.Acc("refinement_xtol", T::kFloat, "1e-10", Positive(),
        "Not used: the refinement uses optimization.nlsq.xtol");
  c.Acc("refinement_gtol", T::kFloat, "1e-10", Positive(),
        "Not used: the refinement uses optimization.nlsq.gtol");
  c.Acc("refinement_max_nfev", T::kInt, "500", AtLeast(1),
        "Not used: the refinement uses optimization.nlsq.max_iterations");
  c.Used("refinement_loss", T::kString, "linear", OneOf(ChoiceNames<model::LossKind>()),
         "Loss of the local fit that refines the CMA-ES answer (C = sigma = 0.01 in c2 units, as "
         "in homodyne); the "
         "warm start, the search's fitness and the choice of the answer use the fit's loss",
         f(&Cmaes::refinement_loss));
  c.Acc("diagonal_filtering", T::kString, "remove", NoRule(),
        "Not used: the fit never includes the diagonal (only pairs t1 < t2)");
}

// xpcsjax's flat keys under optimization.nlsq (heterodyne NLSQConfig.from_dict) that have
// an equivalent here: a copy of the nested entry, unbound (BuildOptimization applies it;
// it wins over the nested key, as in xpcsjax).
constexpr struct {
  const char* flat;
  const char* nested;
} kFlatNlsqKeys[] = {
    {"ftol", "tolerance"},
    {"nlsq_memory_fraction", "memory_fraction"},
    {"per_angle_mode", "anti_degeneracy.per_angle_mode"},
    {"constant_scaling_threshold", "anti_degeneracy.constant_scaling_threshold"},
    {"fourier_order", "anti_degeneracy.fourier_order"},
    {"fourier_auto_threshold", "anti_degeneracy.fourier_auto_threshold"},
    {"execute_layers", "anti_degeneracy.execute_layers"},
    {"enable_hierarchical", "anti_degeneracy.hierarchical.enable"},
    {"hierarchical_max_outer_iterations", "anti_degeneracy.hierarchical.max_outer_iterations"},
    {"hierarchical_outer_tolerance", "anti_degeneracy.hierarchical.outer_tolerance"},
    {"hierarchical_inner_tolerance", "anti_degeneracy.hierarchical.inner_tolerance"},
    {"regularization_mode", "anti_degeneracy.regularization.mode"},
    {"group_variance_lambda", "anti_degeneracy.regularization.lambda"},
    {"regularization_target_cv", "anti_degeneracy.regularization.target_cv"},
    {"enable_gradient_monitoring", "anti_degeneracy.gradient_monitoring.enable"},
    {"gradient_ratio_threshold", "anti_degeneracy.gradient_monitoring.ratio_threshold"},
    {"gradient_consecutive_triggers", "anti_degeneracy.gradient_monitoring.consecutive_triggers"},
    {"enable_cmaes", "cmaes.enable"},
    {"cmaes_sigma0", "cmaes.sigma"},
    {"cmaes_max_iterations", "cmaes.max_generations"},
    {"cmaes_population_size", "cmaes.popsize"},
    {"cmaes_tolx", "cmaes.tol_x"},
    {"cmaes_tolfun", "cmaes.tol_fun"},
    {"cmaes_diagonal_filtering", "cmaes.diagonal_filtering"},
    {"cmaes_warmstart_auto_skip", "cmaes.warmstart_auto_skip"},
    {"cmaes_warmstart_skip_threshold", "cmaes.warmstart_skip_threshold"},
    {"cmaes_restart_strategy", "cmaes.restart_strategy"},
    {"cmaes_max_restarts", "cmaes.max_restarts"},
    {"multistart", "multi_start.enable"},
    {"multistart_n", "multi_start.n_starts"},
    {"screen_keep_fraction", "multi_start.screen_keep_fraction"},
    {"refine_top_k", "multi_start.refine_top_k"},
};

// xpcsjax's flat keys without an equivalent here: accepted, not used.
void AddFlatWithoutEquivalent(const KeyAdder& n) {
  const char* why = "xpcsjax flat key; not used: ";
  auto acc = [&](const char* name, KeyType type, const char* what) {
    n.Acc(name, type, "", NoRule(), std::string(why) + what, kNullable);
  };
  acc("method", T::kString, "its trust-region variant (the local method is local_solver)");
  acc("max_nfev", T::kInt, "its evaluation budget (the budget is max_iterations)");
  acc("use_jac", T::kBool, "the Jacobian is always analytic");
  acc("diff_step", T::kFloat, "no finite differences are taken");
  acc("chunk_size", T::kInt, "the data blocks follow the memory plan");
  acc("enable_streaming", T::kBool, "streaming follows the memory plan (docs/streaming.md)");
  acc("streaming_chunk_size", T::kInt, "streaming windows follow the memory plan");
  acc("enable_stratified", T::kBool, "no stratified path");
  acc("target_chunk_size", T::kInt, "no stratified path");
  acc("enable_recovery", T::kBool, "stall recovery is optimization.nlsq.recovery");
  acc("max_recovery_attempts", T::kInt, "stall recovery is optimization.nlsq.recovery");
  acc("enable_diagnostics", T::kBool, "diagnostics are always written");
  acc("enable_anti_degeneracy", T::kBool, "xpcsjax's heterodyne path reads it neither");
  acc("cmaes_anti_degeneracy", T::kBool, "no anti-degeneracy inside CMA-ES");
  acc("loss_weights", T::kAny, "the residuals are unweighted");
  acc("loss_scale", T::kFloat, "xpcsjax never applies it either (the loss scale is f_scale)");
  acc("tr_solver", T::kString, "no trust-region sub-solver choice");
  acc("step_bound", T::kFloat, "no step bound");
  acc("sampling_strategy", T::kString, "multi_start.sampling_strategy sets the sampling");
  acc("hybrid_enable", T::kBool, "no hybrid streaming optimizer");
  acc("hybrid_warmup_fraction", T::kFloat, "no hybrid streaming optimizer");
  acc("hybrid_normalization", T::kBool, "no hybrid streaming optimizer");
  acc("hybrid_method", T::kString, "no hybrid streaming optimizer");
  acc("hybrid_lbfgs_memory", T::kInt, "no hybrid streaming optimizer");
  acc("hybrid_convergence_window", T::kInt, "no hybrid streaming optimizer");
  acc("hybrid_convergence_threshold", T::kFloat, "no hybrid streaming optimizer");
  acc("hybrid_max_phases", T::kInt, "no hybrid streaming optimizer");
  acc("use_nlsq_library", T::kBool, "the solvers are homodyne-hpc's own");
  acc("n_params", T::kInt, "the parameter count follows analysis_mode");
  acc("analysis_mode", T::kString, "the mode is the top-level analysis_mode");
  acc("nlsq_stability", T::kString, "no NLSQ-package stability checks");
  acc("nlsq_rescale_data", T::kBool, "the data are not rescaled");
  acc("nlsq_x_scale", T::kAny, "steps are scaled by the Jacobian (x_scale: jac)");
  acc("nlsq_memory_fallback_gb", T::kFloat, "the node memory is always detected");
}

void AddFlatEquivalents(std::vector<KeySpec>& table) {
  for (const auto& alias : kFlatNlsqKeys) {
    const std::string nested = std::string("optimization.nlsq.") + alias.nested;
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const KeySpec& s) { return s.path == nested; });
    if (it == table.end()) ThrowInternal("key table: no entry " + nested + " for a flat key");
    KeySpec flat = *it;
    flat.path = std::string("optimization.nlsq.") + alias.flat;
    flat.default_yaml.clear();
    flat.flags |= kNullable;
    flat.field = {};
    flat.description =
        fmt::format("xpcsjax's flat form of {} (wins over it): {}", alias.nested, it->description);
    table.push_back(std::move(flat));
  }
}

void AddQualityValidation(const KeyAdder& q) {
  q.Section("", kAcc, "Post-fit quality warnings", kNullable);
  q.Acc("enable", T::kBool, "true", NoRule(), "Enable the checks");
  q.Acc("reduced_chi_squared_threshold", T::kFloat, "10", Positive(), "Warn above this");
  q.Acc("warn_on_max_restarts", T::kBool, "true", NoRule(), "Warn when restarts ran out");
  q.Acc("warn_on_bounds_hit", T::kBool, "true", NoRule(), "Warn for parameters at a bound");
  q.Acc("warn_on_convergence_failure", T::kBool, "true", NoRule(), "Warn on non-convergence");
  q.Acc("bounds_tolerance", T::kFloat, "1e-9", NonNegative(), "Distance counted as at bound");
}

}  // namespace

void AddNlsqKeys(std::vector<KeySpec>& table) {
  KeyAdder o(table, "optimization");
  o.Section("", KeyStatus::kUsed, "Optimizer settings");
  const FieldsOf f([](auto& c) -> auto& { return c.optimization; });
  o.Used("method", T::kString, "nlsq", OneOf(ChoiceNames<FitMethod>()),
         "Default method; mcmc is a legacy name of cmc (the --method flag overrides)",
         f(&Optimization::method));
  const KeyAdder n = o.Sub("nlsq");
  AddNlsqBasics(n);
  AddHybridStreaming(n.Sub("hybrid_streaming"));
  AddAntiDegeneracy(n.Sub("anti_degeneracy"));
  AddMultiStart(n.Sub("multi_start"));
  AddCmaes(n.Sub("cmaes"));
  AddRecovery(n.Sub("recovery"));
  AddQualityValidation(n.Sub("quality_validation"));
  AddFlatEquivalents(table);
  AddFlatWithoutEquivalent(n);
}

const std::vector<std::pair<std::string, std::string>>& FlatNlsqKeys() {
  static const std::vector<std::pair<std::string, std::string>> keys = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& alias : kFlatNlsqKeys) {
      out.emplace_back(std::string("optimization.nlsq.") + alias.flat,
                       std::string("optimization.nlsq.") + alias.nested);
    }
    return out;
  }();
  return keys;
}

}  // namespace homodyne::config::detail
