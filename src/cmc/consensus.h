// Consensus Monte Carlo combination (Scott et al. 2016): shard s contributes draws θ_s,j
// with a weight matrix W_s; the j-th combined draw is (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j. Two
// choices of W_s (ConsensusShape):
//   kPooled    W_s = κ_s Σ̄⁻¹: every shard has one common shape Σ̄ and its own scale,
//              κ_s ∝ det(Σ̂_s)^(−1/d) (the precision per dimension by volume, which a
//              rotation of Σ̂_s does not change); Σ̄ cancels and the combined draw is
//              Σ_s κ_s θ_s,j / Σ_s κ_s. For exchangeable shards (random sharding: the
//              same angles and lags in every shard) the shard posteriors have one shape up
//              to Monte-Carlo error and the ridge's curvature; on a near-degenerate ridge
//              (correlations of 0.999) small differences of orientation between the Σ̂_s
//              make the product of per-shard Gaussians far narrower along the ridge than
//              the full-data posterior, while the pooled shape does not. Where the shards'
//              covariances are proportional (Σ̂_s = c_s Σ) both choices are the same.
//   kPerShard  W_s = Σ̂_s⁻¹ (Gaussian-optimal for shards of different shapes: stratified or
//              contiguous sharding).
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
