// Whether a shard's Laplace map (shard_posterior.h's Whitening) describes its posterior
// well enough to sample in its coordinates: the log density along each axis of the map,
// u = centre + k·L·e_i at k = ±1, ±2 Laplace sds, against the Gaussian's drop k²/2.
//
// Why along the axes: the map is built from the Gauss–Newton Hessian at the mode, a local
// quantity. Where it misjudges a direction (a direction the data do not see, cut off by a
// wall or a prior the Hessian barely feels; a mode the search did not reach; a banana
// whose width across the ridge is narrower away from the mode), the whitened posterior is
// far from unit scale along that axis and the sampler's warmup starts from a wrong metric,
// which the regularisation of the metric adaptation toward the identity then keeps wrong in
// the narrow directions. 8·d density evaluations (no gradients are used for the decision)
// are cheap against a shard's chains (tens of thousands of gradients), and the check is a
// deterministic function of the shard's posterior, so the choice is the same on every rank
// and thread count and after a resume.
#pragma once

#include <string>

#include "cmc/shard_posterior.h"
#include "nuts/log_density.h"

namespace homodyne::cmc {

struct WhiteningCheckOptions {
  // The map is poor where the implied sd along an axis, |k| / √(2·drop), lies outside
  // [1/max_scale_error, max_scale_error] Laplace sds at any of the probed k.
  double max_scale_error = 4.0;
  void Validate() const;  // > 1, finite
};

struct WhiteningCheck {
  bool poor = false;
  int axis = -1;      // the axis with the largest scale error (column of L)
  double k = 0.0;     // its step in Laplace sds
  double drop = 0.0;  // log π(centre) − log π(centre + k·L·e_axis); +inf: outside the support
  double scale = 1.0;  // implied sd there, in Laplace sds (0: outside the support)
  double min_scale = 0.0, max_scale = 0.0;  // over every axis and k
  int evaluations = 0;
  // One line for the log and the report: what was found and what it means.
  std::string Describe(const std::vector<std::string>& axis_names = {}) const;
};

// `density` is the posterior in the coordinates u before the whitening (a ShardPosterior
// built without a whitening, or any target in those coordinates), `w` a non-empty map.
WhiteningCheck CheckWhiteningAxes(const nuts::LogDensity& density, const Whitening& w,
                                  const WhiteningCheckOptions& options = {});

}  // namespace homodyne::cmc
