// optimization.* → typed options; optimization.mcmc overrides per_shard_mcmc (spec §3).
#include <string>

#include <fmt/format.h>

#include "config_builder.h"

namespace homodyne::config::detail {
namespace {

void ReadNlsq(const ValueReader& r, NlsqOptions& n, ProblemList& problems) {
  const std::string p = "optimization.nlsq.";
  n.max_iterations = r.Int(p + "max_iterations");
  n.tolerance = r.Number(p + "tolerance");
  n.xtol = r.Number(p + "xtol");
  n.gtol = r.Number(p + "gtol");
  n.memory_fraction = r.Number(p + "memory_fraction");
  n.memory_threshold_gb = r.OptNumber(p + "memory_threshold_gb");
  const YAML::Node scales = r.Find(p + "x_scale_map");
  if (scales.IsMap()) {
    for (const auto& kv : scales) {
      const std::string name = BaseParameterName(kv.first.Scalar());
      if (!IsKnownParameter(name)) {
        problems.Add(
            p + "x_scale_map." + kv.first.Scalar(),
            fmt::format("unknown parameter name '{}'{}", kv.first.Scalar(), LineSuffix(kv.first)));
        continue;
      }
      if (auto v = ParseNumber(kv.second.Scalar())) n.x_scale_map[name] = *v;
    }
  }
  const std::string a = p + "anti_degeneracy.";
  n.anti_degeneracy.section_present = r.Find(p + "anti_degeneracy").IsDefined();
  n.anti_degeneracy.enable = r.Bool(a + "enable");
  n.anti_degeneracy.per_angle_mode = r.String(a + "per_angle_mode");
  n.anti_degeneracy.constant_scaling_threshold = r.Int(a + "constant_scaling_threshold");
  n.anti_degeneracy.fourier_order = r.Int(a + "fourier_order");
  const std::string m = p + "multi_start.";
  MultiStart& ms = n.multi_start;
  ms.enable = r.Bool(m + "enable");
  ms.n_starts = r.Int(m + "n_starts");
  ms.seed = r.Int(m + "seed");
  ms.sampling_strategy = r.String(m + "sampling_strategy");
  ms.n_workers = r.Int(m + "n_workers");
  ms.use_screening = r.Bool(m + "use_screening");
  ms.screen_keep_fraction = r.Number(m + "screen_keep_fraction");
  ms.refine_top_k = r.Int(m + "refine_top_k");
  ms.refinement_ftol = r.Number(m + "refinement_ftol");
  ms.degeneracy_threshold = r.Number(m + "degeneracy_threshold");
}

void ReadStreaming(const ValueReader& r, StreamingOptions& s) {
  const std::string p = "optimization.streaming.";
  s.enable_checkpoints = r.Bool(p + "enable_checkpoints");
  s.checkpoint_dir = r.String(p + "checkpoint_dir");
  s.checkpoint_frequency = r.Int(p + "checkpoint_frequency");
  s.resume_from_checkpoint = r.Bool(p + "resume_from_checkpoint");
  s.keep_last_checkpoints = r.Int(p + "keep_last_checkpoints");
  s.enable_fault_tolerance = r.Bool(p + "enable_fault_tolerance");
  s.max_retries_per_batch = r.Int(p + "max_retries_per_batch");
  s.min_success_rate = r.Number(p + "min_success_rate");
  if (auto b = r.OptInteger(p + "batch_size")) s.batch_size = static_cast<int>(*b);
}

std::optional<int> ToOptInt(std::optional<long long> v) {
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

void ReadCmc(const ValueReader& r, CmcOptions& c) {
  const std::string p = "optimization.cmc.";
  c.enable = r.BoolOrAuto(p + "enable");
  c.min_points_for_cmc = r.Integer(p + "min_points_for_cmc");
  c.per_angle_mode = r.String(p + "per_angle_mode");
  c.constant_scaling_threshold = r.Int(p + "constant_scaling_threshold");
  c.prior_tempering = r.Bool(p + "prior_tempering");
  c.seed = r.Integer(p + "seed");
  c.per_shard_timeout = r.Number(p + "per_shard_timeout");
  c.heartbeat_timeout = r.Number(p + "heartbeat_timeout");
  const std::string b = p + "backend_config.";
  c.backend_config.name = r.String(b + "name");
  c.backend_config.enable_checkpoints = r.Bool(b + "enable_checkpoints");
  c.backend_config.checkpoint_frequency = r.Int(b + "checkpoint_frequency");
  c.backend_config.checkpoint_dir = r.String(b + "checkpoint_dir");
  c.backend_config.keep_last_checkpoints = r.Int(b + "keep_last_checkpoints");
  c.backend_config.resume_from_checkpoint = r.Bool(b + "resume_from_checkpoint");
  const std::string s = p + "sharding.";
  c.sharding.strategy = r.String(s + "strategy");
  c.sharding.num_shards = ToOptInt(r.IntOrAuto(s + "num_shards"));
  c.sharding.max_points_per_shard = ToOptInt(r.IntOrAuto(s + "max_points_per_shard"));
  c.sharding.min_points_per_shard = r.Int(s + "min_points_per_shard");
  c.sharding.seed_base = r.Int(s + "seed_base");
  c.sharding.min_points_per_param = r.Int(s + "min_points_per_param");
  const std::string m = p + "per_shard_mcmc.";
  c.per_shard_mcmc.num_warmup = r.Int(m + "num_warmup");
  c.per_shard_mcmc.num_samples = r.Int(m + "num_samples");
  c.per_shard_mcmc.num_chains = r.Int(m + "num_chains");
  c.per_shard_mcmc.target_accept_prob = r.Number(m + "target_accept_prob");
  c.per_shard_mcmc.max_tree_depth = r.Int(m + "max_tree_depth");
  const std::string v = p + "validation.";
  CmcValidation& val = c.validation;
  val.strict_mode = r.Bool(v + "strict_mode");
  val.min_per_shard_ess = r.Number(v + "min_per_shard_ess");
  val.max_per_shard_rhat = r.Number(v + "max_per_shard_rhat");
  val.max_between_shard_kl = r.Number(v + "max_between_shard_kl");
  val.min_success_rate = r.Number(v + "min_success_rate");
  val.max_divergence_rate = r.Number(v + "max_divergence_rate");
  val.require_nlsq_warmstart = r.Bool(v + "require_nlsq_warmstart");
  val.use_nlsq_informed_priors = r.Bool(v + "use_nlsq_informed_priors");
  val.nlsq_prior_width_factor = r.Number(v + "nlsq_prior_width_factor");
  val.max_parameter_cv = r.Number(v + "max_parameter_cv");
  val.heterogeneity_abort = r.Bool(v + "heterogeneity_abort");
  const std::string rp = p + "reparameterization.";
  c.reparameterization.enable_d_total = r.Bool(rp + "enable_d_total");
  c.reparameterization.enable_log_gamma = r.Bool(rp + "enable_log_gamma");
  c.reparameterization.bimodal_min_weight = r.Number(rp + "bimodal_min_weight");
  c.reparameterization.bimodal_min_separation = r.Number(rp + "bimodal_min_separation");
  const std::string cb = p + "combination.";
  c.combination.method = r.String(cb + "method");
  c.combination.validate_results = r.Bool(cb + "validate_results");
  c.combination.min_success_rate = r.Number(cb + "min_success_rate");
  c.combination.min_success_rate_warning = r.Number(cb + "min_success_rate_warning");
}

// optimization.mcmc.{num_warmup,num_samples,num_chains} overwrite per_shard_mcmc when set.
// (homodyne's CLI additionally substitutes 500/1000/4 when optimization.mcmc lacks them,
// which makes per_shard_mcmc unreachable; we keep per_shard_mcmc in that case.)
void ApplyMcmcOverrides(const ValueReader& r, Config& config) {
  PerShardMcmc& ps = config.optimization.cmc.per_shard_mcmc;
  const struct {
    const char* name;
    int* target;
  } overrides[] = {{"num_warmup", &ps.num_warmup},
                   {"num_samples", &ps.num_samples},
                   {"num_chains", &ps.num_chains}};
  for (const auto& o : overrides) {
    const std::string key = std::string("optimization.mcmc.") + o.name;
    if (!r.Has(key)) continue;
    const int value = r.Int(key);
    if (value != *o.target) {
      config.notes.push_back(
          fmt::format("{} = {} overrides optimization.cmc.per_shard_mcmc.{} "
                      "({})",
                      key, value, o.name, *o.target));
    }
    *o.target = value;
  }
}

}  // namespace

void BuildOptimization(const ValueReader& r, Config& config, ProblemList& problems) {
  config.optimization.method =
      ParseFitMethod(r.String("optimization.method"), "optimization.method", config.source);
  ReadNlsq(r, config.optimization.nlsq, problems);
  ReadStreaming(r, config.optimization.streaming);
  ReadCmc(r, config.optimization.cmc);
  ApplyMcmcOverrides(r, config);
}

}  // namespace homodyne::config::detail
