#include "cmc/cmc_phases.h"
#include "config/choices.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace homodyne::cmc::phases {

// ---------------------------------------------------------------------------------------
// Phases 7–9 (rank 0): shard filters, consensus, summaries.

Combination ParseCombination(const config::Config& cfg, const Logger& logger) {
  const config::CombinationMethod m = cfg.optimization.cmc.combination.method;
  if (m == config::CombinationMethod::kRobustConsensusMc) return Combination::kRobustConsensus;
  if (m != config::CombinationMethod::kConsensusMc) {
    logger.Warn("CMC: combination method '{}' is deprecated in homodyne; using consensus_mc",
                config::ChoiceName(m));
  }
  return Combination::kConsensus;
}

std::string_view ToString(Combination c) {
  return c == Combination::kRobustConsensus ? "robust_consensus_mc" : "consensus_mc";
}

// The transport and flow parameters whose shard means are compared (heterogeneity) and
// whose shard posteriors are tested for two modes: homodyne's list for its modes (names it
// lacks are skipped), the two rates' and the velocity's for two_component. By mode, so that
// neither list reaches another layout by a shared name.
std::vector<std::string> WatchedParameters(model::AnalysisMode mode) {
  if (mode == model::AnalysisMode::kTwoComponent) {
    return {"D0_ref",       "alpha_ref",       "D_offset_ref", "D0_sample",
            "alpha_sample", "D_offset_sample", "v0",           "v_beta"};
  }
  return {"D0", "alpha", "D_offset", "gamma_dot_t0", "beta"};
}

ShardFilterOptions FilterOptionsFromConfig(const config::Config& cfg, Combination combination,
                                           const std::vector<std::string>& names,
                                           const model::Bounds& bounds) {
  const auto& v = cfg.optimization.cmc.validation;
  ShardFilterOptions o;
  o.max_divergence_rate = v.max_divergence_rate;
  o.robust = combination == Combination::kRobustConsensus;
  o.max_parameter_cv = v.max_parameter_cv;
  o.heterogeneity_abort = v.heterogeneity_abort;
  o.scatter_rule = cfg.analysis_mode == model::AnalysisMode::kTwoComponent;
  for (std::size_t i = 0; i < names.size(); ++i) {
    o.parameter_ranges.push_back(bounds.upper[i] - bounds.lower[i]);
    for (const std::string& h : WatchedParameters(cfg.analysis_mode)) {
      if (names[i] == h) o.heterogeneity_parameters.push_back(static_cast<int>(i));
    }
  }
  return o;
}

// Each shard's draws in the model parameters (result.shard_draws holds the non-empty ones).
std::vector<ShardDraws> ShardDrawsInModelSpace(const std::vector<ShardDraws>& unconstrained,
                                               const SamplingSites& sites, int n_theta,
                                               CmcRunResult& result) {
  std::vector<ShardDraws> theta_draws;
  for (const auto& sd : unconstrained) {
    std::vector<double> x;
    x.reserve(sd.draws.size());
    for (std::size_t e = 0; e < sd.draws.size(); e += static_cast<std::size_t>(n_theta)) {
      const std::vector<double> th = sites.ToTheta(sd.draws.data() + e);
      x.insert(x.end(), th.begin(), th.end());
    }
    theta_draws.push_back({n_theta, x});
    if (!x.empty()) result.shard_draws.push_back(std::move(x));
  }
  return theta_draws;
}

// The shard filters (shard_filter.h), every rejection logged and reported; returns the
// kept shards' unconstrained draws.
std::vector<ShardDraws> FilterPhase(const config::Config& cfg, const SampledParameters& sp,
                                    const StartingPoint& start, GatheredShards gathered,
                                    const std::vector<ShardDraws>& theta_draws,
                                    CmcRunResult& result, const Logger& logger) {
  const Combination combination = ParseCombination(cfg, logger);
  std::vector<double> divergence;
  for (const auto& d : result.shards) divergence.push_back(d.divergence_rate);
  const ShardFilterOptions filter_options =
      FilterOptionsFromConfig(cfg, combination, sp.names(), start.bounds);
  const ShardFilterResult filter =
      FilterShards(theta_draws, divergence, sp.names(), filter_options);
  // The agreement statistic of every watched parameter, so that a user sees how close the
  // shards came to the heterogeneity rule, not only when it fires.
  if (!filter.parameter_q.empty()) {
    std::string q;
    for (std::size_t k = 0; k < filter.parameter_q.size(); ++k) {
      const auto col = static_cast<std::size_t>(filter_options.heterogeneity_parameters[k]);
      q += fmt::format("{}{} {:.3g}", k == 0 ? "" : ", ", sp.names()[col], filter.parameter_q[k]);
    }
    logger.Info("CMC: shard agreement, Cochran's Q on {} degree(s) of freedom: {}",
                std::count(filter.keep.begin(), filter.keep.end(), true) - 1, q);
  }
  result.combination_method = std::string(ToString(combination));
  for (const auto& rej : filter.rejected) {
    logger.Warn("CMC: shard {} rejected: {}", rej.shard, rej.reason);
    result.shards[static_cast<std::size_t>(rej.shard)].used = false;
    result.shards[static_cast<std::size_t>(rej.shard)].rejection = rej.reason;
  }
  for (const auto& w : filter.warnings) logger.Warn("{}", w);
  result.warnings = filter.warnings;
  std::vector<ShardDraws> kept;
  for (std::size_t sh = 0; sh < gathered.draws.size(); ++sh) {
    if (filter.keep[sh]) kept.push_back(std::move(gathered.draws[sh]));
  }
  result.shards_used = static_cast<int>(kept.size());
  WarnOnSuccessRate(cfg, result, logger);
  return kept;
}

