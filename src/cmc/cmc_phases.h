// The phases of RunCmcFit (cmc_fit.h), each a function of its inputs so that it can be run
// and tested alone: the data and the sampled parameters (cmc_load_phase.cpp), the sampler
// settings, shards, priors and sampling sites (cmc_shard_plan.cpp), the sampling of this
// rank's shards and their gathering on rank 0 (cmc_shard_sampling.cpp), and rank 0's shard
// filters, consensus and summaries (cmc_combine_phase.cpp). Internal to src/cmc.
#pragma once

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
#include "cmc/whitening_check.h"
#include "config/choices.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "config/key_paths.h"
#include "config/parameters.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "core/progress.h"
#include "io/content_digest.h"
#include "io/dataset.h"
#include "nlsq/fit_report.h"
#include "nuts/diagnostics.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"
#include "parallel/collective.h"

namespace homodyne::cmc::phases {

struct CmcData {
  std::optional<io::Dataset> loaded;          // read from the file, or
  const io::DatasetView* borrowed = nullptr;  // the caller's in-memory data
  std::int64_t nf = 0;                        // frames
  int n_phi = 0;                              // angles
  std::int64_t n_points = 0;                  // fitted (1 ≤ i < j) pairs of all angles
  std::vector<double> phi;                    // degrees
  std::vector<double> t_fit;                  // times of frames 1…nf−1
  model::Geometry geometry;

  const io::DatasetMetadata& meta() const { return loaded ? loaded->meta : borrowed->meta; }
  // Angle k's N×N row-major matrix, wherever it is held.
  const double* matrix(int angle) const {
    const auto k = static_cast<std::size_t>(angle);
    return loaded ? loaded->c2[k].data() : borrowed->c2[k];
  }
  std::vector<const double*> matrices() const {
    std::vector<const double*> all;
    for (int k = 0; k < n_phi; ++k) all.push_back(matrix(k));
    return all;
  }
  double at(int angle, std::int64_t i, std::int64_t j) const {
    return matrix(angle)[static_cast<std::size_t>(i * nf + j)];
  }
};

struct SampledParameters {
  model::ScalingLayout resolved;
  model::ParameterLayout layout;
  model::ExpandedIndex index;
  std::vector<model::ScalingEstimate> estimates;  // per angle, from the data

  int size() const { return layout.num_optimised(); }
  const std::vector<std::string>& names() const { return layout.names(); }
  // The sampled physics come last; held ones (EffectiveParameter::vary false) are not sampled.
  int first_physical() const { return size() - layout.num_physical_varying(); }
  // Physical index (canonical order) of the k-th sampled physical parameter.
  int SampledPhysical(int k) const {
    for (int p = 0; p < index.n_phys; ++p) {
      if (layout.PhysicalVaries(p) && k-- == 0) return p;
    }
    return -1;
  }
};

struct StartingPoint {
  model::Bounds bounds;        // of the sampled parameters
  std::vector<double> theta0;  // strictly inside `bounds`
  // The NLSQ estimate of the physics when it fits these data (for informed priors).
  const nlsq::NlsqRunResult* warm_physics = nullptr;
};

struct SamplerSettings {
  nuts::NutsOptions nuts;
  int chains = 0;
};

struct Shards {
  int count = 0;
  ShardPlan plan;
  double temper = 1.0;  // prior tempering exponent's divisor (K, or 1 without tempering)
};

// What each shard posterior samples: the model parameters, or the reparameterised ones
// (laminar_flow with one averaged contrast/offset, homodyne's default; reparameterization.h),
// with their priors and bounds.
struct SamplingSites {
  std::vector<Prior> priors;
  std::vector<double> lower, upper;  // the sites' bounds
  Reparameterization reparam;
  SamplingGeometry geometry;
  std::vector<double> theta_lower, theta_upper;  // the model parameters' bounds

