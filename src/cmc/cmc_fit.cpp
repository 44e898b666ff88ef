#include "cmc/cmc_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "cmc/bounded_transform.h"
#include "cmc/consensus.h"
#include "cmc/mode_aware.h"
#include "cmc/reparameterization.h"
#include "cmc/shard_chains.h"
#include "cmc/shard_filter.h"
#include "cmc/shard_posterior.h"
#include "cmc/sharding.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "config/key_paths.h"
#include "config/parameters.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/progress.h"
#include "io/content_digest.h"
#include "io/dataset.h"
#include "nlsq/fit_report.h"
#include "nuts/diagnostics.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"
#include "parallel/collective.h"

namespace homodyne::cmc {
namespace {

// ---------------------------------------------------------------------------------------
// Phase 1: the data, complete on every rank (a shard takes rows from the whole
// matrix).

struct CmcData {
  std::optional<io::Dataset> loaded;         // read from the file, or
  const io::DatasetView *borrowed = nullptr; // the caller's in-memory data
  std::int64_t nf = 0;                       // frames
  int n_phi = 0;                             // angles
  std::int64_t n_points = 0; // fitted (1 ≤ i < j) pairs of all angles
  std::vector<double> phi;   // degrees
  std::vector<double> t_fit; // times of frames 1…nf−1
  model::Geometry geometry;

  const io::DatasetMetadata &meta() const {
    return loaded ? loaded->meta : borrowed->meta;
  }
  const std::vector<std::vector<double>> &matrices() const {
    return loaded ? loaded->c2 : *borrowed->c2;
  }
  double at(int angle, std::int64_t i, std::int64_t j) const {
    return matrices()[static_cast<std::size_t>(angle)]
                     [static_cast<std::size_t>(i * nf + j)];
  }
};

CmcData LoadData(const Comm &world, const config::Config &cfg,
                 const CmcRunOptions &options, const Logger &logger) {
  CmcData d;
  if (options.in_memory != nullptr) {
    d.borrowed = options.in_memory;
  } else {
    d.loaded = RunCollectively(world, [&] {
      return io::LoadDataset(LoadOptionsFromConfig(cfg, options.data_file),
                             world.is_root() ? logger : Logger::Silent());
    });
  }
  const io::DatasetMetadata &meta = d.meta();
  d.nf = meta.n_frames;
  d.n_phi = static_cast<int>(meta.n_angles());
  if (d.nf < 3) {
    RunCollectively(world, [&] {
      ThrowBadInput(
          fmt::format("{} frame(s) selected; CMC needs at least 3", d.nf),
          meta.file, config::keys::FrameWindowKey());
    });
  }
  d.n_points = static_cast<std::int64_t>(d.n_phi) * (d.nf - 1) * (d.nf - 2) / 2;
  d.phi = meta.phi_values();
  d.t_fit.assign(meta.t.begin() + 1, meta.t.end());
  d.geometry = GeometryFromConfig(cfg, meta.q_physics);
  return d;
}

// ---------------------------------------------------------------------------------------
// Phase 2: the sampled parameters (per-angle layout), their bounds and starting
// point (identical on every rank: same data, same rules).

std::string PerAngleModeKey() {
  return config::keys::Key(config::keys::kCmc, "per_angle_mode");
}

model::ScalingLayout CmcLayout(const config::Config &cfg, int n_phi) {
  const auto &c = cfg.optimization.cmc;
  switch (model::ParsePerAngleMode(c.per_angle_mode, PerAngleModeKey())) {
  case model::PerAngleMode::kIndividual:
    return model::ScalingLayout::kIndividual;
  case model::PerAngleMode::kConstant:
    return model::ScalingLayout::kFixedConstant;
  case model::PerAngleMode::kConstantAveraged:
    return model::ScalingLayout::kConstantAveraged;
  case model::PerAngleMode::kAuto:
    return n_phi >= c.constant_scaling_threshold
               ? model::ScalingLayout::kAveraged
               : model::ScalingLayout::kIndividual;
  case model::PerAngleMode::kFourier:
    break;
  }
  ThrowBadInput(
      fmt::format(
          "per_angle_mode '{}' is not available for CMC: use auto, individual, "
          "constant or constant_averaged",
          c.per_angle_mode),
      cfg.source, PerAngleModeKey());
}

struct SampledParameters {
  model::ScalingLayout resolved;
  model::ParameterLayout layout;
  model::ExpandedIndex index;
  std::vector<model::ScalingEstimate> estimates; // per angle, from the data