// Bimodal shard posteriors of the physical parameters (every shard with draws, used or
// not, except shards above max_divergence_rate): reported, and warned about where ≥ 5 % of
// the shards hold two confirmed modes. A shard that diverged that often even after its
// warmup reruns has chains that did not sample its posterior (on the study of step 7b
// they sat at two points of one ridge, R̂ 1.83), so where its chains sit says nothing
// about modes; an outlier shard does count (it may be the other mode).
void BimodalityPhase(const config::Config& cfg, const SampledParameters& sp,
                     const std::vector<ShardDraws>& theta_draws, CmcRunResult& result,
                     const Logger& logger) {
  const auto& rp = cfg.optimization.cmc.reparameterization;
  std::vector<double> divergence_rates(theta_draws.size(), 0.0);
  for (const ShardDiagnostics& d : result.shards) {
    if (static_cast<std::size_t>(d.shard) < divergence_rates.size()) {
      divergence_rates[static_cast<std::size_t>(d.shard)] = d.divergence_rate;
    }
  }
  result.bimodality =
      DetectBimodality(DrawsOfSampledShards(theta_draws, divergence_rates,
                                            cfg.optimization.cmc.validation.max_divergence_rate),
                       sp.names(), WatchedParameters(cfg.analysis_mode), rp.bimodal_min_weight,
                       rp.bimodal_min_separation, result.num_chains);
  for (const BimodalParameter& b : result.bimodality) {
    // Shards that passed homodyne's screen but hold one (skewed) mode, or two modes that
    // neither a second chain nor another shard saw: said, not acted on.
    if (!b.screened_shards.empty() && b.bimodal_shards.empty()) {
      logger.Info(
          "CMC: {}: {} of {} shard(s) pass the two-Gaussian screen, {} of them with two "
          "separated modes that no second chain or shard confirms; treated as one mode",
          b.name, b.screened_shards.size(), b.shards_tested, b.unconfirmed_shards.size());
    }
    if (!b.flagged) continue;
    result.warnings.push_back(fmt::format(
        "CMC: {} is bimodal in {} of {} shard(s) (modes near {:.6g} and {:.6g}); the shards are "
        "combined by mode-aware consensus",
        b.name, b.bimodal_shards.size(), b.shards_tested, b.lower_mode, b.upper_mode));
    logger.Warn("{}", result.warnings.back());
  }
}

// The consensus weights (consensus.h): random sharding deals every angle and lag to every
// shard alike, so the shards share the posterior's directions (not always its width along
// each); whole angles (stratified) or consecutive rows (contiguous) give shards of
// different shapes.
ConsensusShape ConsensusShapeOf(const config::Config& cfg) {
  return cfg.optimization.cmc.sharding.strategy == ShardStrategy::kRandom
             ? ConsensusShape::kPooled
             : ConsensusShape::kPerShard;
}

