// Consensus Monte Carlo combination (Scott et al. 2016, Gaussian-optimal weights with
// full covariances): shard s contributes draws θ_s,j with weight W_s = Σ̂_s⁻¹ (the inverse
// of its sample covariance); the j-th combined draw is (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j.
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

// Shards must share `dims` and have ≥ dims + 1 draws with a positive-definite sample
// covariance; a bad-input Error names the offending shard otherwise.
ConsensusResult CombineConsensus(const std::vector<ShardDraws>& shards);

}  // namespace homodyne::cmc
