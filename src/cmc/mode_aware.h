// Mode-aware consensus (homodyne's CMC for bimodal shards): when a physical parameter is
// bimodal in enough shards (bimodality.h), one Gaussian consensus of all shards lands
// between the modes. Instead the shards are split into a "lower" and an "upper"
// population around the modes' centroids (distances in units of each parameter's bound
// width): a unimodal shard joins the nearer one whole; a bimodal shard gives each
// population the draws nearer to its centroid. Each population is combined by the
// consensus of consensus.h, and the answer is their mixture, weighted by the
// populations' shard counts. homodyne combines the two GMM components' moments parameter
// by parameter; splitting the draws keeps the cross-parameter covariance.
#pragma once

#include <string>
#include <vector>

#include "cmc/bimodality.h"
#include "cmc/consensus.h"

namespace homodyne::cmc {

struct ModeCluster {
  std::string label;        // lower | upper
  std::vector<int> shards;  // shard ids (a bimodal shard is in both)
  double weight = 0.0;      // share of the mixture
  int draws = 0;            // draws of the mixture taken from it
};

struct ModeAwareResult {
  bool applied = false;
  std::string reason;  // why not, when not applied
  std::vector<ModeCluster> clusters;
  ShardDraws draws;  // the mixture, in the shards' (unconstrained) coordinates
};

// `kept` are the combined shards' draws in the sampling coordinates, `kept_ids` their shard
// ids; `theta` every shard's draws in the model parameters (indexed by shard id, rows in
// the order of `kept`'s); `names` the model parameters, `lower`/`upper` their bounds.
ModeAwareResult CombineModeAware(const std::vector<ShardDraws>& kept,
                                 const std::vector<int>& kept_ids,
                                 const std::vector<ShardDraws>& theta,
                                 const std::vector<std::string>& names,
                                 const std::vector<BimodalParameter>& bimodality,
                                 const std::vector<double>& lower, const std::vector<double>& upper,
                                 ConsensusShape shape = ConsensusShape::kPooled);

}  // namespace homodyne::cmc