// The consensus of the kept shards, in the model parameters (result.draws).
// With a parameter bimodal in enough shards, the mode-aware consensus (mode_aware.h);
// if it cannot be formed, the plain one with a warning saying why.
void CombinePhase(const std::vector<ShardDraws>& kept, const std::vector<ShardDraws>& theta_draws,
                  const SamplingSites& sites, const StartingPoint& start, int n_theta,
                  ConsensusShape shape, CmcRunResult& result, const Logger& logger) {
  logger.Info("CMC: consensus weights: {}",
              shape == ConsensusShape::kPooled
                  ? "the shards' pooled directions, each shard weighed by its precision along "
                    "each (random sharding)"
                  : "each shard's own inverse covariance (shards of different shapes)");
  std::vector<double> combined;
  const bool bimodal = std::any_of(result.bimodality.begin(), result.bimodality.end(),
                                   [](const BimodalParameter& b) { return b.flagged; });
  if (bimodal) {
    std::vector<int> kept_ids;
    for (const auto& d : result.shards) {
      if (d.used) kept_ids.push_back(d.shard);
    }
    ModeAwareResult m;
    if (kept_ids.size() == kept.size()) {
      m = CombineModeAware(kept, kept_ids, theta_draws, result.names, result.bimodality,
                           start.bounds.lower, start.bounds.upper, shape);
    } else {
      m.reason = "the combined shards could not be matched to their ids";
    }
    result.mode_aware.applied = m.applied;
    result.mode_aware.reason = m.reason;
    result.mode_aware.clusters = m.clusters;
    if (m.applied) {
      combined = std::move(m.draws.draws);
      for (const ModeCluster& c : m.clusters) {
        logger.Info("CMC: mode-aware consensus: {} population of {} shard(s), weight {:.3f}",
                    c.label, c.shards.size(), c.weight);
      }
    } else {
      result.warnings.push_back(fmt::format(
          "CMC: mode-aware consensus not formed ({}); one consensus of all shards, which lands "
          "between the modes",
          m.reason));
      logger.Warn("{}", result.warnings.back());
    }
  }
  if (combined.empty()) combined = CombineConsensus(kept, shape).draws;
  const int n_draws = static_cast<int>(combined.size()) / n_theta;
  for (int j = 0; j < n_draws; ++j) {
    const std::vector<double> th =
        sites.ToTheta(combined.data() + static_cast<std::size_t>(j * n_theta));
    result.draws.insert(result.draws.end(), th.begin(), th.end());
  }
}

// Phase: the posterior against the NLSQ warm start (rank 0).
void CompareWithNlsqPhase(const nlsq::NlsqRunResult* warm, CmcRunResult& result,
                          const Logger& logger) {
  if (warm == nullptr) return;
  result.nlsq_comparison = CompareWithNlsq(warm->report, result.parameters);
  for (const NlsqComparison& c : result.nlsq_comparison) {
    if (!c.disagrees) continue;
    result.warnings.push_back(fmt::format(
        "CMC and NLSQ disagree on {}: posterior {:.6g} ± {:.3g}, NLSQ {:.6g} ± {:.3g} (z = {:.2f} "
        "> {})",
        c.name, c.cmc_mean, c.cmc_std, c.nlsq_value, c.nlsq_std, c.z, kNlsqDisagreementZ));
    logger.Warn("{}", result.warnings.back());
  }
}

namespace {

// Why shard d misses the convergence thresholds of `result` (R̂ at or above, ESS below),
// naming the parameters; nothing when it meets both. A NaN (one chain) is not judged here.
std::optional<std::string> ShardNotConverged(const CmcRunResult& result,
                                             const ShardDiagnostics& d) {
  std::vector<std::string> rhat_names, ess_names;
  for (std::size_t p = 0; p < result.names.size() && p < d.rhat.size(); ++p) {
    if (d.rhat[p] >= result.rhat_threshold) rhat_names.push_back(result.names[p]);
    if (p < d.ess_bulk.size() && p < d.ess_tail.size() && d.Ess(p) < result.ess_threshold) {
      ess_names.push_back(result.names[p]);
    }
  }
  if (d.Converged(result.rhat_threshold, result.ess_threshold)) return std::nullopt;
  const bool rhat_bad = d.RhatFails(result.rhat_threshold);
  const bool ess_bad = d.EssFails(result.ess_threshold);
  std::vector<std::string> parts;
  if (rhat_bad) {
    parts.push_back(fmt::format("R-hat {:.3f} >= {:.3g} ({})", d.max_rhat, result.rhat_threshold,
                                fmt::join(rhat_names, ", ")));
  }
  if (ess_bad) {
    parts.push_back(fmt::format("min ESS {:.0f} < {:.0f} ({})", d.min_ess, result.ess_threshold,
                                fmt::join(ess_names, ", ")));
  }
  return fmt::format(
      "CMC shard {} not converged: {} (optimization.cmc.validation.max_per_shard_rhat, "
      "min_per_shard_ess); the posterior is labelled not_converged; longer chains are the "
      "first thing to try (num_warmup, num_samples; --n-warmup, --n-samples)",
      d.shard, fmt::join(parts, "; "));
}

}  // namespace

