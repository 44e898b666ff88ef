#include "cmc/cmc_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cmc/bounded_transform.h"
#include "cmc/consensus.h"
#include "cmc/reparameterization.h"
#include "cmc/shard_chains.h"
#include "cmc/shard_filter.h"
#include "cmc/shard_posterior.h"
#include "cmc/sharding.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "config/parameters.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/progress.h"
#include "io/dataset.h"
#include "io/writers.h"
#include "nlsq/result_files.h"
#include "nuts/diagnostics.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"
#include "parallel/collective.h"

namespace homodyne::cmc {
namespace {

model::ScalingLayout CmcLayout(const config::Config& cfg, int n_phi) {
  const std::string mode = cfg.optimization.cmc.per_angle_mode;
  if (mode == "individual") return model::ScalingLayout::kIndividual;
  if (mode == "constant") return model::ScalingLayout::kFixedConstant;
  if (mode == "constant_averaged") return model::ScalingLayout::kConstantAveraged;
  if (mode == "auto") {
    return n_phi >= cfg.optimization.cmc.constant_scaling_threshold
               ? model::ScalingLayout::kAveraged
               : model::ScalingLayout::kIndividual;
  }
  ThrowBadInput(fmt::format("per_angle_mode '{}' is not available for CMC: use auto, individual, "
                            "constant or constant_averaged",
                            mode),
                cfg.source, "optimization.cmc.per_angle_mode");
}

// The configured prior of a parameter (parameter_space), else TruncatedNormal(mid, w/4).
Prior ConfigPrior(const config::Config& cfg, const std::string& base, double lo, double hi) {
  Prior p{PriorType::kTruncatedNormal, 0.5 * (lo + hi), 0.25 * (hi - lo), lo, hi};
  for (const auto& b : cfg.parameter_space.bounds) {
    if (b.name != base) continue;
    p.type = ParsePriorType(b.prior_type, "parameter_space.bounds[].type");
    if (b.prior_mu) p.mu = *b.prior_mu;
    if (b.prior_sigma) p.sigma = *b.prior_sigma;
  }
  if (auto it = cfg.parameter_space.priors.find(base); it != cfg.parameter_space.priors.end()) {
    p.type = ParsePriorType(it->second.dist_type, "parameter_space.priors." + base + ".dist_type");
    if (it->second.mu) p.mu = *it->second.mu;
    if (it->second.sigma) p.sigma = *it->second.sigma;
  }
  p.lower = lo;
  p.upper = hi;
  return p;
}

double Median(std::vector<double> v) { return model::Percentile(std::move(v), 50.0); }

// 1.4826·MAD of the shard's values, floored at 0.001 (homodyne's noise scale).
double NoiseScale(const std::vector<model::RowTile>& tiles) {
  std::vector<double> v;
  for (const auto& t : tiles) v.insert(v.end(), t.data, t.data + t.count);
  if (v.empty()) return 0.001;
  const double m = Median(v);
  for (double& x : v) x = std::abs(x - m);
  return std::max(1.4826 * Median(v), 0.001);
}

// combination.method: robust_consensus_mc (filters + consensus) or consensus_mc; homodyne's
// deprecated element-wise rules fall back to consensus_mc with a warning.
std::string CombinationMethod(const config::Config& cfg, const Logger& logger) {
  const std::string m = cfg.optimization.cmc.combination.method;
  if (m == "robust_consensus_mc" || m == "consensus_mc") return m;
  logger.Warn("CMC: combination method '{}' is deprecated in homodyne; using consensus_mc", m);
  return "consensus_mc";
}

ShardFilterOptions FilterOptionsFromConfig(const config::Config& cfg,
                                           const std::vector<std::string>& names,
                                           const model::Bounds& bounds) {
  const auto& v = cfg.optimization.cmc.validation;
  ShardFilterOptions o;
  o.max_divergence_rate = v.max_divergence_rate;
  o.robust = cfg.optimization.cmc.combination.method == "robust_consensus_mc";
  o.max_parameter_cv = v.max_parameter_cv;
  o.heterogeneity_abort = v.heterogeneity_abort;
  for (std::size_t i = 0; i < names.size(); ++i) {
    o.parameter_ranges.push_back(bounds.upper[i] - bounds.lower[i]);
    for (const char* h : {"D0", "alpha", "D_offset", "gamma_dot_t0", "beta"}) {
      if (names[i] == h) o.heterogeneity_parameters.push_back(static_cast<int>(i));
    }
  }
  return o;
}

struct LocalShardResult {
  int shard = 0;
  ShardDiagnostics diag;
  std::vector<double> draws;  // unconstrained θ (σ dropped), chains pooled
};

}  // namespace

CmcRunResult RunCmcFit(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                       const Logger& logger) {
  const auto t_start = std::chrono::steady_clock::now();
  Progress progress(logger, "CMC");
  const model::AnalysisMode mode = cfg.analysis_mode;
  const io::Dataset data = RunCollectively(world, [&] {
    return io::LoadDataset(LoadOptionsFromConfig(cfg, options.data_file),
                           world.is_root() ? logger : Logger::Silent());
  });
  const io::DatasetMetadata& meta = data.meta;
  const std::int64_t nf = meta.n_frames;
  const int n_phi = static_cast<int>(meta.n_angles());
  if (nf < 3) {
    RunCollectively(world, [&] {
      ThrowBadInput(fmt::format("{} frame(s) selected; CMC needs at least 3", nf), meta.file,
                    "analyzer_parameters.start_frame/end_frame");
    });
  }
  const std::vector<double> phi = meta.phi_values();
  const std::vector<double> t_fit(meta.t.begin() + 1, meta.t.end());
  const model::Geometry geometry = GeometryFromConfig(cfg, meta.q_physics);

  // Layout, bounds, per-angle estimates (identical on every rank: same data, same rules).
  const model::ScalingLayout resolved = CmcLayout(cfg, n_phi);
  const model::ScalingBounds sb{cfg.contrast.min, cfg.contrast.max, cfg.offset.min, cfg.offset.max};
  std::vector<model::ScalingEstimate> estimates;
  for (int k = 0; k < n_phi; ++k) {
    std::vector<double> lags, values;
    for (std::int64_t i = 1; i < nf; ++i) {
      for (std::int64_t j = 1; j < nf; ++j) {
        lags.push_back(
            std::abs(meta.t[static_cast<std::size_t>(i)] - meta.t[static_cast<std::size_t>(j)]));
        values.push_back(data.at(static_cast<std::size_t>(k), i, j));
      }
    }
    estimates.push_back(model::EstimateScaling(lags, values, sb));
  }
  const model::ParameterLayout layout =
      model::ParameterLayout::Create(resolved, mode, phi, estimates);
  const model::ExpandedIndex index(mode, n_phi);
  const ExpandedStart start =
      RunCollectively(world, [&] { return ExpandedStartFromConfig(cfg, mode, estimates); });
  std::vector<double> expanded0 = start.values;
  const model::Bounds& eb = start.bounds;
  // Warm start: the whole expanded vector when it matches these data, else its physics.
  const nlsq::NlsqRunResult* warm = options.warm_start;
  const bool warm_physics =
      warm != nullptr && static_cast<int>(warm->report.physical_values.size()) == index.n_phys;
  if (warm != nullptr && static_cast<int>(warm->expanded.size()) == index.size()) {
    expanded0 = warm->expanded;
  } else if (warm_physics) {
    for (int p = 0; p < index.n_phys; ++p) {
      expanded0[static_cast<std::size_t>(index.phys(p))] =
          warm->report.physical_values[static_cast<std::size_t>(p)];
    }
  } else if (warm != nullptr) {
    RunCollectively(world, [&] {
      ThrowBadInput(
          fmt::format("the NLSQ warm start has {} physical parameters, {} mode needs {}",
                      warm->report.physical_values.size(), model::ToString(mode), index.n_phys),
          {}, "--nlsq-result");
    });
  }
  const model::Bounds bounds = layout.OptimiserBounds(eb);
  const int n_theta = layout.num_optimised();
  std::vector<double> theta0 = layout.FromExpanded(expanded0);
  for (int i = 0; i < n_theta; ++i) {  // strictly inside for the logistic transform
    const auto k = static_cast<std::size_t>(i);
    const double w = bounds.upper[k] - bounds.lower[k];
    theta0[k] = std::clamp(theta0[k], bounds.lower[k] + 1e-6 * w, bounds.upper[k] - 1e-6 * w);
  }

  // Sampling settings.
  const auto& mc = cfg.optimization.cmc.per_shard_mcmc;
  nuts::NutsOptions no;
  no.num_warmup = options.num_warmup >= 0 ? options.num_warmup : mc.num_warmup;
  no.num_samples = options.num_samples >= 0 ? options.num_samples : mc.num_samples;
  no.max_tree_depth = mc.max_tree_depth;
  no.target_accept = mode == model::AnalysisMode::kLaminarFlow
                         ? std::max(mc.target_accept_prob, 0.9)
                         : mc.target_accept_prob;
  no.metric = options.dense_metric ? nuts::MetricKind::kDense : nuts::MetricKind::kDiag;
  no.seed = static_cast<std::uint64_t>(cfg.optimization.cmc.seed);
  RunCollectively(world, [&] { no.Validate(); });
  const int n_chains = options.num_chains > 0 ? options.num_chains : mc.num_chains;

  // Shards.
  const std::int64_t n_points = static_cast<std::int64_t>(n_phi) * (nf - 1) * (nf - 2) / 2;
  ShardingOptions so;
  so.strategy = cfg.optimization.cmc.sharding.strategy;
  if (cfg.optimization.cmc.sharding.num_shards)
    so.num_shards = *cfg.optimization.cmc.sharding.num_shards;
  if (options.num_shards > 0) so.num_shards = options.num_shards;
  if (cfg.optimization.cmc.sharding.max_points_per_shard) {
    so.max_points_per_shard = *cfg.optimization.cmc.sharding.max_points_per_shard;
  }
  so.seed = static_cast<std::uint64_t>(cfg.optimization.cmc.sharding.seed_base) + no.seed;
  const int k_shards = RunCollectively(
      world, [&] { return NumShards(so, mode, n_points, n_phi, no.num_warmup, no.num_samples); });
  // What the consensus needs, checked before any sampling: every shard's draws must span
  // the full covariance of the sampled parameters, and every shard needs data enough for
  // them (10 points per sampled parameter and sigma at least).
  RunCollectively(world, [&] {
    const std::int64_t draws = static_cast<std::int64_t>(n_chains) * no.num_samples;
    if (draws < n_theta + 1) {
      ThrowBadInput(fmt::format("{} chain(s) × {} draws = {} draws per shard; the consensus "
                                "covariance of {} sampled parameters needs at least {} (raise "
                                "--n-samples / num_samples or --n-chains / num_chains)",
                                n_chains, no.num_samples, draws, n_theta, n_theta + 1),
                    {}, "optimization.cmc.per_shard_mcmc.num_samples");
    }
    const std::int64_t per_shard = n_points / k_shards;
    const std::int64_t needed = 10 * static_cast<std::int64_t>(n_theta + 1);
    if (per_shard < needed) {
      ThrowBadInput(fmt::format("{} shards of ~{} points each: a shard needs at least {} points "
                                "(10 per sampled parameter and sigma); {} points allow at most "
                                "{} shards",
                                k_shards, per_shard, needed, n_points,
                                std::max<std::int64_t>(1, n_points / needed)),
                    {}, "optimization.cmc.sharding.num_shards");
    }
  });
  const ShardPlan plan = BuildShardPlan(n_phi, 1, nf - 1, k_shards, so);
  const double temper = cfg.optimization.cmc.prior_tempering ? static_cast<double>(k_shards) : 1.0;
  logger.Info(
      "CMC: {} shard(s) of ~{} points, {} chain(s) × ({} warmup + {} draws), layout {}, {} sampled "
      "parameters + sigma",
      k_shards, n_points / k_shards, n_chains, no.num_warmup, no.num_samples,
      model::ToString(resolved), n_theta);

  // Priors of the sampled parameters.
  const auto& names = layout.names();
  std::vector<Prior> priors;
  const double width_factor = cfg.optimization.cmc.validation.nlsq_prior_width_factor;
  const bool informed = warm_physics && cfg.optimization.cmc.validation.use_nlsq_informed_priors;
  for (int i = 0; i < n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const std::string base = config::BaseParameterName(names[k]);
    const double lo = bounds.lower[k], hi = bounds.upper[k];
    const bool physical = i >= n_theta - index.n_phys;
    if (informed && physical) {
      const auto p = static_cast<std::size_t>(i - (n_theta - index.n_phys));
      const double s = warm->report.physical_uncertainties[p];
      const double scale =
          std::clamp(std::isfinite(s) && s > 0 ? width_factor * s : 0.1 * (hi - lo),
                     0.01 * (hi - lo), 0.5 * (hi - lo));
      priors.push_back(
          {PriorType::kTruncatedNormal, warm->report.physical_values[p], scale, lo, hi});
    } else {
      Prior pr = ConfigPrior(cfg, base, lo, hi);
      pr.temper = temper;
      priors.push_back(pr);
    }
  }

  // Sampling sites: the model parameters, or the reparameterised ones (laminar_flow with one
  // averaged contrast/offset, homodyne's default; reparameterization.h).
  std::vector<double> site_lower = bounds.lower, site_upper = bounds.upper;
  Reparameterization reparam;
  if (mode == model::AnalysisMode::kLaminarFlow && resolved == model::ScalingLayout::kAveraged) {
    reparam.diffusion = cfg.optimization.cmc.reparameterization.enable_d_total;
    reparam.shear = cfg.optimization.cmc.reparameterization.enable_log_gamma;
    reparam.first_phys = n_theta - index.n_phys;
    reparam.t_ref = std::sqrt(geometry.dt * meta.t.back());
    if (!(reparam.t_ref > 0.0) || !std::isfinite(reparam.t_ref)) reparam.t_ref = 1.0;
  }
  if (reparam.active()) {
    ReparamPriors rp;
    if (informed) {
      rp = ReparamPriorsFromEstimate(reparam.t_ref, warm->report.physical_values,
                                     warm->report.physical_uncertainties);
    }
    ReplaceSitePriors(reparam, rp, temper, priors, site_lower, site_upper);
    const auto site_names = reparam.SiteNames(names);
    for (int i = reparam.first_phys; i < n_theta; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (site_names[k] != names[k]) {
        logger.Info("CMC: sampling {} ~ {}({:.4g}, {:.4g}) instead of {} (t_ref {:.4g} s)",
                    site_names[k], ToString(priors[k].type), priors[k].mu, priors[k].sigma,
                    names[k], reparam.t_ref);
      }
    }
  }

  // Run this rank's shards (chains in batches between checkpoint safe points).
  checkpoint::CmcCheckpointSettings cs;
  cs.stop_on_signal = false;
  if (options.checkpoints) cs = *options.checkpoints;
  std::string data_id =
      checkpoint::DescribeData(meta.file, meta.q_physics, phi, nf, meta.dt, n_points);
  for (double v : theta0) data_id += fmt::format("cmc.theta0: {:a}\n", v);
  checkpoint::CmcChainRunner runner(
      world, cs, data_id, {k_shards, n_chains, no.num_warmup, no.num_samples, n_theta + 1}, logger);
  std::vector<LocalShardResult> local;
  auto RunLocalShards = [&] {
    for (int s = world.rank(); s < k_shards; s += world.size()) {
      MaybeInjectFailure("sampling", world.rank());  // reaches the others at a safe point
      std::vector<model::RowTile> tiles;
      for (const auto& seg : plan.shards[static_cast<std::size_t>(s)]) {
        const double* row = data.c2[static_cast<std::size_t>(seg.angle)].data() +
                            static_cast<std::size_t>(seg.row * nf + seg.col_begin);
        tiles.push_back({seg.angle, static_cast<int>(seg.row - 1),
                         static_cast<int>(seg.col_begin - 1), static_cast<int>(seg.count), row,
                         nullptr, 1.0});
      }
      LocalShardResult r;
      r.shard = s;
      r.diag.shard = s;
      r.diag.points = plan.Points(s);
      if (tiles.empty()) continue;
      const double noise = NoiseScale(tiles);
      ShardPosteriorSetup setup;
      setup.mode = mode;
      setup.geometry = geometry;
      setup.t = t_fit;
      setup.phi_deg = phi;
      setup.tiles = std::move(tiles);
      setup.priors = priors;
      setup.lower = site_lower;
      setup.upper = site_upper;
      setup.reparam = reparam;
      setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 1.5 * noise * std::sqrt(temper)};
      ShardChainOptions chain_options;
      chain_options.num_chains = n_chains;
      chain_options.threads = options.threads;
      chain_options.worker_start = options.worker_start;
      // Chains in parallel on the rank's threads, advanced in batches with the checkpoint
      // safe points between them (the same draws as one uninterrupted run per chain).
      runner.PrepareShard(s, n_chains);
      ChainRounds rounds;
      rounds.start = [&](const ShardPosterior& post, int c, std::span<const double> q0) {
        return runner.Start(s, c, post, no, q0);
      };
      rounds.advance = [&](int c, nuts::NutsChain& ch) { runner.Advance(s, c, ch); };
      rounds.round_end = [&] { runner.RoundEnd(); };
      RunShardChainsInRounds(setup, layout, theta0, noise, chain_options, rounds);
      std::vector<nuts::ChainRun> runs;
      for (int c = 0; c < n_chains; ++c) runs.push_back(runner.Result(s, c));
      double accept = 0, sigma_sum = 0;
      std::int64_t divergent = 0, saturated = 0, draws = 0;
      std::vector<nuts::Chains> chains(static_cast<std::size_t>(n_theta));
      for (const nuts::ChainRun& run : runs) {
        for (int p = 0; p < n_theta; ++p)
          chains[static_cast<std::size_t>(p)].push_back(run.Parameter(p));
        for (int j = 0; j < no.num_samples; ++j) {
          const double* q = run.draws.data() +
                            static_cast<std::size_t>(j) * static_cast<std::size_t>(n_theta + 1);
          r.draws.insert(r.draws.end(), q, q + n_theta);
          sigma_sum += std::exp(q[n_theta]);
        }
        r.diag.gradient_evaluations += run.summary.num_gradient_evaluations;
        for (const auto& st : run.stats) {
          accept += st.accept_stat;
          divergent += st.divergent ? 1 : 0;
          saturated += st.tree_depth >= no.max_tree_depth ? 1 : 0;
          ++draws;
        }
      }
      double max_rhat = 0, min_ess = 1e300;
      for (const auto& ch : chains) {
        if (n_chains > 1) max_rhat = std::max(max_rhat, nuts::SplitRankNormalizedRhat(ch).Max());
        const auto ess = nuts::SplitRankNormalizedEss(ch);
        min_ess = std::min(min_ess, std::min(ess.bulk, ess.tail));
      }
      r.diag.max_rhat = n_chains > 1 ? max_rhat : std::nan("");
      r.diag.min_ess = min_ess;
      r.diag.divergence_rate = draws > 0 ? static_cast<double>(divergent) / draws : 0.0;
      r.diag.acceptance_rate = draws > 0 ? accept / static_cast<double>(draws) : 0.0;
      r.diag.noise_sigma_mean = sigma_sum / static_cast<double>(std::max<std::int64_t>(draws, 1));
      r.diag.treedepth_saturation_rate =
          draws > 0 ? static_cast<double>(saturated) / static_cast<double>(draws) : 0.0;
      local.push_back(std::move(r));
      // Progress (rank 0's own shards stand for the others: same size, same settings).
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      const int mine = static_cast<int>(local.size());
      const int my_total = (k_shards - world.rank() + world.size() - 1) / world.size();
      progress.Update(fmt::format(
          "shard {} done ({}/{} on rank 0, {} in all), {:.0f} draws/s, ETA {:.0f} s", s, mine,
          my_total, k_shards,
          static_cast<double>(mine) * n_chains * (no.num_warmup + no.num_samples) / elapsed,
          elapsed / mine * (my_total - mine)));
    }
  };
  // A failure on one rank reaches the others at their next safe point (runner.Fail), so
  // no rank waits in a safe point for a rank that has left; the failing rank's error is the
  // agreed one.
  RunCollectively(world, [&] {
    try {
      RunLocalShards();
      runner.Finish();
    } catch (const checkpoint::SamplingAborted&) {
      // Another rank's sampling failed: its error is agreed below.
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCheckpointed) runner.Fail();
      throw;
    } catch (...) {
      runner.Fail();
      throw;
    }
  });

  // Gather every shard on rank 0: [shard, points, rhat, ess, div, acc, sigma, saturation,
  // gradient evaluations, n, draws...].
  std::vector<double> packed;
  for (const auto& r : local) {
    packed.insert(
        packed.end(),
        {static_cast<double>(r.shard), static_cast<double>(r.diag.points), r.diag.max_rhat,
         r.diag.min_ess, r.diag.divergence_rate, r.diag.acceptance_rate, r.diag.noise_sigma_mean,
         r.diag.treedepth_saturation_rate, static_cast<double>(r.diag.gradient_evaluations),
         static_cast<double>(r.draws.size())});
    packed.insert(packed.end(), r.draws.begin(), r.draws.end());
  }
  const int count = static_cast<int>(packed.size());
  std::vector<int> counts(static_cast<std::size_t>(world.size()));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world.get());
  std::vector<int> displs;
  int total = 0;
  if (world.is_root()) {
    for (int c : counts) {
      displs.push_back(total);
      total += c;
    }
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(packed.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, world.get());

  CmcRunResult result;
  result.analysis_mode = std::string(model::ToString(mode));
  result.per_angle_mode = std::string(model::ToString(resolved));
  result.num_shards = k_shards;
  result.num_chains = n_chains;
  result.num_warmup = no.num_warmup;
  result.num_samples = no.num_samples;
  result.names = names;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    std::vector<ShardDraws> shard_draws(static_cast<std::size_t>(k_shards));
    result.shards.resize(static_cast<std::size_t>(k_shards));
    std::size_t pos = 0;
    while (pos < all.size()) {
      const auto s = static_cast<std::size_t>(all[pos]);
      ShardDiagnostics& d = result.shards[s];
      d.shard = static_cast<int>(s);
      d.points = static_cast<std::int64_t>(all[pos + 1]);
      d.max_rhat = all[pos + 2];
      d.min_ess = all[pos + 3];
      d.divergence_rate = all[pos + 4];
      d.acceptance_rate = all[pos + 5];
      d.noise_sigma_mean = all[pos + 6];
      d.treedepth_saturation_rate = all[pos + 7];
      d.gradient_evaluations = static_cast<std::int64_t>(all[pos + 8]);
      const auto n = static_cast<std::size_t>(all[pos + 9]);
      shard_draws[s].dims = n_theta;
      shard_draws[s].draws.assign(all.begin() + static_cast<std::ptrdiff_t>(pos + 10),
                                  all.begin() + static_cast<std::ptrdiff_t>(pos + 10 + n));
      pos += 10 + n;
    }
    const auto to_theta = [&](const double* u) {
      return UnconstrainedToTheta(std::span<const double>(u, static_cast<std::size_t>(n_theta)),
                                  site_lower, site_upper, reparam);
    };
    std::vector<ShardDraws> theta_draws;
    for (auto& sd : shard_draws) {  // each shard's draws in the model parameters
      sd.dims = n_theta;
      std::vector<double> x;
      x.reserve(sd.draws.size());
      for (std::size_t e = 0; e < sd.draws.size(); e += static_cast<std::size_t>(n_theta)) {
        const std::vector<double> th = to_theta(sd.draws.data() + e);
        x.insert(x.end(), th.begin(), th.end());
      }
      theta_draws.push_back({n_theta, x});
      if (!x.empty()) result.shard_draws.push_back(std::move(x));
    }
    // Shard filtering (shard_filter.h), every rejection logged and reported.
    std::vector<double> divergence;
    for (const auto& d : result.shards) divergence.push_back(d.divergence_rate);
    const ShardFilterResult filter =
        FilterShards(theta_draws, divergence, names, FilterOptionsFromConfig(cfg, names, bounds));
    result.combination_method = CombinationMethod(cfg, logger);
    for (const auto& rej : filter.rejected) {
      logger.Warn("CMC: shard {} rejected: {}", rej.shard, rej.reason);
      result.shards[static_cast<std::size_t>(rej.shard)].used = false;
      result.shards[static_cast<std::size_t>(rej.shard)].rejection = rej.reason;
    }
    for (const auto& w : filter.warnings) logger.Warn("{}", w);
    result.warnings = filter.warnings;
    std::vector<ShardDraws> kept;
    for (std::size_t sh = 0; sh < shard_draws.size(); ++sh) {
      if (filter.keep[sh]) kept.push_back(std::move(shard_draws[sh]));
    }
    result.shards_used = static_cast<int>(kept.size());
    const ConsensusResult combined = CombineConsensus(kept);
    const int n_draws = static_cast<int>(combined.draws.size()) / n_theta;
    for (int j = 0; j < n_draws; ++j) {
      const std::vector<double> th =
          to_theta(combined.draws.data() + static_cast<std::size_t>(j * n_theta));
      result.draws.insert(result.draws.end(), th.begin(), th.end());
    }
    // Summaries of the expanded parameters (physical + per-angle scaling).
    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
        x(result.draws.data(), n_draws, n_theta);
    const Eigen::RowVectorXd mean = x.colwise().mean();
    const Eigen::MatrixXd centred = x.rowwise() - mean;
    const Eigen::MatrixXd cov = centred.transpose() * centred / std::max(1, n_draws - 1);
    std::vector<double> cov_opt(cov.data(), cov.data() + cov.size());
    const std::vector<double> mean_expanded =
        layout.Expand(std::vector<double>(mean.data(), mean.data() + n_theta));
    const std::vector<double> cov_expanded = layout.ExpandCovariance(cov_opt);
    const auto expanded_names = index.Names(mode);
    for (int e = 0; e < index.size(); ++e) {
      result.parameters.push_back(
          {expanded_names[static_cast<std::size_t>(e)], mean_expanded[static_cast<std::size_t>(e)],
           std::sqrt(std::max(cov_expanded[static_cast<std::size_t>(e * index.size() + e)], 0.0))});
    }
    result.max_rhat = 0;
    result.min_ess = 1e300;
    double acc = 0;
    result.all_converged = true;
    for (const auto& d : result.shards) {
      if (std::isfinite(d.max_rhat)) result.max_rhat = std::max(result.max_rhat, d.max_rhat);
      result.min_ess = std::min(result.min_ess, d.min_ess);
      acc += d.acceptance_rate;
      result.all_converged = result.all_converged && !(d.max_rhat >= 1.1);
    }
    result.acceptance_rate =
        acc / static_cast<double>(std::max<std::size_t>(1, result.shards.size()));
  });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  progress.Done(
      fmt::format("{} shard(s) × {} chain(s) in {:.1f} s", k_shards, n_chains, result.seconds));
  if (world.is_root()) {
    for (const auto& d : result.shards) {
      logger.Info(
          "  shard {:>4}: {:>8} points  R-hat {:.3f}  min ESS {:>7.0f}  divergences {:.1f}%  "
          "accept {:.2f}",
          d.shard, d.points, d.max_rhat, d.min_ess, 100.0 * d.divergence_rate, d.acceptance_rate);
    }
  }
  return result;
}

