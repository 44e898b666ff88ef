// Bimodal shard posteriors (homodyne's CMC filter step 4, made stricter): the consensus
// combines each shard as one Gaussian, so a shard holding two modes would be averaged into
// the trough between them, and the mode-aware consensus (mode_aware.h) splits the shards
// instead. A split is costly when it is wrong: a wide, skewed single mode cut in two mixes
// two populations of one posterior and inflates the reported sds. So a shard's parameter
// holds two modes only when
//   1. homodyne's screen passes: a two-Gaussian mixture with both weights > min_weight and
//      |μ1 − μ2| / |mean of μ1, μ2| > min_separation;
//   2. the draws' kernel density has a trough between the two means no higher than
//      kMaxDipRatio of the lower of the two peaks (a single mode, however skewed, has none);
//   3. the mixture beats a single skew-normal mode by BIC on the chains' effective draws
//      (5 against 3 parameters; log-likelihoods scaled by n_eff/n, n_eff the sum of the
//      chains' own ESS, so autocorrelated draws do not count as independent);
// and the split is confirmed by the shard's own chains (each mode holds at least
// kChainModeShare of the draws of at least two chains) or by another shard whose draws
// pass 1–3 with modes on the same sides of both troughs. A parameter is flagged when its
// confirmed shards are at least kBimodalShardFraction of the shards tested. Everything is a
// deterministic function of the draws: no random numbers, no dependence on ranks or threads.
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

// homodyne's screen: min weight > min_weight and |μ1 − μ2| / max(|(μ1 + μ2)/2|, 1e-10) >
// min_separation.
bool IsBimodal(const TwoGaussians& m, double min_weight, double min_separation);

// Skew-normal density 2/ω·φ(z)·Φ(shape·z), z = (x − location)/scale.
struct SkewNormal {
  double location = 0.0, scale = 1.0, shape = 0.0;
  double log_likelihood = 0.0;
};
// Maximum likelihood by Nelder–Mead on (location, log scale, shape) from the method of
// moments and from the Gaussian; deterministic. Needs at least 4 finite values.
SkewNormal FitSkewNormal(std::span<const double> x);

inline constexpr double kMaxDipRatio = 0.5;
inline constexpr double kChainModeShare = 0.05;
inline constexpr double kBimodalShardFraction = 0.05;

// The verdict on one shard's draws of one parameter (steps 1–3 of the header).
struct ModeTest {
  TwoGaussians mixture;
  bool screen = false;  // step 1
  // Step 2 (computed when the screen passes): where the kernel density is lowest between
  // the means, and its value there over the lower of the two peaks (1 = no trough).
  double trough = 0.0;
  double dip_ratio = 1.0;
  // Step 3 (computed when step 2 passes): BIC(skew-normal) − BIC(mixture) on n_eff draws,
  // > 0 favours the two modes.
  SkewNormal skew;
  double effective_draws = 0.0;
  double delta_bic = 0.0;
  bool two_modes = false;  // steps 1–3
  // Chains with at least kChainModeShare of their draws below / above the trough.
  int chains_lower = 0, chains_upper = 0;
  bool confirmed_by_chains() const { return two_modes && chains_lower >= 2 && chains_upper >= 2; }
};

// `x` holds `chains` chains of equal length one after the other (1 when unknown).
ModeTest TestTwoModes(std::span<const double> x, int chains, double min_weight,
                      double min_separation);

struct BimodalParameter {
  std::string name;
  int shards_tested = 0;
  std::vector<int> bimodal_shards;            // confirmed two-mode shards (shard ids)
  std::vector<int> unconfirmed_shards;        // two modes by steps 1–3, not confirmed
  std::vector<int> screened_shards;           // passed homodyne's screen (step 1) alone
  double lower_mode = 0.0, upper_mode = 0.0;  // means over the confirmed shards
  bool flagged = false;  // confirmed in ≥ kBimodalShardFraction of the shards tested
};

// Every parameter of `names` listed in `tested` (the physical ones), over the shards'
// draws (draws × names.size(), model space, `chains` chains of equal length one after the
// other); shard ids are positions in `draws` unless `shard_ids` gives them.
std::vector<BimodalParameter> DetectBimodality(const std::vector<ShardDraws>& draws,
                                               const std::vector<std::string>& names,
                                               const std::vector<std::string>& tested,
                                               double min_weight, double min_separation,
                                               int chains = 1,
                                               const std::vector<int>& shard_ids = {});

// The shards' draws for DetectBimodality, without the draws of shards whose divergence
// rate (per shard, same order) is above max_divergence_rate: their chains did not sample
// the shard's posterior (docs/cmc.md, step 7b), so they are not tested.
std::vector<ShardDraws> DrawsOfSampledShards(const std::vector<ShardDraws>& draws,
                                             const std::vector<double>& divergence_rates,
                                             double max_divergence_rate);

}  // namespace homodyne::cmc