// Posterior means and standard deviations of the expanded parameters (physical +
// per-angle scaling), and the convergence summary of the shards.
void Summarise(model::AnalysisMode mode, const SampledParameters& sp, CmcRunResult& result) {
  const int n_theta = sp.size();
  const model::ExpandedIndex& index = sp.index;
  const int n_draws = static_cast<int>(result.draws.size()) / n_theta;
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> x(
      result.draws.data(), n_draws, n_theta);
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::MatrixXd centred = x.rowwise() - mean;
  const Eigen::MatrixXd cov = centred.transpose() * centred / std::max(1, n_draws - 1);
  std::vector<double> cov_opt(cov.data(), cov.data() + cov.size());
  const std::vector<double> mean_expanded =
      sp.layout.Expand(std::vector<double>(mean.data(), mean.data() + n_theta));
  const std::vector<double> cov_expanded = sp.layout.ExpandCovariance(cov_opt);
  const auto expanded_names = index.Names(mode);
  for (int e = 0; e < index.size(); ++e) {
    const int p = e - index.phys(0);
    result.parameters.push_back(
        {expanded_names[static_cast<std::size_t>(e)], mean_expanded[static_cast<std::size_t>(e)],
         std::sqrt(std::max(cov_expanded[static_cast<std::size_t>(e * index.size() + e)], 0.0)),
         p >= 0 && !sp.layout.PhysicalVaries(p)});
  }
  result.max_rhat = 0;
  result.min_ess = 1e300;
  double acc = 0;
  result.all_converged = true;
  for (const auto& d : result.shards) {
    if (std::isfinite(d.max_rhat)) result.max_rhat = std::max(result.max_rhat, d.max_rhat);
    result.min_ess = std::min(result.min_ess, d.min_ess);
    acc += d.acceptance_rate;
    if (auto why = ShardNotConverged(result, d)) {
      result.all_converged = false;
      result.warnings.push_back(std::move(*why));
    }
  }
  result.acceptance_rate =
      acc / static_cast<double>(std::max<std::size_t>(1, result.shards.size()));
}

// The coordinates the chains sample, in words (diagnostics.json).
std::string SampledCoordinates(const config::Config& cfg, const SamplingSites& sites) {
  std::string out = sites.geometry.Describe();
  if (sites.reparam.active()) {
    out += fmt::format("; {}{}{} (t_ref {:.4g} s)",
                       sites.reparam.diffusion ? "log D_ref, D_offset/D_ref" : "",
                       sites.reparam.diffusion && sites.reparam.shear ? ", " : "",
                       sites.reparam.shear ? "log gamma_ref" : "", sites.reparam.t_ref);
  }
  if (cfg.optimization.cmc.reparameterization.laplace_whitening) {
    out +=
        "; chains start at each shard's mode, whitened by the Laplace covariance there where "
        "the map passes its axis check (per shard: shard_diagnostics.json coordinates)";
  }
  return out;
}

// What the run was asked to do (every rank).
CmcRunResult ResultOfSettings(model::AnalysisMode mode, const SampledParameters& sp,
                              const SamplerSettings& sampler, const Shards& shards) {
  CmcRunResult result;
  result.analysis_mode = std::string(model::ToString(mode));
  result.per_angle_mode = std::string(model::ToString(sp.resolved));
  result.num_shards = shards.count;
  result.num_chains = sampler.chains;
  result.num_warmup = sampler.nuts.num_warmup;
  result.num_samples = sampler.nuts.num_samples;
  result.target_accept = sampler.nuts.target_accept;
  result.names = sp.names();
  return result;
}

void LogShards(const CmcRunResult& result, const Logger& logger) {
  for (const auto& d : result.shards) {
    logger.Info(
        "  shard {:>4}: {:>8} points  R-hat {:.3f}  min ESS {:>7.0f}  divergences {:.1f}%  "
        "accept {:.2f}  {}",
        d.shard, d.points, d.max_rhat, d.min_ess, 100.0 * d.divergence_rate, d.acceptance_rate,
        d.coordinates);
  }
  for (const auto& d : result.shards) {
    if (auto why = ShardNotConverged(result, d)) logger.Warn("{}", *why);
  }
}

}  // namespace homodyne::cmc::phases

namespace homodyne::cmc {

void WarnOnSuccessRate(const config::Config& cfg, CmcRunResult& result, const Logger& logger) {
  const auto& c = cfg.optimization.cmc.combination;
  const std::size_t total = result.shards.size();
  if (total == 0) return;
  const double rate = static_cast<double>(result.shards_used) / static_cast<double>(total);
  const bool critical = rate < c.min_success_rate_warning;
  if (!critical && !(rate < c.min_success_rate)) return;
  result.warnings.push_back(fmt::format(
      "CMC: {} of {} shards kept ({:.0f} %), below {} {:.0f} % "
      "(optimization.cmc.combination.{}): {}",
      result.shards_used, total, 100.0 * rate, critical ? "the minimum" : "the recommended",
      100.0 * (critical ? c.min_success_rate_warning : c.min_success_rate),
      critical ? "min_success_rate_warning" : "min_success_rate",
      critical ? "the posterior may be unreliable" : "look at the rejected shards"));
  if (critical) {
    logger.Error("{}", result.warnings.back());
  } else {
    logger.Warn("{}", result.warnings.back());
  }
}

}  // namespace homodyne::cmc
