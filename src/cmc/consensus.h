// Consensus Monte Carlo combination (Scott et al. 2016): shard s contributes draws θ_s,j
// with a weight matrix W_s; the j-th combined draw is (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j. Two
// choices of W_s (ConsensusShape):
//   kPooled    per-coordinate precisions: shard s weighs sampled coordinate i by 1/v_si,
//              v_si its own variance of it, so W_s = diag(1/v_si) and each combined
//              coordinate has the variance 1/Σ_s(1/v_si), the product of the shards'
//              marginals. Why not Σ̂_s⁻¹ for exchangeable shards (random sharding): on a
//              near-degenerate ridge (correlations of 0.999) small differences of
//              orientation between the Σ̂_s make the product of per-shard Gaussians far
//              narrower along the ridge than the full-data posterior; marginal by marginal
//              they cannot. Why not one scalar precision per shard (W_s = κ_s Σ̄⁻¹,
//              κ_s ∝ det(Σ̂_s)^(−1/d), the rule before): random shards hold the same angles
//              and lags but not the same information on every parameter (in issue #38's
//              laminar studies one shard pinned the shear rates 1.7–2.3x more loosely than
//              the others and D0 1.1–1.4x), and a scalar weight, a volume over all d
//              coordinates, averages the shards' variances along such a parameter instead
//              of adding their precisions: the consensus came out up to 1.33x the full-data
//              sd (docs/cmc.md, step 8). Why not a common rotated basis: the eigenvectors of
//              the shards' mean correlation mix the long and narrow directions of ridges
//              where correlations are weak, and weighting along such mixed axes pins the
//              ridge again (measured: 0.25 of the full-data width in
//              Consensus.PooledShapeKeepsTheWidthAlongARidge). Where the shards'
//              covariances are proportional (Σ̂_s = c_s Σ) all these rules agree.
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
