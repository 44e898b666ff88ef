// The posterior of one CMC shard as a NUTS target (nuts::LogDensity).
//
//   c2_p ~ Normal(model_p(θ), σ) for every point p of the shard (each (i < j) pair once:
//   the pairs are the independent measurements; homodyne's CMC counts both (i, j) and
//   (j, i) and is over-confident by √2), θ the sampled model parameters of the per-angle
//   layout (ParameterLayout's optimiser space), σ the shard's noise level;
//   priors on every θ_i and on σ (tempered by the caller for K shards). With a known σ
//   (setup.known_sigma) σ is a constant: no prior, no coordinate.
// NUTS works on unconstrained coordinates q: site_i = T_i(q_i) (BoundedTransform within the
// site's bounds), θ = G(R(sites)) (R: reparameterization.h, priors on its sites; G:
// sampling_geometry.h, priors on θ, walls at θ's box; each the identity when inactive) and
// σ = exp(q_σ) (the last coordinate, absent when σ is known); the log density includes
// the log-Jacobians. The
// likelihood and its gradient come from the fast model kernel in one pass.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cmc/bounded_transform.h"
#include "cmc/prior.h"
#include "cmc/reparameterization.h"
#include "cmc/sampling_geometry.h"
#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/parameter_layout.h"
#include "model/row_tile.h"
#include "nuts/log_density.h"

namespace homodyne::cmc {

// An affine change q = L⁻¹(u − centre) of the sampled coordinates u (the coordinates
// described above): with L the Cholesky factor of a Laplace covariance the sampler sees a
// posterior of unit scale and no linear correlation, so the metric's regularisation toward
// a multiple of the identity is small against every direction. The density is the same
// up to the constant log|det L|. Empty: q = u.
struct Whitening {
  std::vector<double> centre;  // u at the expansion point (dimension())
  std::vector<double> chol;    // L, lower triangular, row-major (dimension()²)
  bool empty() const { return chol.empty(); }
  std::vector<double> ToU(std::span<const double> q) const;  // centre + L·q (q when empty)
};

struct ShardMode {
  std::vector<double> u;      // the mode in the coordinates before the whitening
  std::vector<double> theta;  // and in the model parameters
  double sigma = 0.0;
  double start_log_density = 0.0, log_density = 0.0;
  int iterations = 0;
  bool converged = false;  // the last step gained < 1e-9 relative, or none was found
};

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
  // Changed coordinates (positions disjoint from reparam's) with θ's own box as walls.
  SamplingGeometry sampling_geometry;
  std::vector<double> theta_lower, theta_upper;  // θ's bounds (needed when it is active)
  Prior sigma_prior{PriorType::kHalfNormal, 0.0, 0.01};
  std::optional<double> known_sigma;  // set: σ fixed at this value (> 0), not sampled
  Whitening whitening;                // applied to the coordinates NUTS sees
  int threads = 1;
  std::function<void(int thread_index)> worker_start;  // kernel worker placement (optional)
};

class ShardPosterior final : public nuts::LogDensity {
 public:
  ShardPosterior(ShardPosteriorSetup setup, model::ParameterLayout layout);
  ~ShardPosterior() override;

  // Sampled model parameters, + 1 (σ, last) unless σ is known.
  int dimension() const override;
  bool samples_sigma() const;
  double LogDensityGradient(std::span<const double> q, std::span<double> gradient) const override;

  // Coordinates ↔ (θ, σ) (θ: the model parameters, physical even when reparameterised).
  // With σ known, `sigma` is ignored and ToConstrained appends the known value.
  std::vector<double> ToUnconstrained(std::span<const double> theta, double sigma) const;
  std::vector<double> ToConstrained(std::span<const double> q) const;  // θ…, σ
  // ToConstrained of coordinates u before the whitening (whitened = false).
  std::vector<double> ToConstrained(std::span<const double> q, bool whitened) const;
  // The whitening at u (or at (θ, σ)) from the Gauss–Newton Hessian of the likelihood
  // plus the priors' curvature, in u (this posterior's own whitening is ignored); empty
  // when that Hessian is not positive definite.
  Whitening LaplaceAt(std::span<const double> u) const;
  Whitening Laplace(std::span<const double> theta, double sigma) const;
  // The posterior's mode in u from (θ, σ) by Levenberg–Marquardt with that Hessian (at
  // most max_iterations steps; deterministic). A sampled σ starts at √(χ²/N) at θ instead
  // where that is denser.
  ShardMode FindMode(std::span<const double> theta, double sigma, int max_iterations) const;
  const model::ParameterLayout& layout() const;
  std::int64_t num_points() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace homodyne::cmc
