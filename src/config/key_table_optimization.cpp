// Key table: optimization.streaming, stratification, sequential, recovery, mcmc (spec §3).
#include "key_table_builder.h"

namespace homodyne::config::detail {
namespace {
using T = KeyType;
constexpr auto kAcc = KeyStatus::kAccepted;
constexpr auto kUse = KeyStatus::kUsed;
}  // namespace

namespace {

void AddStreamingKeys(std::vector<KeySpec>& table) {
  const FieldsOf f([](auto& c) -> auto& { return c.optimization.streaming; });
  const KeyAdder s(table, "optimization.streaming");
  s.Section("", kUse, "Batch-wise fitting, checkpoints and fault tolerance", kNullable);
  s.Used("enable_checkpoints", T::kBool, "false", NoRule(), "Write NLSQ/CMC checkpoints",
         f(&StreamingOptions::enable_checkpoints));
  s.Used("checkpoint_dir", T::kString, "./checkpoints", NoRule(),
         "Checkpoint folder (a relative one inside the output directory); each run uses its "
         "own subfolder, named by its data and config",
         f(&StreamingOptions::checkpoint_dir));
  s.Used("checkpoint_frequency", T::kInt, "10", AtLeast(1), "NLSQ iterations between checkpoints",
         f(&StreamingOptions::checkpoint_frequency));
  s.Used("resume_from_checkpoint", T::kBool, "false", NoRule(), "Resume from the last one",
         f(&StreamingOptions::resume_from_checkpoint));
  s.Used("keep_last_checkpoints", T::kInt, "3", AtLeast(1), "Checkpoints kept",
         f(&StreamingOptions::keep_last_checkpoints));
  s.Used("fatal_checkpoint_errors", T::kBool, "false", NoRule(),
         "A checkpoint that cannot be written ends the run (NLSQ, CMA-ES, multistart, CMC); "
         "false: a warning, the previous checkpoint stays valid and the fit goes on",
         f(&StreamingOptions::fatal_checkpoint_errors));
  s.Acc("enable_fault_tolerance", T::kBool, "true", NoRule(),
        "Retry failed batches (no effect here: a failed read ends the run; checkpoints resume it)",
        f(&StreamingOptions::enable_fault_tolerance));
  s.Acc("max_retries_per_batch", T::kInt, "2", NonNegative(),
        "Retries per batch (no effect here, as enable_fault_tolerance)",
        f(&StreamingOptions::max_retries_per_batch));
  s.Acc("min_success_rate", T::kFloat, "0.5", InRange(0, 1),
        "Minimum fraction of batches (no effect here, as enable_fault_tolerance)",
        f(&StreamingOptions::min_success_rate));
  s.Acc("batch_size", T::kInt, "null", AtLeast(1),
        "Points per batch (no effect here: the memory plan sets the blocks: memory_fraction, "
        "--memory-limit)",
        f(&StreamingOptions::batch_size), kNullable);
  s.Acc("adaptive_batching", T::kBool, "true", NoRule(), "Adapt the batch size");
}

}  // namespace

void AddOptimizationKeys(std::vector<KeySpec>& table) {
  AddStreamingKeys(table);
  const KeyAdder st(table, "optimization.stratification");
  st.Section("", kAcc, "Angle-stratified chunking of the residuals", kNullable);
  st.Acc("enabled", T::kBoolOrAuto, "auto", NoRule(), "Stratify chunks by angle");
  st.Acc("target_chunk_size", T::kInt, "100000", AtLeast(1), "Points per chunk");
  st.Acc("max_imbalance_ratio", T::kFloat, "5.0", AtLeast(1), "Allowed angle imbalance");
  st.Acc("force_sequential_fallback", T::kBool, "false", NoRule(), "Force sequential path");
  st.Acc("check_memory_safety", T::kBool, "true", NoRule(), "Check memory before chunking");
  st.Acc("use_index_based", T::kBool, "false", NoRule(), "Index-based stratification");
  st.Acc("collect_diagnostics", T::kBool, "false", NoRule(), "Collect chunk diagnostics");
  st.Acc("log_diagnostics", T::kBool, "false", NoRule(), "Log chunk diagnostics");

  const KeyAdder q(table, "optimization.sequential");
  q.Section("", kAcc, "Sequential per-angle fallback", kNullable);
  q.Acc("min_success_rate", T::kFloat, "0.5", InRange(0, 1), "Minimum fraction of angles");
  q.Acc("weighting", T::kString, "inverse_variance",
        OneOf({"inverse_variance", "uniform", "n_points"}), "How angle results are combined");

  const KeyAdder r(table, "optimization.recovery");
  r.Section("", kAcc, "Automatic retry of a failed fit", kNullable);
  r.Acc("enable", T::kBool, "true", NoRule(), "Enable retries");
  r.Acc("max_attempts", T::kInt, "3", AtLeast(1), "Attempts");
  r.Acc("lr_decay", T::kFloat, "0.5", Fraction(), "Learning-rate decay per retry");
  r.Acc("lambda_growth", T::kFloat, "2.0", Positive(), "Damping growth per retry");
  r.Acc("trust_decay", T::kFloat, "0.5", Fraction(), "Trust-radius decay per retry");
  r.Acc("log_retries", T::kBool, "true", NoRule(), "Log each retry");

  const KeyAdder af(table, "optimization");
  af.Acc("angle_filtering", T::kAnyMapping, "", NoRule(),
         "xpcsjax's optimizer-level angle filter; not used (xpcsjax never reads it either): "
         "phi_filtering selects the angles (enabled: true gives a note)",
         kNullable);

  const KeyAdder m(table, "optimization.mcmc");
  m.Section("", kUse,
            "Legacy sampler block; num_warmup/num_samples/num_chains overwrite "
            "optimization.cmc.per_shard_mcmc",
            kNullable);
  m.Acc("backend", T::kString, "numpyro", NoRule(), "Sampler backend name");
  m.Used("num_warmup", T::kInt, "null", NonNegative(),
         "Overrides cmc.per_shard_mcmc.num_warmup when set", kNullable);
  m.Used("num_samples", T::kInt, "null", AtLeast(1),
         "Overrides cmc.per_shard_mcmc.num_samples when set", kNullable);
  m.Used("num_chains", T::kInt, "null", AtLeast(1),
         "Overrides cmc.per_shard_mcmc.num_chains when set", kNullable);
  m.Acc("progress_bar", T::kBool, "true", NoRule(), "Show a progress bar");
  m.Acc("target_accept_prob", T::kFloat, "0.90", InRange(0, 1),
        "Not used, as in homodyne's code of today: optimization.cmc.per_shard_mcmc."
        "target_accept_prob sets the NUTS target");
  m.Acc("max_tree_depth", T::kInt, "12", AtLeast(1),
        "Not used, as in homodyne's code of today: optimization.cmc.per_shard_mcmc."
        "max_tree_depth sets the NUTS tree depth");
  // min_ess, max_rhat and dense_mass are read under their keys of today before this table is
  // consulted (earlier_keys.cpp).
  // homodyne's code hands these to its sampler too; ours has no equivalent.
  m.Acc("init_strategy", T::kString, "", NoRule(),
        "homodyne's chain initialisation; not used: chains start at each shard's posterior mode "
        "(docs/cmc.md)",
        kNullable);
  m.Acc("check_hmc_diagnostics", T::kBool, "true", NoRule(),
        "Not used: R-hat, ESS and divergences are always checked per shard");
  m.Acc("n_retries", T::kInt, "", NonNegative(), "Not used: a shard is sampled once", kNullable);
  m.Acc("rng_key", T::kInt, "", NoRule(),
        "Not used: chains draw from optimization.cmc.sharding.seed_base's streams", kNullable);
  m.Acc("stable_prior_fallback", T::kBool, "false", NoRule(),
        "Not used: the priors are those of parameter_space");
  m.Used("dense_mass_matrix", T::kBool, "true", NoRule(),
         "Dense (default) or diagonal metric of the NUTS chains; --dense-mass-matrix overrides");
  m.Acc("initial_values", T::kAnyMapping, "", NoRule(),
        "Initial-value hints (phi, percentile_fallback)", kNullable);
}

}  // namespace homodyne::config::detail
