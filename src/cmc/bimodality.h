// Bimodal shard posteriors (homodyne's CMC filter step 4): a shard whose draws of a physical
// parameter are better described by two Gaussians of weight > min_weight each, whose means
// differ by more than min_separation of their mean magnitude, holds two modes. The
// consensus combines each shard as one Gaussian, so such modes are averaged away; this makes
// them visible (a warning and the diagnostics), as homodyne does before its mode-aware
// consensus (which is not implemented here: docs/cmc.md).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "cmc/consensus.h"

namespace homodyne::cmc {

struct TwoGaussians {
  double weight[2] = {0.0, 0.0};
  double mean[2] = {0.0, 0.0};  // mean[0] ≤ mean[1]
  double variance[2] = {0.0, 0.0};
  double log_likelihood = 0.0;
};

// Maximum-likelihood mixture of two Gaussians on x by EM from three deterministic starts
// (splits of the sorted draws at 25, 50 and 75 %); the best log-likelihood wins. Needs at
// least 4 finite values (else both components are the sample's moments, weights 1 and 0).
TwoGaussians FitTwoGaussians(std::span<const double> x);

// homodyne's test: min weight > min_weight and |μ1 − μ2| / max(|(μ1 + μ2)/2|, 1e-10) >
// min_separation.
bool IsBimodal(const TwoGaussians& m, double min_weight, double min_separation);

struct BimodalParameter {
  std::string name;
  int shards_tested = 0;
  std::vector<int> bimodal_shards;            // shard indices
  double lower_mode = 0.0, upper_mode = 0.0;  // means over the bimodal shards
  bool flagged = false;  // bimodal in ≥ kBimodalShardFraction of the shards tested
};
inline constexpr double kBimodalShardFraction = 0.05;

// Every parameter of `names` listed in `tested` (the physical ones), over the shards'
// draws (draws × names.size(), model space); shard indices are positions in `draws`
// unless `shard_ids` gives them.
std::vector<BimodalParameter> DetectBimodality(const std::vector<ShardDraws>& draws,
                                               const std::vector<std::string>& names,
                                               const std::vector<std::string>& tested,
                                               double min_weight, double min_separation,
                                               const std::vector<int>& shard_ids = {});

}  // namespace homodyne::cmc
