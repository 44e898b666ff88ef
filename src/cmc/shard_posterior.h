// The posterior of one CMC shard as a NUTS target (nuts::LogDensity).
//
//   c2_p ~ Normal(model_p(θ), σ) for every point p of the shard (each (i < j) pair once:
//   the pairs are the independent measurements; homodyne's CMC counts both (i, j) and
//   (j, i) and is over-confident by √2), θ the sampled model parameters of the per-angle
//   layout (ParameterLayout's optimiser space), σ the shard's noise level;
//   priors on every θ_i and on σ (tempered by the caller for K shards).
// NUTS works on unconstrained coordinates q: site_i = T_i(q_i) (BoundedTransform within the
// site's bounds), θ = R(sites) (reparameterization.h; the identity when inactive) and
// σ = exp(q_σ); the log density includes the log-Jacobians. The
// likelihood and its gradient come from the fast model kernel in one pass.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cmc/bounded_transform.h"
#include "cmc/prior.h"
#include "cmc/reparameterization.h"
#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/parameter_layout.h"
#include "model/row_tile.h"
#include "nuts/log_density.h"

namespace homodyne::cmc {

struct ShardPosteriorSetup {
  model::AnalysisMode mode = model::AnalysisMode::kStatic;
  model::Geometry geometry;
  std::vector<double> t;              // time grid the tiles refer to
  std::vector<double> phi_deg;        // angles
  std::vector<model::RowTile> tiles;  // the shard's points; weights are forced to 1
  // One prior and one pair of bounds per sampled site (layout order): the model parameter
  // itself, or with `reparam` active its replacement site (log D_ref: unbounded, ratio:
  // [Reparameterization::kRatioLower, ∞), log γ_ref: unbounded).
  std::vector<Prior> priors;
  std::vector<double> lower, upper;
  Reparameterization reparam;
  Prior sigma_prior{PriorType::kHalfNormal, 0.0, 0.01};
  int threads = 1;
  std::function<void(int thread_index)> worker_start;  // kernel worker placement (optional)
};

class ShardPosterior final : public nuts::LogDensity {
 public:
  ShardPosterior(ShardPosteriorSetup setup, model::ParameterLayout layout);
  ~ShardPosterior() override;

  int dimension() const override;  // sampled model parameters + 1 (σ, last)
  double LogDensityGradient(std::span<const double> q, std::span<double> gradient) const override;

  // Coordinates ↔ (θ, σ) (θ: the model parameters, physical even when reparameterised).
  std::vector<double> ToUnconstrained(std::span<const double> theta, double sigma) const;
  std::vector<double> ToConstrained(std::span<const double> q) const;  // θ…, σ
  const model::ParameterLayout& layout() const { return layout_; }
  std::int64_t num_points() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  model::ParameterLayout layout_;
};

}  // namespace homodyne::cmc
