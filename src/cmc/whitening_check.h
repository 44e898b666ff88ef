// Whether a shard's Laplace map (shard_posterior.h's Whitening) is grossly wrong for its
// posterior: the log density along each axis of the map, u = centre + k·L·e_i at k = ±1
// Laplace sd, against the Gaussian's drop of 1/2.
//
// What it catches, and what not. NUTS adapts a dense metric in the whitened coordinates
// too, so a map that is off by a moderate factor, or a posterior that is skewed or curved
// within the map's reach, still samples far better per gradient than the unwhitened
// coordinates (the demo's shards: along log gamma_ref's axis the implied sd at +2 map sds
// is 0.15 of the map's, yet the ESS per gradient is 3-7x the unwhitened coordinates';
// docs/cmc.md, "Choosing the coordinates"). The map is called poor only where the sampler
// cannot recover: the posterior is zero within 1 map sd (a wall or bound cuts the bulk),
// or the implied sd |k|/√(2·drop) is off by more than max_scale_error (there the metric
// adaptation's regularisation toward the identity and its unadapted first window
// dominate). 2·d + 1 density evaluations (no gradients) against a shard's tens of
// thousands of gradients; the check is a deterministic function of the shard's posterior,
// so the choice is the same on every rank and thread count and after a resume.
#pragma once

#include <string>

#include "cmc/shard_posterior.h"
#include "nuts/log_density.h"

namespace homodyne::cmc {

struct WhiteningCheckOptions {
  // The map is poor where the implied sd along an axis, 1 / √(2·drop) at k = ±1, lies
  // outside [1/max_scale_error, max_scale_error] Laplace sds (0 outside the support, ∞
  // where the density does not drop).
  double max_scale_error = 20.0;
  void Validate() const;  // > 1, finite
};

struct WhiteningCheck {
  bool poor = false;
  int axis = -1;      // the axis with the largest scale error (column of L)
  double k = 0.0;     // its step in Laplace sds
  double drop = 0.0;  // log π(centre) − log π(centre + k·L·e_axis); +inf: outside the support
  double scale = 1.0;  // implied sd there, in Laplace sds (0: outside the support)
  double min_scale = 0.0, max_scale = 0.0;  // over every axis and k
  bool rises = false;  // the density rises along some axis (reported, not decisive)
  int evaluations = 0;
  // One line for the log and the report: what was found and what it means.
  std::string Describe(const std::vector<std::string>& axis_names = {}) const;
};

// `density` is the posterior in the coordinates u before the whitening (a ShardPosterior
// built without a whitening, or any target in those coordinates), `w` a non-empty map.
WhiteningCheck CheckWhiteningAxes(const nuts::LogDensity& density, const Whitening& w,
                                  const WhiteningCheckOptions& options = {});

}  // namespace homodyne::cmc