  std::vector<double> ToTheta(const double* u) const {  // unconstrained → model parameters
    return UnconstrainedToTheta(std::span<const double>(u, lower.size()), lower, upper, reparam,
                                geometry);
  }
};

// Which coordinates a shard's chains sample and why (docs/cmc.md step 5b).
struct CoordinateChoice {
  enum class Why {
    kOff = 0,      // laplace_whitening: false
    kChecked = 1,  // the map passed the axis check (whitened)
    // 2 is not used: it meant a failed check sampled unwhitened, which no longer happens.
    kNotPositiveDefinite = 3,  // no map: the Hessian at the mode is not positive definite
    kFailedKept = 4,           // the map failed the check and is kept (whitened)
  };
  Why why = Why::kOff;
  WhiteningCheck check;  // filled for kChecked and kFailedKept
  bool whitened() const { return why == Why::kChecked || why == Why::kFailedKept; }
  // "whitened" / "unwhitened" and a sentence saying why, with the axis named from
  // `axis_names` (the sampled coordinates before the whitening).
  std::string Coordinates() const { return whitened() ? "whitened" : "unwhitened"; }
  std::string Reason(const std::vector<std::string>& axis_names) const;
  // Packed as 7 numbers (GatherShards) and back.
  void Pack(std::vector<double>& out) const;
  static CoordinateChoice Unpack(const double* in);
  static constexpr std::size_t kPacked = 7;
};

struct LocalShardResult {
  int shard = 0;
  CoordinateChoice coordinates;
  ShardDiagnostics diag;
  std::vector<double> draws;  // unconstrained θ (σ dropped), chains pooled
};

// Where the shard's chains start and the coordinates they sample: with the Laplace
// whitening on, the posterior's mode found from the configured start (a few
// Levenberg–Marquardt steps) and the whitening there (shard_posterior.h), shared by all
// the shard's chains; else the configured start and no whitening. Deterministic: a
// resumed run recomputes the same start and whitening.
struct ShardStart {
  std::vector<double> theta;
  double sigma = 0.0;
  Whitening whitening;
  CoordinateChoice choice;
};

struct SamplingContext {
  const Comm& world;
  const config::Config& cfg;
  const CmcRunOptions& options;
  const CmcData& data;
  const SampledParameters& params;
  const StartingPoint& start;
  const SamplerSettings& sampler;
  const Shards& shards;
  const SamplingSites& sites;
  const Logger& logger;
};

struct GatheredShards {
  std::vector<ShardDiagnostics> diagnostics;  // per shard
  std::vector<ShardDraws> draws;              // per shard, unconstrained, chains pooled
};

// combination.method: robust_consensus_mc (filters + consensus) or consensus_mc; homodyne's
// deprecated element-wise rules fall back to consensus_mc with a warning.
enum class Combination { kRobustConsensus, kConsensus };

CmcData LoadData(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                 const Logger& logger);

std::string PerAngleModeKey();

model::ScalingLayout CmcLayout(const config::Config& cfg, int n_phi);

SampledParameters ResolveSampledParameters(const config::Config& cfg, const CmcData& d);

// The config's start, or the NLSQ warm start: its whole expanded vector when it matches
// these data, else its physics.
StartingPoint WarmStart(const Comm& world, const config::Config& cfg, const SampledParameters& sp,
                        const nlsq::NlsqRunResult* warm);

// two_component: holds at the start (`sp`'s layout and `s` lose their columns) the sample
// fraction's parameters the likelihood cannot tell apart, so the sampler does not walk an
// exact ridge: f2 when f0 is sampled too (f0·e^(−f1·f2) is one parameter; with f1 = 0 f2
// has no effect at all), f0 when f1 is held at 0 (then only f0 + f3 is seen). Returns one
// note per hold (for the log and the results); the prior alone describes a held parameter.
// The same on every rank (the config and the broadcast start only). Other modes: no-op.
std::vector<std::string> HoldUnidentified(const config::Config& cfg, SampledParameters& sp,
                                          StartingPoint& s);

SamplerSettings SamplerFromConfig(const Comm& world, const config::Config& cfg,
                                  const CmcRunOptions& options);

Shards PlanShards(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                  const CmcData& d, int n_theta, const SamplerSettings& sampler);

// The configured prior of a parameter (parameter_space), else TruncatedNormal(centre, w/4)
// on its bounds [lo, hi] of width w. The centre is the bounds' midpoint for homodyne's modes;
// for two_component the registry default when it lies inside the bounds (else the midpoint),
// which is the prior the two_component template writes (its bounds are the registry's).
Prior ConfigPrior(const config::Config& cfg, const std::string& base, double lo, double hi);

// Whether the physical priors are centred on the NLSQ answer (validation.
// use_nlsq_informed_priors). auto: homodyne's default for its modes; not for two_component:
// in its calibration study (docs/cmc.md) the 90 % intervals with them covered the truth
// 70 % of the time, with the configured priors 90 %.
bool NlsqInformedPriors(const config::Config& cfg);

// The coordinate change that straightens the posterior (sampling_geometry.h) on the
// positions the reparameterisation leaves alone; its sites are unbounded (θ's box is a wall).
void AddSamplingGeometry(const config::Config& cfg, const std::vector<std::string>& names,
                         SamplingSites& s, const Logger& logger);

SamplingSites BuildSamplingSites(const config::Config& cfg, const CmcData& d,
                                 const SampledParameters& sp, const StartingPoint& start,
                                 double temper, const Logger& logger);

double Median(std::vector<double> v);

// 1.4826·MAD of the shard's values, floored at 0.001 (homodyne's noise scale).
double NoiseScale(const std::vector<model::RowTile>& tiles);

// The row segments of shard s as model tiles over the data.
std::vector<model::RowTile> ShardTiles(const CmcData& d, const Shards& shards, int s);

// Pools the chains' draws and computes the shard's diagnostics.
// A chain's draw is θ's n_theta coordinates, then log σ unless σ is known (`known_sigma`).
void SummariseChains(const std::vector<nuts::ChainRun>& runs, int n_theta,
                     std::optional<double> known_sigma, const nuts::NutsOptions& no,
                     const SamplingSites& sites, LocalShardResult& r);

// `whiten` (laplace_whitening): the map is kept only where CheckWhiteningAxes finds it
// good; otherwise the chains sample the unwhitened coordinates from the mode.
ShardStart PrepareShardStart(const ShardPosteriorSetup& setup, const model::ParameterLayout& layout,
                             std::span<const double> theta0, double sigma0, bool whiten, int shard,
                             const Logger& logger);

// The names of the coordinates before the whitening (the sites, then log_sigma when σ is
// sampled): what the axis check's axes are named after.
std::vector<std::string> UnwhitenedAxisNames(const SamplingSites& sites,
                                             const std::vector<std::string>& names,
                                             bool samples_sigma);

// Chain draws in whitened coordinates q → the coordinates u before the whitening.
void UnwhitenDraws(const Whitening& w, std::vector<nuts::ChainRun>& runs);

// Chains in batches between checkpoint safe points (the same draws as one uninterrupted
// run per chain). Collective: a failure on one rank reaches the others at their next safe
// point (runner.Fail), so no rank waits in a safe point for a rank that has left; the
// failing rank's error is the agreed one.
std::vector<LocalShardResult> SampleLocalShards(const SamplingContext& c, Progress& progress,
                                                std::chrono::steady_clock::time_point t_start);

// Collective; the result is filled on rank 0 only. Packed per shard as [shard, points, rhat,
// ess, div, acc, sigma, saturation, gradient evaluations, divergences, depth hits, warmup
// gradients, R̂…, bulk ESS…, tail ESS…, step size, seconds, depth histogram size, histogram…,
// coordinate choice (7), n, draws…]. `axis_names` name the axis check's axes in the reasons.
GatheredShards GatherShards(const Comm& world, const std::vector<LocalShardResult>& local,
                            int k_shards, int n_theta, const std::vector<std::string>& axis_names);

Combination ParseCombination(const config::Config& cfg, const Logger& logger);

std::string_view ToString(Combination c);

// The transport and flow parameters whose shard means are compared (heterogeneity) and
// whose shard posteriors are tested for two modes: homodyne's list for its modes (names it
// lacks are skipped), the two rates' and the velocity's for two_component. By mode, so that
// neither list reaches another layout by a shared name.
std::vector<std::string> WatchedParameters(model::AnalysisMode mode);

ShardFilterOptions FilterOptionsFromConfig(const config::Config& cfg, Combination combination,
                                           const std::vector<std::string>& names,
                                           const model::Bounds& bounds);

// Each shard's draws in the model parameters (result.shard_draws holds the non-empty ones).
std::vector<ShardDraws> ShardDrawsInModelSpace(const std::vector<ShardDraws>& unconstrained,
                                               const SamplingSites& sites, int n_theta,
                                               CmcRunResult& result);

// The shard filters (shard_filter.h), every rejection logged and reported; returns the
// kept shards' unconstrained draws.
std::vector<ShardDraws> FilterPhase(const config::Config& cfg, const SampledParameters& sp,
                                    const StartingPoint& start, GatheredShards gathered,
                                    const std::vector<ShardDraws>& theta_draws,
                                    CmcRunResult& result, const Logger& logger);

// Bimodal shard posteriors of the physical parameters (every shard with draws, used or
// not): reported, and warned about where ≥ 5 % of the shards hold two confirmed modes.
void BimodalityPhase(const config::Config& cfg, const SampledParameters& sp,
                     const std::vector<ShardDraws>& theta_draws, CmcRunResult& result,
                     const Logger& logger);

// The consensus weights for the configured sharding: pooled directions with per-shard
// precisions for randomly sharded shards, each shard's own covariance otherwise.
ConsensusShape ConsensusShapeOf(const config::Config& cfg);

// The consensus of the kept shards, in the model parameters (result.draws).
// With a parameter bimodal in enough shards, the mode-aware consensus (mode_aware.h);
// if it cannot be formed, the plain one with a warning saying why.
void CombinePhase(const std::vector<ShardDraws>& kept, const std::vector<ShardDraws>& theta_draws,
                  const SamplingSites& sites, const StartingPoint& start, int n_theta,
                  ConsensusShape shape, CmcRunResult& result, const Logger& logger);

// Phase: the posterior against the NLSQ warm start (rank 0).
void CompareWithNlsqPhase(const nlsq::NlsqRunResult* warm, CmcRunResult& result,
                          const Logger& logger);

// Posterior means and standard deviations of the expanded parameters (physical +
// per-angle scaling), and the convergence summary of the shards.
void Summarise(model::AnalysisMode mode, const SampledParameters& sp, CmcRunResult& result);

// The coordinates the chains sample, in words (diagnostics.json).
std::string SampledCoordinates(const config::Config& cfg, const SamplingSites& sites);

// What the run was asked to do (every rank).
CmcRunResult ResultOfSettings(model::AnalysisMode mode, const SampledParameters& sp,
                              const SamplerSettings& sampler, const Shards& shards);

void LogShards(const CmcRunResult& result, const Logger& logger);

}  // namespace homodyne::cmc::phases
