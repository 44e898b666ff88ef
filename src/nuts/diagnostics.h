// Convergence diagnostics as Stan computes them (analyze/mcmc): split chains, rank
// normalisation, bulk/tail R̂, bulk/tail ESS (Geyer's initial monotone sequence on
// FFT autocovariances, O(N log N)) and Monte Carlo standard errors.
//
// `chains` holds one vector of draws of ONE scalar quantity per chain. Chains of
// different lengths are truncated to the shortest. Functions return NaN when the
// draws are non-finite or constant, or too short (ESS needs ≥ 4 draws per chain).
#pragma once

#include <vector>

namespace homodyne::nuts {

using Chains = std::vector<std::vector<double>>;

// Each chain → its two halves of ⌊N/2⌋ draws (the middle draw dropped for odd N).
Chains SplitChains(const Chains& chains);
// Pooled average ranks r → Φ⁻¹((r − 3/8)/(S + 1/4)); same shape as the input.
Chains RankNormalize(const Chains& chains);
// Classic R̂ = √(((N−1)/N W + B/N)/W) on the given chains (no splitting).
double Rhat(const Chains& chains);
// Classic ESS (Geyer initial monotone sequence) on the given chains (no splitting).
double Ess(const Chains& chains);

struct RhatResult {
  double bulk = 0.0;  // R̂ of the rank-normalised split chains
  double tail = 0.0;  // R̂ of the rank-normalised split |x − median|
  double Max() const { return bulk > tail ? bulk : tail; }  // the reported R̂
};
RhatResult SplitRankNormalizedRhat(const Chains& chains);

struct EssResult {
  double bulk = 0.0;  // ESS of the rank-normalised split chains
  double tail = 0.0;  // min ESS of the indicators x ≤ q05 and x ≥ q95 (split chains)
};
EssResult SplitRankNormalizedEss(const Chains& chains);

// MCSE of the mean: sd / √ESS, ESS on the split (not rank-normalised) chains.
double McseMean(const Chains& chains);
// MCSE of the standard deviation (Taylor expansion with the ESS of |x − mean|).
double McseSd(const Chains& chains);

// Quantile (linear interpolation between order statistics, R type 7) of all draws.
double PooledQuantile(const Chains& chains, double probability);

}  // namespace homodyne::nuts
