// Consensus Monte Carlo combination (Scott et al. 2016): shard s contributes draws θ_s,j
// with a weight matrix W_s; the j-th combined draw is (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j. Two
// choices of W_s (ConsensusShape):
//   kPooled    pooled directions, per-shard precisions: the axes are the eigenvectors e_k of
//              the shards' mean correlation matrix (coordinates scaled by the sds of their
//              mean covariance, D̄); along e_k shard s weighs 1/v_sk, v_sk its own variance
//              along e_k, so W_s = D̄⁻¹ E diag(1/v_sk) Eᵀ D̄⁻¹ and each combined coordinate
//              along e_k has the variance 1/Σ_s(1/v_sk) (the product of the shards' marginals
//              along it). Why not Σ̂_s⁻¹ for exchangeable shards (random sharding): on a
//              near-degenerate ridge (correlations of 0.999) small differences of
//              orientation between the Σ̂_s make the product of per-shard Gaussians far
//              narrower along the ridge than the full-data posterior; along fixed common
//              axes they cannot. Why not one scalar precision per shard (W_s = κ_s Σ̄⁻¹,
//              the rule before): random shards hold the same angles and lags but not the
//              same information in every direction (one shard of issue #38's laminar
//              studies pinned the shear rates 2-2.5x more loosely than the others and D0 as
//              well as they did), and a scalar weight averages the shards' variances along
//              such a direction instead of adding their precisions: the consensus came out
//              up to 1.33x the full-data sd (docs/cmc.md, step 8). Where the shards'
//              covariances are proportional (Σ̂_s = c_s Σ) all three rules agree.
//   kPerShard  W_s = Σ̂_s⁻¹ (Gaussian-optimal for shards of different shapes: stratified or
//              contiguous sharding).
// One shard is returned unchanged (bit for bit) under either choice.
#pragma once

#include <vector>

namespace homodyne::cmc {

// Draws of one shard: draws × dims, row-major.
struct ShardDraws {
  int dims = 0;
  std::vector<double> draws;
  int count() const { return dims > 0 ? static_cast<int>(draws.size()) / dims : 0; }
};

struct ConsensusResult {
  int dims = 0;
  std::vector<double> draws;       // combined, min_s(count) × dims
  std::vector<double> mean;        // of the combined draws
  std::vector<double> covariance;  // of the combined draws (dims × dims)
  std::vector<std::vector<double>> shard_covariances;
};

enum class ConsensusShape { kPooled, kPerShard };

// Shards must share `dims` and have ≥ dims + 1 draws with a positive-definite sample
// covariance; a bad-input Error names the offending shard otherwise.
ConsensusResult CombineConsensus(const std::vector<ShardDraws>& shards,
                                 ConsensusShape shape = ConsensusShape::kPooled);

}  // namespace homodyne::cmc
