#include "cmc/cmc_phases.h"

namespace homodyne::cmc::phases {

// ---------------------------------------------------------------------------------------
// Phase 3: sampler settings and shards.

SamplerSettings SamplerFromConfig(const Comm& world, const config::Config& cfg,
                                  const CmcRunOptions& options) {
  const auto& mc = cfg.optimization.cmc.per_shard_mcmc;
  SamplerSettings s;
  nuts::NutsOptions& no = s.nuts;
  no.num_warmup = options.num_warmup >= 0 ? options.num_warmup : mc.num_warmup;
  no.num_samples = options.num_samples >= 0 ? options.num_samples : mc.num_samples;
  no.max_tree_depth = mc.max_tree_depth;
  // Floors per mode: laminar_flow's is homodyne's; two_component's posterior has curved
  // ridges on which 0.85 left up to 10 % of the draws divergent in the coverage study
  // (docs/cmc.md), 0.95 none.
  no.target_accept = mc.target_accept_prob;
  if (cfg.analysis_mode == model::AnalysisMode::kLaminarFlow) {
    no.target_accept = std::max(no.target_accept, 0.9);
  } else if (cfg.analysis_mode == model::AnalysisMode::kTwoComponent) {
    no.target_accept = std::max(no.target_accept, 0.95);
  }
  no.metric = options.dense_metric ? nuts::MetricKind::kDense : nuts::MetricKind::kDiag;
  no.seed = static_cast<std::uint64_t>(cfg.optimization.cmc.seed);
  RunCollectively(world, [&] { no.Validate(); });
  s.chains = options.num_chains > 0 ? options.num_chains : mc.num_chains;
  return s;
}

Shards PlanShards(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                  const CmcData& d, int n_theta, const SamplerSettings& sampler) {
  const auto& cs = cfg.optimization.cmc.sharding;
  const nuts::NutsOptions& no = sampler.nuts;
  ShardingOptions so;
  so.strategy = cs.strategy;
  if (cs.num_shards) so.num_shards = *cs.num_shards;
  if (options.num_shards > 0) so.num_shards = options.num_shards;
  if (cs.max_points_per_shard) so.max_points_per_shard = *cs.max_points_per_shard;
  so.seed = static_cast<std::uint64_t>(cs.seed_base) + no.seed;
  const std::int64_t n_points = d.n_points;
  const int k_shards = RunCollectively(world, [&] {
    return NumShards(so, cfg.analysis_mode, n_points, d.n_phi, no.num_warmup, no.num_samples);
  });
  // What the consensus needs, checked before any sampling: every shard's draws must span
  // the full covariance of the sampled parameters, and every shard needs data enough for
  // them (10 points per sampled parameter and sigma at least).
  RunCollectively(world, [&] {
    const std::int64_t draws = static_cast<std::int64_t>(sampler.chains) * no.num_samples;
    if (draws < n_theta + 1) {
      ThrowBadInput(fmt::format("{} chain(s) × {} draws = {} draws per shard; the consensus "
                                "covariance of {} sampled parameters needs at least {} (raise "
                                "--n-samples / num_samples or --n-chains / num_chains)",
                                sampler.chains, no.num_samples, draws, n_theta, n_theta + 1),
                    {}, config::keys::Key(config::keys::kCmcPerShardMcmc, "num_samples"));
    }
    const std::int64_t per_shard = n_points / k_shards;
    const std::int64_t needed = 10 * static_cast<std::int64_t>(n_theta + 1);
    if (per_shard < needed) {
      ThrowBadInput(fmt::format("{} shards of ~{} points each: a shard needs at least {} points "
                                "(10 per sampled parameter and sigma); {} points allow at most "
                                "{} shards",
                                k_shards, per_shard, needed, n_points,
                                std::max<std::int64_t>(1, n_points / needed)),
                    {}, config::keys::Key(config::keys::kCmcSharding, "num_shards"));
    }
  });
  Shards s;
  s.count = k_shards;
  s.plan = BuildShardPlan(d.n_phi, 1, d.nf - 1, k_shards, so);
  s.temper = cfg.optimization.cmc.prior_tempering ? static_cast<double>(k_shards) : 1.0;
  return s;
}

// ---------------------------------------------------------------------------------------
// Phase 4: priors and sampling sites.

const config::EffectiveParameter& ConfiguredParameter(const config::Config& cfg,
                                                      const SampledParameters& sp, int i) {
  const int first_physical = sp.first_physical();
  const config::EffectiveParameter& p =
      i >= first_physical
          ? cfg.parameters.at(static_cast<std::size_t>(sp.SampledPhysical(i - first_physical)))
      : 2 * i < first_physical ? cfg.contrast
                               : cfg.offset;
  HOMODYNE_CHECK(sp.names()[static_cast<std::size_t>(i)].starts_with(p.name),
                 "a sampled column is matched with its configured parameter");
  return p;
}

Prior ConfigPrior(const config::EffectiveParameter& p, double lo, double hi) {
  return Prior{p.prior.type, p.prior.mu, p.prior.sigma, lo, hi};
}

bool NlsqInformedPriors(const config::Config& cfg) {
  switch (cfg.optimization.cmc.validation.use_nlsq_informed_priors) {
    case config::AutoSwitch::kAuto:
      return cfg.analysis_mode != model::AnalysisMode::kTwoComponent;
    case config::AutoSwitch::kTrue:
      return true;
    case config::AutoSwitch::kFalse:
      return false;
  }
  return false;
}

// The coordinate change that straightens the posterior (sampling_geometry.h) on the
// positions the reparameterisation leaves alone; its sites are unbounded (θ's box is a wall).
void AddSamplingGeometry(const config::Config& cfg, const std::vector<std::string>& names,
                         SamplingSites& s, const Logger& logger) {
  const auto& rp = cfg.optimization.cmc.reparameterization;
  s.geometry = MakeSamplingGeometry(names, s.theta_lower, rp.scaling_geometry,
                                    rp.log_d0 && !s.reparam.diffusion);
  if (!s.geometry.active()) return;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    if (!s.geometry.Changes(i)) continue;
    s.lower[static_cast<std::size_t>(i)] = -kInf;
    s.upper[static_cast<std::size_t>(i)] = kInf;
  }
  logger.Info("CMC: sampling {} (same posterior)", s.geometry.Describe());
}

