// Consensus Monte Carlo fit of XPCS two-time data (algorithms spec §2):
// shards of row segments (sharding.h), each sampled by our NUTS on its shard posterior
// (shard_posterior.h) with tempered priors (1/K), optionally NLSQ-informed; the shards'
// draws are combined by the consensus (consensus.h: pooled directions with per-shard
// precisions for randomly sharded shards, each shard's own covariance otherwise) in the
// unconstrained sampling coordinates and transformed back.
//
// Parallel layout: shard s runs on rank s mod P, its chains in parallel on the rank's
// threads (shard_chains.h); every RNG stream is keyed by (seed, shard, chain), so the result
// does not depend on the number of ranks. Each rank reads the selected data itself (the
// shards need rows from the whole matrix); the combination happens on rank 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cmc/bimodality.h"
#include "cmc/cmc_checkpoint.h"
#include "cmc/mode_aware.h"
#include "config/config.h"
#include "core/log.h"
#include "io/dataset.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::cmc {

struct CmcRunOptions {
  std::string data_file;  // --data-file
  // Data already complete on every rank (the public API): sampled from it; the config's
  // data file and selection are then not used.
  const io::DatasetView* in_memory = nullptr;
  const nlsq::NlsqRunResult* warm_start = nullptr;  // NLSQ result (complete on every rank)
  int threads = 1;
  // Optional placement of compute slot i (1..threads−1) for the thread that runs there
  // (the caller's thread is slot 0); see shard_chains.h.
  std::function<void(int slot)> worker_start;
  int num_warmup = -1;  // < 0: config (per_shard_mcmc)
  int num_samples = -1;
  int num_chains = -1;
  int num_shards = -1;  // < 0: config / automatic
  bool dense_metric = true;
  bool print_progress = true;
  // Checkpoints, resume, stop on signals (docs/checkpoints.md); unset: none.
  std::optional<checkpoint::CmcCheckpointSettings> checkpoints;
};

struct ParameterSummary {
  std::string name;
  double mean = 0.0;
  double std = 0.0;
  bool held = false;  // a physical parameter held at `mean` (EffectiveParameter::vary false)
};

struct ShardDiagnostics {
  int shard = 0;
  std::int64_t points = 0;
  double max_rhat = 0.0;
  double min_ess = 0.0;
  double divergence_rate = 0.0;
  double acceptance_rate = 0.0;
  double noise_sigma_mean = 0.0;
  double treedepth_saturation_rate = 0.0;        // draws that hit max_tree_depth
  std::int64_t gradient_evaluations = 0;         // leapfrog steps of its chains' sampling draws
  std::int64_t warmup_gradient_evaluations = 0;  // and of their warmup iterations
  std::int64_t divergences = 0;                  // divergent draws of all its chains
  std::int64_t treedepth_hits = 0;               // draws that hit max_tree_depth
  // Per sampled parameter (CmcRunResult::names), on the model-space draws of each chain:
  // split rank-normalised R̂ (NaN with one chain), bulk and tail ESS.
  std::vector<double> rhat, ess_bulk, ess_tail;
  double Ess(std::size_t p) const { return std::min(ess_bulk[p], ess_tail[p]); }  // the smaller
  // The shard's convergence rule (docs/cmc.md, homodyne's): max R̂ below `rhat_threshold`
  // and min ESS at least `ess_threshold`. A NaN R̂ (one chain) does not fail it: it is not
  // judged (the result is then "unchecked").
  bool RhatFails(double rhat_threshold) const { return max_rhat >= rhat_threshold; }
  bool EssFails(double ess_threshold) const { return min_ess < ess_threshold; }
  bool Converged(double rhat_threshold, double ess_threshold) const {
    return !RhatFails(rhat_threshold) && !EssFails(ess_threshold);
  }
  std::vector<std::int64_t> tree_depth_histogram;  // draws per tree depth 0…max_tree_depth
  double step_size_mean = 0.0;                     // ε used by the draws (after jitter)
  // Wall seconds of the shard's chains (warmup and sampling, all chains, in this process:
  // a resumed run counts its own part only).
  double sampling_seconds = 0.0;
  // Warmup iterations of the kept draws' chains and the runs of the shard it took
  // (validation.warmup_retries: a rerun doubles the warmup; 1 = no rerun).
  int num_warmup = 0;
  int warmup_attempts = 1;
  // The coordinates its chains sampled (docs/cmc.md step 5b): "whitened" by the shard's
  // Laplace map or "unwhitened", and why (laplace_whitening, the map's axis check).
  std::string coordinates;
  std::string coordinates_reason;
  bool used = true;       // kept by the shard filters (shard_filter.h)
  std::string rejection;  // why not
};