  int size() const { return layout.num_optimised(); }
  const std::vector<std::string> &names() const { return layout.names(); }
  // The sampled physics come last; held ones (EffectiveParameter::vary false)
  // are not sampled.
  int first_physical() const { return size() - layout.num_physical_varying(); }
  // Physical index (canonical order) of the k-th sampled physical parameter.
  int SampledPhysical(int k) const {
    for (int p = 0; p < index.n_phys; ++p) {
      if (layout.PhysicalVaries(p) && k-- == 0)
        return p;
    }
    return -1;
  }
};

SampledParameters ResolveSampledParameters(const config::Config &cfg,
                                           const CmcData &d) {
  const model::AnalysisMode mode = cfg.analysis_mode;
  const model::ScalingLayout resolved = CmcLayout(cfg, d.n_phi);
  const model::ScalingBounds sb{cfg.contrast.min, cfg.contrast.max,
                                cfg.offset.min, cfg.offset.max};
  const std::vector<double> &t = d.meta().t;
  std::vector<model::ScalingEstimate> estimates;
  for (int k = 0; k < d.n_phi; ++k) {
    std::vector<double> lags, values;
    for (std::int64_t i = 1; i < d.nf; ++i) {
      for (std::int64_t j = 1; j < d.nf; ++j) {
        lags.push_back(std::abs(t[static_cast<std::size_t>(i)] -
                                t[static_cast<std::size_t>(j)]));
        values.push_back(d.at(k, i, j));
      }
    }
    estimates.push_back(model::EstimateScaling(lags, values, sb));
  }
  // Held physics sit where the NLSQ holds them (its start rule), so `--method
  // both` samples the posterior of the model the NLSQ fitted.
  const model::ExpandedIndex index(mode, d.n_phi);
  const ExpandedStart start = ExpandedStartFromConfig(cfg, mode, estimates, {},
                                                      UnsetStart::kNlsqDefault);
  const HeldPhysics held = HeldPhysicsFromConfig(cfg, index, start.values);
  return {resolved,
          model::ParameterLayout::Create(resolved, mode, d.phi, estimates)
              .WithHeldPhysics(held.vary, held.values),
          index, std::move(estimates)};
}

struct StartingPoint {
  model::Bounds bounds;       // of the sampled parameters
  std::vector<double> theta0; // strictly inside `bounds`
  // The NLSQ estimate of the physics when it fits these data (for informed
  // priors).
  const nlsq::NlsqRunResult *warm_physics = nullptr;
};

// The config's start, or the NLSQ warm start: its whole expanded vector when it
// matches these data, else its physics.
StartingPoint WarmStart(const Comm &world, const config::Config &cfg,
                        const SampledParameters &sp,
                        const nlsq::NlsqRunResult *warm) {
  const model::AnalysisMode mode = cfg.analysis_mode;
  const model::ExpandedIndex &index = sp.index;
  const ExpandedStart start = RunCollectively(
      world, [&] { return ExpandedStartFromConfig(cfg, mode, sp.estimates); });
  std::vector<double> expanded0 = start.values;
  StartingPoint s;
  if (warm != nullptr &&
      static_cast<int>(warm->report.physical_values.size()) == index.n_phys) {
    s.warm_physics = warm;
  }
  if (warm != nullptr &&
      static_cast<int>(warm->expanded.size()) == index.size()) {
    expanded0 = warm->expanded;
  } else if (s.warm_physics != nullptr) {
    for (int p = 0; p < index.n_phys; ++p) {
      expanded0[static_cast<std::size_t>(index.phys(p))] =
          warm->report.physical_values[static_cast<std::size_t>(p)];
    }
  } else if (warm != nullptr) {
    RunCollectively(world, [&] {
      ThrowBadInput(fmt::format("the NLSQ warm start has {} physical "
                                "parameters, {} mode needs {}",
                                warm->report.physical_values.size(),
                                model::ToString(mode), index.n_phys),
                    {}, "--nlsq-result");
    });
  }
  s.bounds = sp.layout.OptimiserBounds(start.bounds);
  s.theta0 = sp.layout.FromExpanded(expanded0);
  for (std::size_t k = 0; k < s.theta0.size();
       ++k) { // strictly inside for the logistic map
    const double w = s.bounds.upper[k] - s.bounds.lower[k];
    s.theta0[k] = std::clamp(s.theta0[k], s.bounds.lower[k] + 1e-6 * w,
                             s.bounds.upper[k] - 1e-6 * w);
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// Phase 3: sampler settings and shards.

struct SamplerSettings {
  nuts::NutsOptions nuts;
  int chains = 0;
};

SamplerSettings SamplerFromConfig(const Comm &world, const config::Config &cfg,
                                  const CmcRunOptions &options) {
  const auto &mc = cfg.optimization.cmc.per_shard_mcmc;
  SamplerSettings s;
  nuts::NutsOptions &no = s.nuts;
  no.num_warmup = options.num_warmup >= 0 ? options.num_warmup : mc.num_warmup;
  no.num_samples =
      options.num_samples >= 0 ? options.num_samples : mc.num_samples;
  no.max_tree_depth = mc.max_tree_depth;
  // Floors per mode: laminar_flow's is homodyne's; two_component's posterior
  // has curved ridges on which 0.85 left up to 10 % of the draws divergent in
  // the coverage study (docs/cmc.md), 0.95 none.
  no.target_accept = mc.target_accept_prob;
  if (cfg.analysis_mode == model::AnalysisMode::kLaminarFlow) {
    no.target_accept = std::max(no.target_accept, 0.9);
  } else if (cfg.analysis_mode == model::AnalysisMode::kTwoComponent) {
    no.target_accept = std::max(no.target_accept, 0.95);
  }
  no.metric =
      options.dense_metric ? nuts::MetricKind::kDense : nuts::MetricKind::kDiag;
  no.seed = static_cast<std::uint64_t>(cfg.optimization.cmc.seed);
  RunCollectively(world, [&] { no.Validate(); });
  s.chains = options.num_chains > 0 ? options.num_chains : mc.num_chains;
  return s;
}

struct Shards {
  int count = 0;
  ShardPlan plan;
  double temper =
      1.0; // prior tempering exponent's divisor (K, or 1 without tempering)
};

Shards PlanShards(const Comm &world, const config::Config &cfg,
                  const CmcRunOptions &options, const CmcData &d, int n_theta,
                  const SamplerSettings &sampler) {
  const auto &cs = cfg.optimization.cmc.sharding;
  const nuts::NutsOptions &no = sampler.nuts;
  ShardingOptions so;
  so.strategy = ParseShardStrategy(
      cs.strategy, config::keys::Key(config::keys::kCmcSharding, "strategy"));
  if (cs.num_shards)
    so.num_shards = *cs.num_shards;
  if (options.num_shards > 0)
    so.num_shards = options.num_shards;
  if (cs.max_points_per_shard)
    so.max_points_per_shard = *cs.max_points_per_shard;
  so.seed = static_cast<std::uint64_t>(cs.seed_base) + no.seed;
  const std::int64_t n_points = d.n_points;
  const int k_shards = RunCollectively(world, [&] {
    return NumShards(so, cfg.analysis_mode, n_points, d.n_phi, no.num_warmup,
                     no.num_samples);
  });
  // What the consensus needs, checked before any sampling: every shard's draws
  // must span the full covariance of the sampled parameters, and every shard
  // needs data enough for them (10 points per sampled parameter and sigma at
  // least).
  RunCollectively(world, [&] {
    const std::int64_t draws =
        static_cast<std::int64_t>(sampler.chains) * no.num_samples;
    if (draws < n_theta + 1) {
      ThrowBadInput(
          fmt::format(
              "{} chain(s) × {} draws = {} draws per shard; the consensus "
              "covariance of {} sampled parameters needs at least {} (raise "
              "--n-samples / num_samples or --n-chains / num_chains)",
              sampler.chains, no.num_samples, draws, n_theta, n_theta + 1),
          {}, config::keys::Key(config::keys::kCmcPerShardMcmc, "num_samples"));
    }
    const std::int64_t per_shard = n_points / k_shards;
    const std::int64_t needed = 10 * static_cast<std::int64_t>(n_theta + 1);
    if (per_shard < needed) {
      ThrowBadInput(
          fmt::format(
              "{} shards of ~{} points each: a shard needs at least {} points "
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
  s.temper = cfg.optimization.cmc.prior_tempering
                 ? static_cast<double>(k_shards)
                 : 1.0;
  return s;
}

// ---------------------------------------------------------------------------------------
// Phase 4: priors and sampling sites.

// The configured prior of a parameter (parameter_space), else
// TruncatedNormal(centre, w/4) on its bounds [lo, hi] of width w. The centre is
// the bounds' midpoint for homodyne's modes; for two_component the registry
// default when it lies inside the bounds (else the midpoint), which is the
// prior the two_component template writes (its bounds are the registry's).
Prior ConfigPrior(const config::Config &cfg, const std::string &base, double lo,
                  double hi) {
  double centre = 0.5 * (lo + hi);
  if (cfg.analysis_mode == model::AnalysisMode::kTwoComponent) {
    if (const auto d = config::DefaultParameterBounds(base);
        d && d->nlsq_start >= lo && d->nlsq_start <= hi) {
      centre = d->nlsq_start;
    }
  }
  Prior p{PriorType::kTruncatedNormal, centre, 0.25 * (hi - lo), lo, hi};
  for (const auto &b : cfg.parameter_space.bounds) {
    if (b.name != base)
      continue;
    p.type = ParsePriorType(
        b.prior_type,
        config::keys::Key(config::keys::kParameterSpace, "bounds[].type"));
    if (b.prior_mu)
      p.mu = *b.prior_mu;
    if (b.prior_sigma)
      p.sigma = *b.prior_sigma;
  }
  if (auto it = cfg.parameter_space.priors.find(base);
      it != cfg.parameter_space.priors.end()) {
    p.type = ParsePriorType(it->second.dist_type,
                            config::keys::Key(config::keys::kParameterSpace,
                                              "priors." + base + ".dist_type"));
    if (it->second.mu)
      p.mu = *it->second.mu;
    if (it->second.sigma)
      p.sigma = *it->second.sigma;
  }
  p.lower = lo;
  p.upper = hi;
  return p;
}

// Whether the physical priors are centred on the NLSQ answer (validation.
// use_nlsq_informed_priors). auto: homodyne's default for its modes; not for
// two_component: in its calibration study (docs/cmc.md) the 90 % intervals with
// them covered the truth 70 % of the time, with the configured priors 90 %.
bool NlsqInformedPriors(const config::Config &cfg) {
  const std::string &v =
      cfg.optimization.cmc.validation.use_nlsq_informed_priors;
  if (v == "auto")
    return cfg.analysis_mode != model::AnalysisMode::kTwoComponent;
  return v == "true";
}

// What each shard posterior samples: the model parameters, or the
// reparameterised ones (laminar_flow with one averaged contrast/offset,
// homodyne's default; reparameterization.h), with their priors and bounds.
struct SamplingSites {
  std::vector<Prior> priors;
  std::vector<double> lower, upper; // the sites' bounds
  Reparameterization reparam;
  SamplingGeometry geometry;
  std::vector<double> theta_lower, theta_upper; // the model parameters' bounds

  std::vector<double>
  ToTheta(const double *u) const { // unconstrained → model parameters
    return UnconstrainedToTheta(std::span<const double>(u, lower.size()), lower,
                                upper, reparam, geometry);
  }
};

// The coordinate change that straightens the posterior (sampling_geometry.h) on
// the positions the reparameterisation leaves alone; its sites are unbounded
// (θ's box is a wall).
void AddSamplingGeometry(const config::Config &cfg,
                         const std::vector<std::string> &names,
                         SamplingSites &s, const Logger &logger) {
  const auto &rp = cfg.optimization.cmc.reparameterization;
  s.geometry = MakeSamplingGeometry(names, s.theta_lower, rp.scaling_geometry,
                                    rp.log_d0 && !s.reparam.diffusion);
  if (!s.geometry.active())
    return;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    if (!s.geometry.Changes(i))
      continue;
    s.lower[static_cast<std::size_t>(i)] = -kInf;
    s.upper[static_cast<std::size_t>(i)] = kInf;
  }
  logger.Info("CMC: sampling {} (same posterior)", s.geometry.Describe());
}

SamplingSites BuildSamplingSites(const config::Config &cfg, const CmcData &d,
                                 const SampledParameters &sp,
                                 const StartingPoint &start, double temper,
                                 const Logger &logger) {
  const int n_theta = sp.size();
  const auto &names = sp.names();
  const auto &v = cfg.optimization.cmc.validation;
  const nlsq::NlsqRunResult *warm = start.warm_physics;
  const bool informed = warm != nullptr && NlsqInformedPriors(cfg);
  if (warm != nullptr) {
    logger.Info("CMC: the physical priors are {} (optimization.cmc.validation."
                "use_nlsq_informed_priors: {})",
                informed ? "centred on the NLSQ answer" : "the configured ones",
                cfg.optimization.cmc.validation.use_nlsq_informed_priors);
  }
  SamplingSites s;
  for (int i = 0; i < n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double lo = start.bounds.lower[k], hi = start.bounds.upper[k];
    if (informed && i >= sp.first_physical()) {
      const auto p =
          static_cast<std::size_t>(sp.SampledPhysical(i - sp.first_physical()));
      const double sd = warm->report.physical_uncertainties[p];
      const double scale = std::clamp(std::isfinite(sd) && sd > 0
                                          ? v.nlsq_prior_width_factor * sd
                                          : 0.1 * (hi - lo),
                                      0.01 * (hi - lo), 0.5 * (hi - lo));
      s.priors.push_back({PriorType::kTruncatedNormal,
                          warm->report.physical_values[p], scale, lo, hi});
    } else {
      Prior pr = ConfigPrior(cfg, config::BaseParameterName(names[k]), lo, hi);
      pr.temper = temper;
      s.priors.push_back(pr);
    }
  }
  s.lower = start.bounds.lower;
  s.upper = start.bounds.upper;
  s.theta_lower = start.bounds.lower;
  s.theta_upper = start.bounds.upper;
  // The reparameterisation addresses the physics by position: only with all of
  // them sampled.
  if (cfg.analysis_mode == model::AnalysisMode::kLaminarFlow &&
      sp.resolved == model::ScalingLayout::kAveraged &&
      sp.layout.num_physical_held() == 0) {
    Reparameterization &r = s.reparam;
    r.diffusion = cfg.optimization.cmc.reparameterization.enable_d_total;
    r.shear = cfg.optimization.cmc.reparameterization.enable_log_gamma;
    r.first_phys = sp.first_physical();
    r.t_ref = std::sqrt(d.geometry.dt * d.meta().t.back());
    if (!(r.t_ref > 0.0) || !std::isfinite(r.t_ref))
      r.t_ref = 1.0;
  }
  AddSamplingGeometry(cfg, names, s, logger);
  if (!s.reparam.active())
    return s;
  ReparamPriors rp;
  if (informed) {
    rp =
        ReparamPriorsFromEstimate(s.reparam.t_ref, warm->report.physical_values,
                                  warm->report.physical_uncertainties);
  }
  ReplaceSitePriors(s.reparam, rp, temper, s.priors, s.lower, s.upper);
  const auto site_names = s.reparam.SiteNames(names);
  for (int i = s.reparam.first_phys; i < n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (site_names[k] != names[k]) {
      logger.Info("CMC: sampling {} ~ {}({:.4g}, {:.4g}) instead of {} (t_ref "
                  "{:.4g} s)",
                  site_names[k], ToString(s.priors[k].type), s.priors[k].mu,
                  s.priors[k].sigma, names[k], s.reparam.t_ref);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// Phase 5: sampling this rank's shards (shard s on rank s mod P).

struct LocalShardResult {
  int shard = 0;
  ShardDiagnostics diag;
  std::vector<double> draws; // unconstrained θ (σ dropped), chains pooled
};

double Median(std::vector<double> v) {
  return model::Percentile(std::move(v), 50.0);
}

// 1.4826·MAD of the shard's values, floored at 0.001 (homodyne's noise scale).
double NoiseScale(const std::vector<model::RowTile> &tiles) {
  std::vector<double> v;
  for (const auto &t : tiles)
    v.insert(v.end(), t.data, t.data + t.count);
  if (v.empty())
    return 0.001;
  const double m = Median(v);
  for (double &x : v)
    x = std::abs(x - m);
  return std::max(1.4826 * Median(v), 0.001);
}

// The row segments of shard s as model tiles over the data.
std::vector<model::RowTile> ShardTiles(const CmcData &d, const Shards &shards,
                                       int s) {
  std::vector<model::RowTile> tiles;
  for (const auto &seg : shards.plan.shards[static_cast<std::size_t>(s)]) {
    const double *row =
        d.matrices()[static_cast<std::size_t>(seg.angle)].data() +
        static_cast<std::size_t>(seg.row * d.nf + seg.col_begin);
    tiles.push_back({seg.angle, static_cast<int>(seg.row - 1),
                     static_cast<int>(seg.col_begin - 1),
                     static_cast<int>(seg.count), row, nullptr, 1.0});
  }
  return tiles;
}

// Pools the chains' draws and computes the shard's diagnostics.
// A chain's draw is θ's n_theta coordinates, then log σ unless σ is known
// (`known_sigma`).
void SummariseChains(const std::vector<nuts::ChainRun> &runs, int n_theta,
                     std::optional<double> known_sigma,
                     const nuts::NutsOptions &no, const SamplingSites &sites,
                     LocalShardResult &r) {
  const auto stride = static_cast<std::size_t>(n_theta + (known_sigma ? 0 : 1));
  const auto n_chains = static_cast<int>(runs.size());
  double accept = 0, sigma_sum = 0, step_sum = 0;
  std::int64_t divergent = 0, saturated = 0, draws = 0;
  std::vector<nuts::Chains> chains(static_cast<std::size_t>(n_theta));
  std::vector<nuts::Chains> theta_chains(static_cast<std::size_t>(n_theta));
  for (const nuts::ChainRun &run : runs) {
    for (int p = 0; p < n_theta; ++p)
      chains[static_cast<std::size_t>(p)].push_back(run.Parameter(p));
    for (auto &tc : theta_chains)
      tc.emplace_back();
    for (int j = 0; j < no.num_samples; ++j) {
      const double *q = run.draws.data() + static_cast<std::size_t>(j) * stride;
      r.draws.insert(r.draws.end(), q, q + n_theta);
      if (!known_sigma)
        sigma_sum += std::exp(q[n_theta]);
      const std::vector<double> th = sites.ToTheta(q);
      for (int p = 0; p < n_theta; ++p) {
        theta_chains[static_cast<std::size_t>(p)].back().push_back(
            th[static_cast<std::size_t>(p)]);
      }
    }
    std::int64_t sampling_gradients = 0;
    for (const auto &st : run.stats)
      sampling_gradients += st.n_leapfrog;
    r.diag.gradient_evaluations += sampling_gradients;
    r.diag.warmup_gradient_evaluations +=
        run.summary.num_gradient_evaluations - sampling_gradients;
    r.diag.tree_depth_histogram.resize(
        static_cast<std::size_t>(no.max_tree_depth) + 1, 0);
    for (const auto &st : run.stats) {
      ++r.diag.tree_depth_histogram[static_cast<std::size_t>(
          std::clamp(st.tree_depth, 0, no.max_tree_depth))];
      step_sum += st.step_size;
      accept += st.accept_stat;
      divergent += st.divergent ? 1 : 0;
      saturated += st.tree_depth >= no.max_tree_depth ? 1 : 0;
      ++draws;
    }
  }
  double max_rhat = 0, min_ess = 1e300;
  for (const auto &ch : chains) {
    if (n_chains > 1)
      max_rhat = std::max(max_rhat, nuts::SplitRankNormalizedRhat(ch).Max());
    const auto ess = nuts::SplitRankNormalizedEss(ch);
    min_ess = std::min(min_ess, std::min(ess.bulk, ess.tail));
  }
  for (const auto &tc : theta_chains) {
    r.diag.rhat.push_back(n_chains > 1 ? nuts::SplitRankNormalizedRhat(tc).Max()
                                       : std::nan(""));
    const auto ess = nuts::SplitRankNormalizedEss(tc);
    r.diag.ess_bulk.push_back(ess.bulk);
    r.diag.ess_tail.push_back(ess.tail);
  }
  r.diag.divergences = divergent;
  r.diag.step_size_mean =
      draws > 0 ? step_sum / static_cast<double>(draws) : 0.0;
  r.diag.treedepth_hits = saturated;
  r.diag.max_rhat = n_chains > 1 ? max_rhat : std::nan("");
  r.diag.min_ess = min_ess;
  r.diag.divergence_rate =
      draws > 0 ? static_cast<double>(divergent) / draws : 0.0;
  r.diag.acceptance_rate =
      draws > 0 ? accept / static_cast<double>(draws) : 0.0;
  r.diag.noise_sigma_mean =
      known_sigma
          ? *known_sigma
          : sigma_sum / static_cast<double>(std::max<std::int64_t>(draws, 1));
  r.diag.treedepth_saturation_rate =
      draws > 0 ? static_cast<double>(saturated) / static_cast<double>(draws)
                : 0.0;
}

// Where the shard's chains start and the coordinates they sample: with the
// Laplace whitening on, the posterior's mode found from the configured start (a
// few Levenberg–Marquardt steps) and the whitening there (shard_posterior.h),
// shared by all the shard's chains; else the configured start and no whitening.
// Deterministic: a resumed run recomputes the same start and whitening.
struct ShardStart {
  std::vector<double> theta;
  double sigma = 0.0;
  Whitening whitening;
};

ShardStart PrepareShardStart(const ShardPosteriorSetup &setup,
                             const model::ParameterLayout &layout,
                             std::span<const double> theta0, double sigma0,
                             bool whiten, int shard, const Logger &logger) {
  ShardStart start{{theta0.begin(), theta0.end()}, sigma0, {}};
  if (!whiten)
    return start;
  ShardPosteriorSetup one = setup;
  one.threads = 1;
  one.worker_start = nullptr;
  const ShardPosterior post(std::move(one), layout);
  const ShardMode mode = post.FindMode(theta0, sigma0, 200);
  start.whitening = post.LaplaceAt(mode.u);
  if (start.whitening.empty()) {
    logger.Info("CMC: shard {}: no Laplace whitening (the Hessian at the mode "
                "is not positive "
                "definite); sampling the unwhitened coordinates from the "
                "configured start",
                shard);
    return start;
  }
  start.theta = mode.theta;
  start.sigma = mode.sigma;
  logger.Debug("CMC: shard {}: mode after {} step(s){}, log density {:.6g} -> "
               "{:.6g} at {:.5g}",
               shard, mode.iterations, mode.converged ? "" : " (step limit)",
               mode.start_log_density, mode.log_density,
               fmt::join(mode.theta, ", "));
  return start;
}

// Chain draws in whitened coordinates q → the coordinates u before the
// whitening.
void UnwhitenDraws(const Whitening &w, std::vector<nuts::ChainRun> &runs) {
  if (w.empty())
    return;
  const std::size_t d = w.centre.size();
  for (nuts::ChainRun &run : runs) {
    for (std::size_t row = 0; row + d <= run.draws.size(); row += d) {
      const auto q = std::span<double>(run.draws).subspan(row, d);
      const std::vector<double> u = w.ToU(q);
      std::copy(u.begin(), u.end(), q.begin());
    }
  }
}

struct SamplingContext {
  const Comm &world;
  const config::Config &cfg;
  const CmcRunOptions &options;
  const CmcData &data;
  const SampledParameters &params;
  const StartingPoint &start;
  const SamplerSettings &sampler;
  const Shards &shards;
  const SamplingSites &sites;
  const Logger &logger;
};

// Chains in batches between checkpoint safe points (the same draws as one
// uninterrupted run per chain). Collective: a failure on one rank reaches the
// others at their next safe point (runner.Fail), so no rank waits in a safe
// point for a rank that has left; the failing rank's error is the agreed one.
std::vector<LocalShardResult>
SampleLocalShards(const SamplingContext &c, Progress &progress,
                  std::chrono::steady_clock::time_point t_start) {
  const Comm &world = c.world;
  const CmcData &d = c.data;
  const nuts::NutsOptions &no = c.sampler.nuts;
  const int n_chains = c.sampler.chains;
  const int n_theta = c.params.size();
  const int k_shards = c.shards.count;
  checkpoint::CmcCheckpointSettings cs;
  cs.stop_on_signal = false;
  if (c.options.checkpoints)
    cs = *c.options.checkpoints;
  std::string data_id = checkpoint::DescribeData(
      io::DigestMatrices(d.meta(), d.matrices()), d.meta().q_physics, d.phi,
      d.nf, d.meta().dt, d.n_points);
  for (double v : c.start.theta0)
    data_id += fmt::format("cmc.theta0: {:a}\n", v);
  const std::optional<double> known_sigma = c.cfg.optimization.cmc.known_sigma;
  if (known_sigma)
    data_id += fmt::format("cmc.known_sigma: {:a}\n", *known_sigma);
  data_id += "cmc.sampling_geometry: " + c.sites.geometry.Describe() + "\n";
  if (c.cfg.optimization.cmc.reparameterization.laplace_whitening) {
    data_id += "cmc.laplace_whitening: mode and whitening per shard\n";
  }
  checkpoint::CmcChainRunner runner(world, cs, data_id,
                                    {k_shards, n_chains, no.num_warmup,
                                     no.num_samples,
                                     n_theta + (known_sigma ? 0 : 1)},
                                    c.logger);
  std::vector<LocalShardResult> local;
  const auto run_local_shards = [&] {
    for (int s = world.rank(); s < k_shards; s += world.size()) {
      const FaultScope sampling(
          "sampling", world.rank()); // reaches the others at a safe point
      std::vector<model::RowTile> tiles = ShardTiles(d, c.shards, s);
      if (tiles.empty())
        continue;
      const double noise = NoiseScale(tiles);
      ShardPosteriorSetup setup;
      setup.mode = c.cfg.analysis_mode;
      setup.geometry = d.geometry;
      setup.t = d.t_fit;
      setup.phi_deg = d.phi;
      setup.tiles = std::move(tiles);
      setup.priors = c.sites.priors;
      setup.lower = c.sites.lower;
      setup.upper = c.sites.upper;
      setup.reparam = c.sites.reparam;
      setup.sampling_geometry = c.sites.geometry;
      setup.theta_lower = c.sites.theta_lower;
      setup.theta_upper = c.sites.theta_upper;
      setup.sigma_prior = {PriorType::kHalfNormal, 0.0,
                           1.5 * noise * std::sqrt(c.shards.temper)};
      setup.known_sigma = known_sigma;
      ShardStart start = PrepareShardStart(
          setup, c.params.layout, c.start.theta0, noise,
          c.cfg.optimization.cmc.reparameterization.laplace_whitening, s,
          c.logger);
      setup.whitening = std::move(start.whitening);
      ShardChainOptions chain_options;
      chain_options.num_chains = n_chains;
      chain_options.threads = c.options.threads;
      chain_options.worker_start = c.options.worker_start;
      runner.PrepareShard(s, n_chains);
      const auto shard_start = std::chrono::steady_clock::now();
      ChainRounds rounds;
      rounds.start = [&](const ShardPosterior &post, int chain,
                         std::span<const double> q0) {
        return runner.Start(s, chain, post, no, q0);
      };
      rounds.advance = [&](int chain, nuts::NutsChain &ch) {
        runner.Advance(s, chain, ch);
      };
      rounds.round_end = [&] { runner.RoundEnd(); };
      RunShardChainsInRounds(setup, c.params.layout, start.theta, start.sigma,
                             chain_options, rounds);
      std::vector<nuts::ChainRun> runs;
      for (int chain = 0; chain < n_chains; ++chain)
        runs.push_back(runner.Result(s, chain));
      UnwhitenDraws(setup.whitening, runs);
      LocalShardResult r;
      r.shard = s;
      r.diag.shard = s;
      r.diag.points = c.shards.plan.Points(s);
      SummariseChains(runs, n_theta, known_sigma, no, c.sites, r);
      r.diag.sampling_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        shard_start)
              .count();
      local.push_back(std::move(r));
      // Progress (rank 0's own shards stand for the others: same size, same
      // settings).
      const double elapsed = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - t_start)
                                 .count();
      const int mine = static_cast<int>(local.size());
      const int my_total =
          (k_shards - world.rank() + world.size() - 1) / world.size();
      progress.Update(fmt::format("shard {} done ({}/{} on rank 0, {} in all), "
                                  "{:.0f} draws/s, ETA {:.0f} s",
                                  s, mine, my_total, k_shards,
                                  static_cast<double>(mine) * n_chains *
                                      (no.num_warmup + no.num_samples) /
                                      elapsed,
                                  elapsed / mine * (my_total - mine)));
    }
  };
  RunCollectively(world, [&] {
    try {
      run_local_shards();
      runner.Finish();
    } catch (const checkpoint::SamplingAborted &) {
      // Another rank's sampling failed: its error is agreed below.
    } catch (const Error &e) {
      if (e.kind() != ErrorKind::kCheckpointed)
        runner.Fail();
      throw;
    } catch (...) {
      runner.Fail();
      throw;
    }
  });
  return local;
}

// ---------------------------------------------------------------------------------------
// Phase 6: every shard's diagnostics and draws on rank 0.

struct GatheredShards {
  std::vector<ShardDiagnostics> diagnostics; // per shard
  std::vector<ShardDraws> draws; // per shard, unconstrained, chains pooled
};

// Collective; the result is filled on rank 0 only. Packed per shard as [shard,
// points, rhat, ess, div, acc, sigma, saturation, gradient evaluations,
// divergences, depth hits, warmup gradients, R̂…, bulk ESS…, tail ESS…, step
// size, seconds, depth histogram size, histogram…, n, draws…].
GatheredShards GatherShards(const Comm &world,
                            const std::vector<LocalShardResult> &local,
                            int k_shards, int n_theta) {
  std::vector<double> packed;
  for (const auto &r : local) {
    packed.insert(packed.end(),
                  {static_cast<double>(r.shard),
                   static_cast<double>(r.diag.points), r.diag.max_rhat,
                   r.diag.min_ess, r.diag.divergence_rate,
                   r.diag.acceptance_rate, r.diag.noise_sigma_mean,
                   r.diag.treedepth_saturation_rate,
                   static_cast<double>(r.diag.gradient_evaluations),
                   static_cast<double>(r.diag.divergences),
                   static_cast<double>(r.diag.treedepth_hits),
                   static_cast<double>(r.diag.warmup_gradient_evaluations)});
    packed.insert(packed.end(), r.diag.rhat.begin(), r.diag.rhat.end());
    packed.insert(packed.end(), r.diag.ess_bulk.begin(), r.diag.ess_bulk.end());
    packed.insert(packed.end(), r.diag.ess_tail.begin(), r.diag.ess_tail.end());
    packed.push_back(r.diag.step_size_mean);
    packed.push_back(r.diag.sampling_seconds);
    packed.push_back(static_cast<double>(r.diag.tree_depth_histogram.size()));
    for (std::int64_t c : r.diag.tree_depth_histogram)
      packed.push_back(static_cast<double>(c));
    packed.push_back(static_cast<double>(r.draws.size()));
    packed.insert(packed.end(), r.draws.begin(), r.draws.end());
  }
  const int count = static_cast<int>(packed.size());
  std::vector<int> counts(static_cast<std::size_t>(world.size()));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world.get());
  std::vector<int> displs;
  int total = 0;
  if (world.is_root()) {
    for (int n : counts) {
      displs.push_back(total);
      total += n;
    }
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(packed.data(), count, MPI_DOUBLE, all.data(), counts.data(),
              displs.data(), MPI_DOUBLE, 0, world.get());
  GatheredShards g;
  RunCollectively(world, [&] {
    if (!world.is_root())
      return;
    g.diagnostics.resize(static_cast<std::size_t>(k_shards));
    g.draws.resize(static_cast<std::size_t>(k_shards), ShardDraws{n_theta, {}});
    std::size_t pos = 0;
    while (pos < all.size()) {
      const auto s = static_cast<std::size_t>(all[pos]);
      ShardDiagnostics &d = g.diagnostics[s];
      d.shard = static_cast<int>(s);
      d.points = static_cast<std::int64_t>(all[pos + 1]);
      d.max_rhat = all[pos + 2];
      d.min_ess = all[pos + 3];
      d.divergence_rate = all[pos + 4];
      d.acceptance_rate = all[pos + 5];
      d.noise_sigma_mean = all[pos + 6];
      d.treedepth_saturation_rate = all[pos + 7];
      d.gradient_evaluations = static_cast<std::int64_t>(all[pos + 8]);
      d.divergences = static_cast<std::int64_t>(all[pos + 9]);
      d.treedepth_hits = static_cast<std::int64_t>(all[pos + 10]);
      d.warmup_gradient_evaluations = static_cast<std::int64_t>(all[pos + 11]);
      pos += 12;
      const auto nt = static_cast<std::size_t>(n_theta);
      const auto at = [&](std::size_t k) {
        return all.begin() + static_cast<std::ptrdiff_t>(k);
      };
      d.rhat.assign(at(pos), at(pos + nt));
      d.ess_bulk.assign(at(pos + nt), at(pos + 2 * nt));
      d.ess_tail.assign(at(pos + 2 * nt), at(pos + 3 * nt));
      pos += 3 * nt;
      d.step_size_mean = all[pos];
      d.sampling_seconds = all[pos + 1];
      const auto n_depths = static_cast<std::size_t>(all[pos + 2]);
      for (std::size_t k = 0; k < n_depths; ++k) {
        d.tree_depth_histogram.push_back(
            static_cast<std::int64_t>(all[pos + 3 + k]));
      }
      pos += 3 + n_depths;
      const auto n = static_cast<std::size_t>(all[pos]);
      g.draws[s].draws.assign(at(pos + 1), at(pos + 1 + n));
      pos += 1 + n;
    }
  });
  return g;
}

// ---------------------------------------------------------------------------------------
// Phases 7–9 (rank 0): shard filters, consensus, summaries.

// combination.method: robust_consensus_mc (filters + consensus) or
// consensus_mc; homodyne's deprecated element-wise rules fall back to
// consensus_mc with a warning.
enum class Combination { kRobustConsensus, kConsensus };

Combination ParseCombination(const config::Config &cfg, const Logger &logger) {
  const std::string &m = cfg.optimization.cmc.combination.method;
  if (m == "robust_consensus_mc")
    return Combination::kRobustConsensus;
  if (m != "consensus_mc") {
    logger.Warn("CMC: combination method '{}' is deprecated in homodyne; using "
                "consensus_mc",
                m);
  }
  return Combination::kConsensus;
}

std::string_view ToString(Combination c) {
  return c == Combination::kRobustConsensus ? "robust_consensus_mc"
                                            : "consensus_mc";
}

// The transport and flow parameters whose shard means are compared
// (heterogeneity) and whose shard posteriors are tested for two modes:
// homodyne's list for its modes (names it lacks are skipped), the two rates'
// and the velocity's for two_component. By mode, so that neither list reaches
// another layout by a shared name.
std::vector<std::string> WatchedParameters(model::AnalysisMode mode) {
  if (mode == model::AnalysisMode::kTwoComponent) {
    return {"D0_ref",       "alpha_ref",       "D_offset_ref", "D0_sample",
            "alpha_sample", "D_offset_sample", "v0",           "v_beta"};
  }
  return {"D0", "alpha", "D_offset", "gamma_dot_t0", "beta"};
}

ShardFilterOptions
FilterOptionsFromConfig(const config::Config &cfg, Combination combination,
                        const std::vector<std::string> &names,
                        const model::Bounds &bounds) {
  const auto &v = cfg.optimization.cmc.validation;
  ShardFilterOptions o;
  o.max_divergence_rate = v.max_divergence_rate;
  o.robust = combination == Combination::kRobustConsensus;
  o.max_parameter_cv = v.max_parameter_cv;
  o.heterogeneity_abort = v.heterogeneity_abort;
  o.scatter_rule = cfg.analysis_mode == model::AnalysisMode::kTwoComponent;
  for (std::size_t i = 0; i < names.size(); ++i) {
    o.parameter_ranges.push_back(bounds.upper[i] - bounds.lower[i]);
    for (const std::string &h : WatchedParameters(cfg.analysis_mode)) {
      if (names[i] == h)
        o.heterogeneity_parameters.push_back(static_cast<int>(i));
    }
  }
  return o;
}

// Each shard's draws in the model parameters (result.shard_draws holds the
// non-empty ones).
std::vector<ShardDraws>
ShardDrawsInModelSpace(const std::vector<ShardDraws> &unconstrained,
                       const SamplingSites &sites, int n_theta,
                       CmcRunResult &result) {
  std::vector<ShardDraws> theta_draws;
  for (const auto &sd : unconstrained) {
    std::vector<double> x;
    x.reserve(sd.draws.size());
    for (std::size_t e = 0; e < sd.draws.size();
         e += static_cast<std::size_t>(n_theta)) {
      const std::vector<double> th = sites.ToTheta(sd.draws.data() + e);
      x.insert(x.end(), th.begin(), th.end());
    }
    theta_draws.push_back({n_theta, x});
    if (!x.empty())
      result.shard_draws.push_back(std::move(x));
  }
  return theta_draws;
}

// The shard filters (shard_filter.h), every rejection logged and reported;
// returns the kept shards' unconstrained draws.
std::vector<ShardDraws>
FilterPhase(const config::Config &cfg, const SampledParameters &sp,
            const StartingPoint &start, GatheredShards gathered,
            const std::vector<ShardDraws> &theta_draws, CmcRunResult &result,
            const Logger &logger) {
  const Combination combination = ParseCombination(cfg, logger);
  std::vector<double> divergence;
  for (const auto &d : result.shards)
    divergence.push_back(d.divergence_rate);
  const ShardFilterOptions filter_options =
      FilterOptionsFromConfig(cfg, combination, sp.names(), start.bounds);
  const ShardFilterResult filter =
      FilterShards(theta_draws, divergence, sp.names(), filter_options);
  // The agreement statistic of every watched parameter, so that a user sees how
  // close the shards came to the heterogeneity rule, not only when it fires.
  if (!filter.parameter_q.empty()) {
    std::string q;
    for (std::size_t k = 0; k < filter.parameter_q.size(); ++k) {
      const auto col =
          static_cast<std::size_t>(filter_options.heterogeneity_parameters[k]);
      q += fmt::format("{}{} {:.3g}", k == 0 ? "" : ", ", sp.names()[col],
                       filter.parameter_q[k]);
    }
    logger.Info(
        "CMC: shard agreement, Cochran's Q on {} degree(s) of freedom: {}",
        std::count(filter.keep.begin(), filter.keep.end(), true) - 1, q);
  }
  result.combination_method = std::string(ToString(combination));
  for (const auto &rej : filter.rejected) {
    logger.Warn("CMC: shard {} rejected: {}", rej.shard, rej.reason);
    result.shards[static_cast<std::size_t>(rej.shard)].used = false;
    result.shards[static_cast<std::size_t>(rej.shard)].rejection = rej.reason;
  }
  for (const auto &w : filter.warnings)
    logger.Warn("{}", w);
  result.warnings = filter.warnings;
  std::vector<ShardDraws> kept;
  for (std::size_t sh = 0; sh < gathered.draws.size(); ++sh) {
    if (filter.keep[sh])
      kept.push_back(std::move(gathered.draws[sh]));
  }
  result.shards_used = static_cast<int>(kept.size());
  return kept;
}

// Bimodal shard posteriors of the physical parameters (every shard with draws,
// used or not): reported, and warned about where ≥ 5 % of the shards hold two
// confirmed modes.
void BimodalityPhase(const config::Config &cfg, const SampledParameters &sp,
                     const std::vector<ShardDraws> &theta_draws,
                     CmcRunResult &result, const Logger &logger) {
  const auto &rp = cfg.optimization.cmc.reparameterization;
  result.bimodality = DetectBimodality(
      theta_draws, sp.names(), WatchedParameters(cfg.analysis_mode),
      rp.bimodal_min_weight, rp.bimodal_min_separation, result.num_chains);
  for (const BimodalParameter &b : result.bimodality) {
    // Shards that passed homodyne's screen but hold one (skewed) mode, or two
    // modes that neither a second chain nor another shard saw: said, not acted
    // on.
    if (!b.screened_shards.empty() && b.bimodal_shards.empty()) {
      logger.Info("CMC: {}: {} of {} shard(s) pass the two-Gaussian screen, {} "
                  "of them with two "
                  "separated modes that no second chain or shard confirms; "
                  "treated as one mode",
                  b.name, b.screened_shards.size(), b.shards_tested,
                  b.unconfirmed_shards.size());
    }
    if (!b.flagged)
      continue;
    result.warnings.push_back(
        fmt::format("CMC: {} is bimodal in {} of {} shard(s) (modes near "
                    "{:.6g} and {:.6g}); the shards are "
                    "combined by mode-aware consensus",
                    b.name, b.bimodal_shards.size(), b.shards_tested,
                    b.lower_mode, b.upper_mode));
    logger.Warn("{}", result.warnings.back());
  }
}

// The consensus of the kept shards, in the model parameters (result.draws).
// With a parameter bimodal in enough shards, the mode-aware consensus
// (mode_aware.h); if it cannot be formed, the plain one with a warning saying
// why.
void CombinePhase(const std::vector<ShardDraws> &kept,
                  const std::vector<ShardDraws> &theta_draws,
                  const SamplingSites &sites, const StartingPoint &start,
                  int n_theta, CmcRunResult &result, const Logger &logger) {
  std::vector<double> combined;
  const bool bimodal =
      std::any_of(result.bimodality.begin(), result.bimodality.end(),
                  [](const BimodalParameter &b) { return b.flagged; });
  if (bimodal) {
    std::vector<int> kept_ids;
    for (const auto &d : result.shards) {
      if (d.used)
        kept_ids.push_back(d.shard);
    }
    ModeAwareResult m;
    if (kept_ids.size() == kept.size()) {
      m = CombineModeAware(kept, kept_ids, theta_draws, result.names,
                           result.bimodality, start.bounds.lower,
                           start.bounds.upper);
    } else {
      m.reason = "the combined shards could not be matched to their ids";
    }
    result.mode_aware.applied = m.applied;
    result.mode_aware.reason = m.reason;
    result.mode_aware.clusters = m.clusters;
    if (m.applied) {
      combined = std::move(m.draws.draws);
      for (const ModeCluster &c : m.clusters) {
        logger.Info("CMC: mode-aware consensus: {} population of {} shard(s), "
                    "weight {:.3f}",
                    c.label, c.shards.size(), c.weight);
      }
    } else {
      result.warnings.push_back(
          fmt::format("CMC: mode-aware consensus not formed ({}); one "
                      "consensus of all shards, which lands "
                      "between the modes",
                      m.reason));
      logger.Warn("{}", result.warnings.back());
    }
  }
  if (combined.empty())
    combined = CombineConsensus(kept).draws;
  const int n_draws = static_cast<int>(combined.size()) / n_theta;
  for (int j = 0; j < n_draws; ++j) {
    const std::vector<double> th =
        sites.ToTheta(combined.data() + static_cast<std::size_t>(j * n_theta));
    result.draws.insert(result.draws.end(), th.begin(), th.end());
  }
}

// Phase: the posterior against the NLSQ warm start (rank 0).
void CompareWithNlsqPhase(const nlsq::NlsqRunResult *warm, CmcRunResult &result,
                          const Logger &logger) {
  if (warm == nullptr)
    return;
  result.nlsq_comparison = CompareWithNlsq(warm->report, result.parameters);
  for (const NlsqComparison &c : result.nlsq_comparison) {
    if (!c.disagrees)
      continue;
    result.warnings.push_back(
        fmt::format("CMC and NLSQ disagree on {}: posterior {:.6g} ± {:.3g}, "
                    "NLSQ {:.6g} ± {:.3g} (z = {:.2f} "
                    "> {})",
                    c.name, c.cmc_mean, c.cmc_std, c.nlsq_value, c.nlsq_std,
                    c.z, kNlsqDisagreementZ));
    logger.Warn("{}", result.warnings.back());
  }
}

// Posterior means and standard deviations of the expanded parameters (physical
// + per-angle scaling), and the convergence summary of the shards.
void Summarise(model::AnalysisMode mode, const SampledParameters &sp,
               CmcRunResult &result) {
  const int n_theta = sp.size();
  const model::ExpandedIndex &index = sp.index;
  const int n_draws = static_cast<int>(result.draws.size()) / n_theta;
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                       Eigen::RowMajor>>
      x(result.draws.data(), n_draws, n_theta);
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::MatrixXd centred = x.rowwise() - mean;
  const Eigen::MatrixXd cov =
      centred.transpose() * centred / std::max(1, n_draws - 1);
  std::vector<double> cov_opt(cov.data(), cov.data() + cov.size());
  const std::vector<double> mean_expanded =
      sp.layout.Expand(std::vector<double>(mean.data(), mean.data() + n_theta));
  const std::vector<double> cov_expanded = sp.layout.ExpandCovariance(cov_opt);
  const auto expanded_names = index.Names(mode);
  for (int e = 0; e < index.size(); ++e) {
    const int p = e - index.phys(0);
    result.parameters.push_back(
        {expanded_names[static_cast<std::size_t>(e)],
         mean_expanded[static_cast<std::size_t>(e)],
         std::sqrt(std::max(
             cov_expanded[static_cast<std::size_t>(e * index.size() + e)],
             0.0)),
         p >= 0 && !sp.layout.PhysicalVaries(p)});
  }
  result.max_rhat = 0;
  result.min_ess = 1e300;
  double acc = 0;
  result.all_converged = true;
  for (const auto &d : result.shards) {
    if (std::isfinite(d.max_rhat))
      result.max_rhat = std::max(result.max_rhat, d.max_rhat);
    result.min_ess = std::min(result.min_ess, d.min_ess);
    acc += d.acceptance_rate;
    result.all_converged = result.all_converged && !(d.max_rhat >= 1.1);
  }
  result.acceptance_rate =
      acc / static_cast<double>(std::max<std::size_t>(1, result.shards.size()));
}

// The coordinates the chains sample, in words (diagnostics.json).
std::string SampledCoordinates(const config::Config &cfg,
                               const SamplingSites &sites) {
  std::string out = sites.geometry.Describe();
  if (sites.reparam.active()) {
    out += fmt::format(
        "; {}{}{} (t_ref {:.4g} s)",
        sites.reparam.diffusion ? "log D_ref, D_offset/D_ref" : "",
        sites.reparam.diffusion && sites.reparam.shear ? ", " : "",
        sites.reparam.shear ? "log gamma_ref" : "", sites.reparam.t_ref);
  }
  if (cfg.optimization.cmc.reparameterization.laplace_whitening) {
    out += "; whitened by the Laplace covariance at each shard's mode, where "
           "the chains start";
  }
  return out;
}

// What the run was asked to do (every rank).
CmcRunResult ResultOfSettings(model::AnalysisMode mode,
                              const SampledParameters &sp,
                              const SamplerSettings &sampler,
                              const Shards &shards) {
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

void LogShards(const CmcRunResult &result, const Logger &logger) {
  for (const auto &d : result.shards) {
    logger.Info("  shard {:>4}: {:>8} points  R-hat {:.3f}  min ESS {:>7.0f}  "
                "divergences {:.1f}%  "
                "accept {:.2f}",
                d.shard, d.points, d.max_rhat, d.min_ess,
                100.0 * d.divergence_rate, d.acceptance_rate);
  }
}

} // namespace

CmcRunResult RunCmcFit(const Comm &world, const config::Config &cfg,
                       const CmcRunOptions &options, const Logger &logger) {
  const auto t_start = std::chrono::steady_clock::now();
  Progress progress(logger, "CMC");
  const model::AnalysisMode mode = cfg.analysis_mode;
  const CmcData data = LoadData(world, cfg, options, logger);
  const SampledParameters params = ResolveSampledParameters(cfg, data);
  if (params.size() == 0) {
    RunCollectively(world, [&] {
      ThrowBadInput(
          fmt::format(
              "nothing to sample: every physical parameter is held and the {} "
              "per-angle layout samples no scaling",
              model::ToString(params.resolved)),
          cfg.source,
          config::keys::Key(config::keys::kInitialParameters,
                            "fixed_parameters"));
    });
  }
  const StartingPoint start = WarmStart(world, cfg, params, options.warm_start);
  const SamplerSettings sampler = SamplerFromConfig(world, cfg, options);
  const Shards shards =
      PlanShards(world, cfg, options, data, params.size(), sampler);
  logger.Info("CMC: {} shard(s) of ~{} points, {} chain(s) × ({} warmup + {} "
              "draws), layout {}, {} sampled "
              "parameters + {}",
              shards.count, data.n_points / shards.count, sampler.chains,
              sampler.nuts.num_warmup, sampler.nuts.num_samples,
              model::ToString(params.resolved), params.size(),
              cfg.optimization.cmc.known_sigma
                  ? fmt::format("sigma fixed at {:.6g}",
                                *cfg.optimization.cmc.known_sigma)
                  : std::string("sigma"));
  const SamplingSites sites =
      BuildSamplingSites(cfg, data, params, start, shards.temper, logger);

  const std::vector<LocalShardResult> local =
      SampleLocalShards({world, cfg, options, data, params, start, sampler,
                         shards, sites, logger},
                        progress, t_start);
  GatheredShards gathered =
      GatherShards(world, local, shards.count, params.size());

  CmcRunResult result = ResultOfSettings(mode, params, sampler, shards);
  result.n_angles = data.n_phi;
  result.n_time_points = static_cast<int>(data.t_fit.size());
  result.n_points = data.n_points;
  result.q = data.meta().q_physics;
  result.known_sigma = cfg.optimization.cmc.known_sigma.value_or(0.0);
  result.sampled_coordinates = SampledCoordinates(cfg, sites);
  RunCollectively(world, [&] {
    if (!world.is_root())
      return;
    result.shards = std::move(gathered.diagnostics);
    const std::vector<ShardDraws> theta_draws =
        ShardDrawsInModelSpace(gathered.draws, sites, params.size(), result);
    const std::vector<ShardDraws> kept = FilterPhase(
        cfg, params, start, std::move(gathered), theta_draws, result, logger);
    BimodalityPhase(cfg, params, theta_draws, result, logger);
    CombinePhase(kept, theta_draws, sites, start, params.size(), result,
                 logger);
    Summarise(mode, params, result);
    CompareWithNlsqPhase(start.warm_physics, result, logger);
  });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start)
          .count();
  progress.Done(fmt::format("{} shard(s) × {} chain(s) in {:.1f} s",
                            shards.count, sampler.chains, result.seconds));
  if (world.is_root())
    LogShards(result, logger);
  return result;
}

std::vector<NlsqComparison>
CompareWithNlsq(const nlsq::FitReport &nlsq,
                const std::vector<ParameterSummary> &posterior) {
  std::vector<NlsqComparison> out;
  for (std::size_t p = 0; p < nlsq.physical_names.size(); ++p) {
    const auto it = std::find_if(posterior.begin(), posterior.end(),
                                 [&](const ParameterSummary &s) {
                                   return s.name == nlsq.physical_names[p];
                                 });
    if (it == posterior.end())
      continue; // not sampled (fixed)
    NlsqComparison c;
    c.name = it->name;
    c.cmc_mean = it->mean;
    c.cmc_std = it->std;
    c.nlsq_value = nlsq.physical_values[p];
    c.nlsq_std = p < nlsq.physical_uncertainties.size()
                     ? nlsq.physical_uncertainties[p]
                     : 0.0;
    const double scale =
        std::sqrt(c.cmc_std * c.cmc_std + c.nlsq_std * c.nlsq_std);
    const double gap = std::abs(c.cmc_mean - c.nlsq_value);
    c.z = scale > 0.0 ? gap / scale : (gap > 0.0 ? HUGE_VAL : 0.0);
    c.disagrees = !(c.z <= kNlsqDisagreementZ); // NaN counts as disagreeing
    out.push_back(c);
  }
  return out;
}

} // namespace homodyne::cmc
