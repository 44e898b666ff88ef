// Key table: optimization.cmc (consensus Monte Carlo; spec §3, §1.9).
#include "key_table_builder.h"

namespace homodyne::config::detail {
namespace {
using T = KeyType;
using PM = model::PerAngleMode;
constexpr auto kUse = KeyStatus::kUsed;

void AddCmcTop(const KeyAdder& c) {
  const FieldsOf f([](auto& cfg) -> auto& { return cfg.optimization.cmc; });
  c.Section("", kUse, "Consensus Monte Carlo (sharded NUTS sampling)", kNullable);
  c.Used("enable", T::kBoolOrAuto, "auto", NoRule(), "Use sharding (auto: large data only)",
         f(&CmcOptions::enable));
  c.Used("min_points_for_cmc", T::kInt, "100000", NonNegative(), "Points above which auto shards",
         f(&CmcOptions::min_points_for_cmc));
  c.Acc("run_id", T::kString, "null", NoRule(), "Run label", kNullable);
  c.Acc("backend", T::kString, "jax", NoRule(), "Legacy backend name");
  c.Used("per_angle_mode", T::kString, "auto",
         OneOf(ChoiceNames<model::PerAngleMode>(
             {PM::kAuto, PM::kConstant, PM::kConstantAveraged, PM::kIndividual}, false)),
         "Scaling layout of the sampled model", f(&CmcOptions::per_angle_mode));
  c.Used("constant_scaling_threshold", T::kInt, "3", AtLeast(1),
         "auto samples one shared contrast/offset when n_phi >= this",
         f(&CmcOptions::constant_scaling_threshold));
  c.Used("prior_tempering", T::kBool, "true", NoRule(), "Temper priors by the shard count",
         f(&CmcOptions::prior_tempering));
  c.Used("known_sigma", T::kFloat, "null", Positive(),
         "Noise sd of c2 when it is known: sigma is fixed at this value instead of sampled",
         f(&CmcOptions::known_sigma), kNullable);
  c.Used("seed", T::kInt, "42", NonNegative(), "Random seed (homodyne code default 42)",
         f(&CmcOptions::seed));
  c.Acc("per_shard_timeout", T::kFloat, "3600", Positive(),
        "Seconds per shard (no effect here: no shard runs apart to be timed out; the job's "
        "wall time and CMC checkpoints bound a run)",
        f(&CmcOptions::per_shard_timeout));
  c.Acc("heartbeat_timeout", T::kFloat, "600", Positive(),
        "Seconds without progress (no effect here: no worker processes to watch)",
        f(&CmcOptions::heartbeat_timeout));
}

void AddBackendAndSharding(const KeyAdder& c) {
  const FieldsOf fb([](auto& cfg) -> auto& { return cfg.optimization.cmc.backend_config; });
  const KeyAdder b = c.Sub("backend_config");
  b.Section("", kUse, "Execution backend and checkpoints", kNullable);
  b.Acc("name", T::kString, "auto", OneOf({"auto", "multiprocessing", "pjit", "pbs"}),
        "Backend (homodyne-hpc always uses MPI)", fb(&CmcBackendConfig::name));
  b.Used("enable_checkpoints", T::kBool, "true", NoRule(), "false: no CMC checkpoints",
         fb(&CmcBackendConfig::enable_checkpoints));
  b.Used("checkpoint_frequency", T::kInt, "100", AtLeast(1),
         "NUTS iterations per chain between checkpoints",
         fb(&CmcBackendConfig::checkpoint_frequency));
  b.Acc("checkpoint_dir", T::kString, "./checkpoints/cmc", NoRule(),
        "Ignored: CMC uses optimization.streaming.checkpoint_dir",
        fb(&CmcBackendConfig::checkpoint_dir));
  b.Used("keep_last_checkpoints", T::kInt, "3", AtLeast(1), "Checkpoints kept",
         fb(&CmcBackendConfig::keep_last_checkpoints));
  b.Acc("resume_from_checkpoint", T::kBool, "true", NoRule(),
        "Ignored: --resume / streaming.resume_from_checkpoint decide",
        fb(&CmcBackendConfig::resume_from_checkpoint));

  const FieldsOf fs([](auto& cfg) -> auto& { return cfg.optimization.cmc.sharding; });
  const KeyAdder s = c.Sub("sharding");
  s.Section("", kUse, "How the data are split into shards", kNullable);
  s.Used("strategy", T::kString, "random", OneOf(ChoiceNames<ShardStrategy>()),
         "Assignment of points to shards", fs(&CmcSharding::strategy));
  s.Used("num_shards", T::kIntOrAuto, "auto", AtLeast(1), "Number of shards",
         fs(&CmcSharding::num_shards));
  s.Used("max_points_per_shard", T::kIntOrAuto, "auto", AtLeast(1), "Upper shard size",
         fs(&CmcSharding::max_points_per_shard));
  s.Used("min_points_per_shard", T::kInt, "10000", AtLeast(1), "Lower shard size",
         fs(&CmcSharding::min_points_per_shard));
  s.Used("seed_base", T::kInt, "0", NonNegative(), "Base of per-shard seeds",
         fs(&CmcSharding::seed_base));
  s.Acc("min_points_per_param", T::kInt, "1500", AtLeast(1),
        "Points per parameter per shard (no effect here: a shard needs 10 points per sampled "
        "parameter, docs/cmc.md)",
        fs(&CmcSharding::min_points_per_param));

  const FieldsOf fm([](auto& cfg) -> auto& { return cfg.optimization.cmc.combination; });
  const KeyAdder m = c.Sub("combination");
  m.Section("", kUse, "Combination of shard posteriors", kNullable);
  m.Used("method", T::kString, "robust_consensus_mc", OneOf(ChoiceNames<CombinationMethod>()),
         "Combination rule", fm(&CmcCombination::method));
  m.Acc("validate_results", T::kBool, "true", NoRule(),
        "Validate shards before combining (no effect here: the shard filters always run; "
        "homodyne does not read it either)",
        fm(&CmcCombination::validate_results));
  m.Used("min_success_rate", T::kFloat, "0.90", InRange(0, 1),
         "Minimum fraction of successful shards (laminar template 0.80)",
         fm(&CmcCombination::min_success_rate));
  m.Used("min_success_rate_warning", T::kFloat, "0.80", InRange(0, 1), "Warn below this",
         fm(&CmcCombination::min_success_rate_warning));
}

void AddSamplerAndChecks(const KeyAdder& c) {
  const FieldsOf fp([](auto& cfg) -> auto& { return cfg.optimization.cmc.per_shard_mcmc; });
  const KeyAdder p = c.Sub("per_shard_mcmc");
  p.Section("", kUse, "NUTS settings of every shard", kNullable);
  p.Used("num_warmup", T::kInt, "500", NonNegative(), "Warm-up iterations per chain",
         fp(&PerShardMcmc::num_warmup));
  p.Used("num_samples", T::kInt, "1500", AtLeast(1), "Samples per chain",
         fp(&PerShardMcmc::num_samples));
  p.Used("num_chains", T::kInt, "4", AtLeast(1), "Chains per shard", fp(&PerShardMcmc::num_chains));
  p.Acc("chain_method", T::kString, "parallel", NoRule(), "How chains are run");
  p.Used("target_accept_prob", T::kFloat, "0.85", OpenUnit(), "NUTS target acceptance",
         fp(&PerShardMcmc::target_accept_prob));
  p.Acc("adaptive_sampling", T::kBool, "true", NoRule(), "Shrink warm-up/samples for small shards");
  p.Used("max_tree_depth", T::kInt, "10", AtLeast(1), "NUTS maximum tree depth",
         fp(&PerShardMcmc::max_tree_depth));
  p.Acc("subsample_size", T::kIntOrAuto, "auto", AtLeast(1),
        "homodyne's templates of 2025: points sampled per shard; not used: a shard's chains see "
        "all of its points (max_points_per_shard sizes the shards)");
  p.Acc("min_warmup", T::kInt, "100", NonNegative(), "Lower limit of adaptive warm-up");
  p.Acc("min_samples", T::kInt, "200", AtLeast(1), "Lower limit of adaptive samples");
  p.Acc("enable_jax_profiling", T::kBool, "false", NoRule(), "JAX profiling");
  p.Acc("jax_profile_dir", T::kString, "null", NoRule(), "JAX profile folder", kNullable);

  const FieldsOf fv([](auto& cfg) -> auto& { return cfg.optimization.cmc.validation; });
  const KeyAdder v = c.Sub("validation");
  v.Section("", kUse, "Convergence checks of shards", kNullable);
  v.Acc("strict_mode", T::kBool, "false", NoRule(),
        "Fail instead of warn (no effect here: the checks label the result and warn)",
        fv(&CmcValidation::strict_mode));
  v.Used("min_per_shard_ess", T::kFloat, "100", NonNegative(), "Minimum effective sample size",
         fv(&CmcValidation::min_per_shard_ess));
  v.Used("max_per_shard_rhat", T::kFloat, "1.1", AtLeast(1), "Maximum R-hat (laminar 1.2)",
         fv(&CmcValidation::max_per_shard_rhat));
  v.Acc("max_between_shard_kl", T::kFloat, "2.0", NonNegative(),
        "Maximum shard divergence (no effect here, nor in homodyne: the shard filter's "
        "heterogeneity check stands in)",
        fv(&CmcValidation::max_between_shard_kl));
  v.Acc("min_success_rate", T::kFloat, "0.90", InRange(0, 1),
        "Minimum fraction of shards (no effect here: combination.min_success_rate is the one "
        "homodyne checks)",
        fv(&CmcValidation::min_success_rate));
  v.Used("max_divergence_rate", T::kFloat, "0.10", InRange(0, 1), "Maximum divergent fraction",
         fv(&CmcValidation::max_divergence_rate));
  v.Used("warmup_retries", T::kInt, "1", InRange(0, 4),
         "Reruns of a shard above max_divergence_rate, each with twice the warmup",
         fv(&CmcValidation::warmup_retries));
  v.Used("require_nlsq_warmstart", T::kBool, "false", NoRule(), "Require an NLSQ warm start",
         fv(&CmcValidation::require_nlsq_warmstart));
  v.Used("use_nlsq_informed_priors", T::kBoolOrAuto, "auto", NoRule(),
         "Centre the physical priors on the NLSQ result (auto: yes for static and "
         "laminar_flow, no for two_component, whose intervals under-cover with them)",
         fv(&CmcValidation::use_nlsq_informed_priors));
  v.Used("nlsq_prior_width_factor", T::kFloat, "2.0", Positive(),
         "Prior width = factor x NLSQ uncertainty", fv(&CmcValidation::nlsq_prior_width_factor));
  v.Used("max_parameter_cv", T::kFloat, "1.0", Positive(),
         "Maximum between-shard variation (static template 1.5)",
         fv(&CmcValidation::max_parameter_cv));
  v.Used("heterogeneity_abort", T::kBool, "true", NoRule(), "Abort on heterogeneous shards",
         fv(&CmcValidation::heterogeneity_abort));

  const FieldsOf fr([](auto& cfg) -> auto& { return cfg.optimization.cmc.reparameterization; });
  const KeyAdder r = c.Sub("reparameterization");
  r.Section("", kUse, "Sampling reparameterizations", kNullable);
  r.Used("enable_d_total", T::kBool, "true", NoRule(),
         "Laminar auto mode: sample log D_ref, D_offset/D_ref (D_ref = D0 t_ref^alpha)",
         fr(&CmcReparameterization::enable_d_total));
  r.Used("enable_log_gamma", T::kBool, "true", NoRule(),
         "Laminar auto mode: sample log(gamma_dot_t0 t_ref^beta)",
         fr(&CmcReparameterization::enable_log_gamma));
  r.Used("scaling_geometry", T::kBool, "true", NoRule(),
         "Sample log contrast and offset + contrast (c2 at zero lag) per angle instead of "
         "contrast and offset; same posterior (priors stay on contrast/offset)",
         fr(&CmcReparameterization::scaling_geometry));
  r.Used("log_d0", T::kBool, "true", NoRule(),
         "Sample log D0 where log D_ref is not sampled; same posterior (prior stays on D0)",
         fr(&CmcReparameterization::log_d0));
  r.Used("laplace_whitening", T::kBool, "true", NoRule(),
         "Sample coordinates whitened by the shard's Laplace covariance at its mode "
         "(Gauss-Newton; the map is checked along its axes and a failed check is reported); "
         "same posterior",
         fr(&CmcReparameterization::laplace_whitening));
  r.Used("bimodal_min_weight", T::kFloat, "0.2", InRange(0, 1), "Bimodality weight threshold",
         fr(&CmcReparameterization::bimodal_min_weight));
  r.Used("bimodal_min_separation", T::kFloat, "0.5", NonNegative(), "Bimodality separation",
         fr(&CmcReparameterization::bimodal_min_separation));
}

}  // namespace

void AddCmcKeys(std::vector<KeySpec>& table) {
  const KeyAdder c(table, "optimization.cmc");
  AddCmcTop(c);
  AddBackendAndSharding(c);
  AddSamplerAndChecks(c);
  // Keys of homodyne's templates of late 2025 that its later code no longer reads.
  c.Acc("diagonal_correction", T::kBool, "true", NoRule(),
        "homodyne's templates of 2025; not used: the data's diagonal is corrected on loading "
        "(basic correction, as homodyne) and never fitted");
  c.Acc("initialization", T::kAnyMapping, "", NoRule(),
        "homodyne's SVI start of 2025 (run_nlsq_init, use_svi, …); not used: chains start at "
        "each shard's posterior mode from the NLSQ answer (docs/cmc.md)",
        kNullable);
}

}  // namespace homodyne::config::detail