// A physical parameter's CMC posterior against its NLSQ warm start: z = |mean − value| /
// sqrt(std² + nlsq_std²); z > 3 is a disagreement (homodyne logs it; so do we, and write it).
struct NlsqComparison {
  std::string name;
  double cmc_mean = 0.0, cmc_std = 0.0;
  double nlsq_value = 0.0, nlsq_std = 0.0;
  double z = 0.0;
  bool disagrees = false;
};
inline constexpr double kNlsqDisagreementZ = 3.0;

struct CmcRunResult {
  std::string analysis_mode;
  std::string per_angle_mode;
  int num_shards = 0;
  int num_chains = 0;
  int num_warmup = 0;
  int num_samples = 0;
  double target_accept = 0.8;                    // the sampler's δ
  double known_sigma = 0.0;                      // > 0: σ fixed at this value; 0: sampled
  std::string sampled_coordinates;               // the chains' coordinates, in words
  std::vector<std::string> names;                // sampled parameters (optimiser space)
  std::vector<double> draws;                     // combined, draws × names (constrained)
  std::vector<std::vector<double>> shard_draws;  // per shard, chains pooled (constrained)
  std::vector<ParameterSummary> parameters;      // physical + per-angle contrast/offset means
  std::vector<ShardDiagnostics> shards;
  int shards_used = 0;
  std::string combination_method = "robust_consensus_mc";
  std::vector<std::string> warnings;  // the shard filter's heterogeneity, NLSQ disagreements
  std::vector<NlsqComparison> nlsq_comparison;  // warm-started from NLSQ: every physical one
  std::vector<BimodalParameter> bimodality;     // D0, alpha, D_offset, gamma_dot_t0, beta
  struct ModeAware {
    bool applied = false;
    std::string reason;  // why not (empty when applied or not needed)
    std::vector<ModeCluster> clusters;
  } mode_aware;  // tried when a parameter is bimodal in enough shards
  double max_rhat = 0.0;
  double min_ess = 0.0;
  double acceptance_rate = 0.0;
  double seconds = 0.0;
  // The data sampled (analysis_results_cmc.json's dataset_info, as the NLSQ file's): angles,
  // times of the fit grid (t = 0 excluded), fitted pairs of all angles, q.
  int n_angles = 0;
  int n_time_points = 0;
  std::int64_t n_points = 0;
  double q = 0.0;
  // Every shard's max R̂ < rhat_threshold and min ESS >= ess_threshold (the config's
  // optimization.cmc.validation.max_per_shard_rhat and min_per_shard_ess, as homodyne's
  // convergence check reads them); a shard that misses either is named in `warnings`.
  bool all_converged = false;
  double rhat_threshold = 1.1;
  double ess_threshold = 100.0;
};

// homodyne's check of the fraction of shards kept (optimization.cmc.combination.
// min_success_rate and min_success_rate_warning): a warning below the first, an error-level
// line below the second, each added to result.warnings; the posterior is still combined
// from the kept shards (result.shards_used of result.shards).
void WarnOnSuccessRate(const config::Config& cfg, CmcRunResult& result, const Logger& logger);

// Every physical parameter of `nlsq` that the posterior summarises, compared (NlsqComparison).
std::vector<NlsqComparison> CompareWithNlsq(const nlsq::FitReport& nlsq,
                                            const std::vector<ParameterSummary>& posterior);

// Collective over `world`; the returned result is complete on rank 0.
CmcRunResult RunCmcFit(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                       const Logger& logger);

// Rank 0's `result` on every rank of `world` (collective).
void BroadcastCmcResult(const Comm& world, CmcRunResult& result);

}  // namespace homodyne::cmc