SamplingSites BuildSamplingSites(const config::Config& cfg, const CmcData& d,
                                 const SampledParameters& sp, const StartingPoint& start,
                                 double temper, const Logger& logger) {
  const int n_theta = sp.size();
  const auto& names = sp.names();
  const auto& v = cfg.optimization.cmc.validation;
  const nlsq::NlsqRunResult* warm = start.warm_physics;
  const bool informed = warm != nullptr && NlsqInformedPriors(cfg);
  if (warm != nullptr) {
    logger.Info(
        "CMC: the physical priors are {} (optimization.cmc.validation."
        "use_nlsq_informed_priors: {})",
        informed ? "centred on the NLSQ answer" : "the configured ones",
        config::ChoiceName(v.use_nlsq_informed_priors));
  }
  SamplingSites s;
  for (int i = 0; i < n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double lo = start.bounds.lower[k], hi = start.bounds.upper[k];
    if (informed && i >= sp.first_physical()) {
      const auto p = static_cast<std::size_t>(sp.SampledPhysical(i - sp.first_physical()));
      const double sd = warm->report.physical_uncertainties[p];
      const double scale =
          std::clamp(std::isfinite(sd) && sd > 0 ? v.nlsq_prior_width_factor * sd : 0.1 * (hi - lo),
                     0.01 * (hi - lo), 0.5 * (hi - lo));
      // Tempered like every other prior: each of the K shard posteriors carries prior^(1/K),
      // so the consensus (their product) holds the prior once, as the full-data posterior
      // does. Untempered, the product held it K times and came out narrower.
      Prior pr{PriorType::kTruncatedNormal, warm->report.physical_values[p], scale, lo, hi};
      pr.temper = temper;
      s.priors.push_back(pr);
    } else {
      Prior pr = ConfigPrior(ConfiguredParameter(cfg, sp, i), lo, hi);
      pr.temper = temper;
      s.priors.push_back(pr);
    }
  }
  s.lower = start.bounds.lower;
  s.upper = start.bounds.upper;
  s.theta_lower = start.bounds.lower;
  s.theta_upper = start.bounds.upper;
  // The reparameterisation addresses the physics by position: only with all of them sampled.
  if (cfg.analysis_mode == model::AnalysisMode::kLaminarFlow &&
      sp.resolved == model::ScalingLayout::kAveraged && sp.layout.num_physical_held() == 0) {
    Reparameterization& r = s.reparam;
    r.diffusion = cfg.optimization.cmc.reparameterization.enable_d_total;
    r.shear = cfg.optimization.cmc.reparameterization.enable_log_gamma;
    r.first_phys = sp.first_physical();
    r.t_ref = std::sqrt(d.geometry.dt * d.meta().t.back());
    if (!(r.t_ref > 0.0) || !std::isfinite(r.t_ref)) r.t_ref = 1.0;
  }
  AddSamplingGeometry(cfg, names, s, logger);
  if (!s.reparam.active()) return s;
  ReparamPriors rp;
  if (informed) {
    rp = ReparamPriorsFromEstimate(s.reparam.t_ref, warm->report.physical_values,
                                   warm->report.physical_uncertainties);
  }
  ReplaceSitePriors(s.reparam, rp, temper, s.priors, s.lower, s.upper);
  const auto site_names = s.reparam.SiteNames(names);
  for (int i = s.reparam.first_phys; i < n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (site_names[k] != names[k]) {
      logger.Info("CMC: sampling {} ~ {}({:.4g}, {:.4g}) instead of {} (t_ref {:.4g} s)",
                  site_names[k], cmc::ToString(s.priors[k].type), s.priors[k].mu, s.priors[k].sigma,
                  names[k], s.reparam.t_ref);
    }
  }
  return s;
}

}  // namespace homodyne::cmc::phases