void WriteCmcResultFiles(const std::string& output_dir, const CmcRunResult& r) {
  using nlohmann::json;
  const std::filesystem::path dir = std::filesystem::path(output_dir) / "cmc";
  EnsureDirectory(dir);
  const std::string timestamp = IsoTimestampNow();
  json params;
  double c_mean = 0, c_var = 0, o_mean = 0, o_var = 0;
  int n_angles = 0;
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0) {
      c_mean += p.mean;
      c_var += p.std * p.std;
      ++n_angles;
    } else if (p.name.rfind("offset_", 0) == 0) {
      o_mean += p.mean;
      o_var += p.std * p.std;
    } else {
      params[p.name] = {{"mean", p.mean}, {"std", p.std}};
    }
  }
  if (n_angles > 0) {
    params["contrast"] = {{"mean", c_mean / n_angles}, {"std", std::sqrt(c_var / n_angles)}};
    params["offset"] = {{"mean", o_mean / n_angles}, {"std", std::sqrt(o_var / n_angles)}};
  }
  json per_angle = json::array();
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0 || p.name.rfind("offset_", 0) == 0) {
      per_angle.push_back({{"name", p.name}, {"mean", p.mean}, {"std", p.std}});
    }
  }
  const json convergence = {{"all_chains_converged", r.all_converged},
                            {"max_r_hat", r.max_rhat},
                            {"min_ess", r.min_ess},
                            {"acceptance_rate", r.acceptance_rate}};
  const json sampling = {
      {"n_samples", r.num_samples},
      {"n_warmup", r.num_warmup},
      {"n_chains", r.num_chains},
      {"n_shards", r.num_shards},
      {"total_samples",
       static_cast<std::int64_t>(r.draws.size() / std::max<std::size_t>(1, r.names.size()))},
      {"computation_time", r.seconds}};
  WriteFileAtomically(dir / "parameters.json", json{{"timestamp", timestamp},
                                                    {"analysis_mode", r.analysis_mode},
                                                    {"method", "cmc"},
                                                    {"sampling_summary", sampling},
                                                    {"convergence", convergence},
                                                    {"parameters", params},
                                                    {"per_angle", per_angle}}
                                                       .dump(2) +
                                                   "\n");
  const std::string flag = r.max_rhat < 1.05 ? "good" : r.max_rhat < 1.1 ? "acceptable" : "poor";
  WriteFileAtomically(
      dir / "analysis_results_cmc.json",
      json{{"method", "cmc"},
           {"timestamp", timestamp},
           {"analysis_mode", r.analysis_mode},
           {"sampling_quality",
            {{"convergence_status", r.all_converged ? "converged" : "not_converged"},
             {"quality_flag", flag}}},
           {"sampling_summary", sampling}}
              .dump(2) +
          "\n");
  json shards = json::array();
  for (const auto& d : r.shards) {
    shards.push_back({{"shard", d.shard},
                      {"points", d.points},
                      {"max_r_hat", d.max_rhat},
                      {"min_ess", d.min_ess},
                      {"divergence_rate", d.divergence_rate},
                      {"acceptance_rate", d.acceptance_rate},
                      {"sigma_mean", d.noise_sigma_mean},
                      {"treedepth_saturation_rate", d.treedepth_saturation_rate},
                      {"gradient_evaluations", d.gradient_evaluations},
                      {"used_in_combination", d.used},
                      {"rejection_reason", d.rejection}});
  }
  json rejected = json::array();
  for (const auto& d : r.shards) {
    if (!d.used) rejected.push_back({{"shard", d.shard}, {"reason", d.rejection}});
  }
  WriteFileAtomically(dir / "shard_diagnostics.json", shards.dump(2) + "\n");
  WriteFileAtomically(
      dir / "diagnostics.json",
      json{{"convergence", {{"all_chains_converged", r.all_converged}, {"r_hat_threshold", 1.1}}},
           {"cmc_specific",
            {{"num_shards", r.num_shards},
             {"num_shards_used", r.shards_used},
             {"combination_method", r.combination_method},
             {"rejected_shards", rejected},
             {"warnings", r.warnings},
             {"shard_summary", shards}}}}
              .dump(2) +
          "\n");
  const std::uint64_t n_draws = r.names.empty() ? 0 : r.draws.size() / r.names.size();
  io::GroupAttributes attrs;
  std::string names;
  for (const auto& n : r.names) names += (names.empty() ? "" : ",") + n;
  attrs.strings.emplace_back("param_names", names);
  std::vector<io::NamedArray> arrays = {
      {"/samples",
       {n_draws, static_cast<std::uint64_t>(r.names.size())},
       r.draws,
       "combined consensus draws (draws x params, constrained space)"}};
  for (std::size_t s = 0; s < r.shard_draws.size(); ++s) {
    arrays.push_back(
        {fmt::format("/shards/shard_{:05d}", s),
         {r.shard_draws[s].size() / r.names.size(), static_cast<std::uint64_t>(r.names.size())},
         r.shard_draws[s],
         "this shard's draws, chains one after the other (constrained space)"});
  }
  io::WriteArraysFile((dir / "samples.h5").string(), arrays, attrs);
}

}  // namespace homodyne::cmc
