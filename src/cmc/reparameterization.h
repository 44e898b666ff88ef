// Sampling reparameterisation of the laminar-flow physics (algorithms spec §2.7; homodyne's
// default for laminar_flow with one averaged contrast/offset). With the reference time
// t_ref = √(dt·t_max) the sampled sites replace
//   D0            by  log D_ref,        D_ref = D0·t_ref^α            (diffusion, enable_d_total)
//   D_offset      by  D_offset/D_ref    (> −1 + 1e-4: D_ref + D_offset > 0 at t_ref)
//   gamma_dot_t0  by  log γ_ref,        γ_ref = γ̇0·t_ref^β            (shear, enable_log_gamma)
// at the same positions of the optimiser vector; α and β are sampled directly. This removes
// the strong D0–α (γ̇0–β) correlation of the physical coordinates. homodyne's config calls
// the two switches enable_d_total / enable_log_gamma; what its sampler does is the above.
// Results (draws, summaries) are always reported in the physical parameters.
#pragma once

#include <span>

#include <string>
#include <vector>
#include "cmc/prior.h"
#include "cmc/sampling_geometry.h"

namespace homodyne::cmc {

struct Reparameterization {
  bool diffusion = false;  // log D_ref and D_offset/D_ref replace D0 and D_offset
  bool shear = false;      // log γ_ref replaces gamma_dot_t0 (laminar only)
  double t_ref = 1.0;
  int first_phys = 0;  // position of D0 in the optimiser vector

  static constexpr double kRatioLower = -1.0 + 1e-4;

  bool active() const { return diffusion || shear; }
  // Site vector ↔ optimiser vector θ (same length; only the replaced positions differ).
  std::vector<double> ToTheta(std::span<const double> sites) const;
  // θ must have D0 > 0 and γ̇0 > 0 (inside the default bounds); the ratio is clipped to
  // stay above kRatioLower + 1e-3.
  std::vector<double> ToSites(std::span<const double> theta) const;
  // In place: g holds ∂f/∂θ at θ = ToTheta(sites) and becomes ∂f/∂sites.
  void PullBack(std::span<const double> theta, std::span<double> g) const;
  // Site names: log_D_ref, D_offset_ratio, log_gamma_ref at the replaced positions.
  std::vector<std::string> SiteNames(std::vector<std::string> names) const;
};

// Prior centre and width of the replaced sites from an NLSQ estimate by the delta method
// (physical values p and uncertainties s in the order D0, alpha, D_offset, gamma_dot_t0,
// beta): var(log D_ref) = (s_D0/D0)² + (ln t_ref·s_α)², var(ratio) = (s_Doff/D_ref)² +
// ratio²·var(log D_ref), var(log γ_ref) = (s_γ/γ̇0)² + (ln t_ref·s_β)² (floors 1e-20; D_ref
// floored at 1e-10, γ_ref at 1e-20). Without an estimate (or a missing/non-finite
// uncertainty): (10, 1), (0, 0.5), (−5, 1).
struct SitePrior {
  double mu = 0.0, sd = 1.0;
};
struct ReparamPriors {
  SitePrior log_d_ref{10.0, 1.0}, ratio{0.0, 0.5}, log_gamma_ref{-5.0, 1.0};
};
ReparamPriors ReparamPriorsFromEstimate(double t_ref, std::span<const double> values,
                                        std::span<const double> sigmas);

// Replaces the priors and bounds of the reparameterised sites: log D_ref ~ Normal(μ,
// min(sd·√K, 10)), ratio ~ TruncatedNormal(μ, min(sd·√K, 2), [kRatioLower, ∞)), log γ_ref ~
// Normal(μ, min(sd·√K, 10)) (K = `temper`, homodyne's tempering with caps); bounds ±∞
// (ratio: [kRatioLower, ∞)).
void ReplaceSitePriors(const Reparameterization& r, const ReparamPriors& p, double temper,
                       std::vector<Prior>& priors, std::vector<double>& lower,
                       std::vector<double>& upper);

// θ from one row of unconstrained coordinates u (n sites): site_i = T_i(u_i) with the site
// bounds, then the reparameterisation, then the sampling geometry.
std::vector<double> UnconstrainedToTheta(std::span<const double> u,
                                         const std::vector<double>& lower,
                                         const std::vector<double>& upper,
                                         const Reparameterization& r, const SamplingGeometry& g);

}  // namespace homodyne::cmc
