#include "cmc/shard_posterior.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "model/kernel.h"

namespace homodyne::cmc {

struct ShardPosterior::Impl {
  std::unique_ptr<model::ModelKernel> kernel;  // σ_kernel = 1, weights 1: χ² = Σ (y − m)²
  std::vector<Prior> priors;
  std::vector<BoundedTransform> transforms;
  Prior sigma_prior;
  Reparameterization reparam;
  int n_theta = 0;
  mutable std::vector<double> jtr_expanded;  // scratch (the density is not thread-safe)
};

ShardPosterior::ShardPosterior(ShardPosteriorSetup setup, model::ParameterLayout layout)
    : impl_(std::make_unique<Impl>()), layout_(std::move(layout)) {
  Impl& im = *impl_;
  im.n_theta = layout_.num_optimised();
  if (static_cast<int>(setup.priors.size()) != im.n_theta ||
      static_cast<int>(setup.lower.size()) != im.n_theta ||
      static_cast<int>(setup.upper.size()) != im.n_theta) {
    ThrowBadInput(
        fmt::format("shard posterior: {} sampled parameters but {} priors and {}/{} bounds",
                    im.n_theta, setup.priors.size(), setup.lower.size(), setup.upper.size()));
  }
  const auto& names = layout_.names();
  for (int i = 0; i < im.n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    setup.priors[k].Validate(names[k]);
    im.transforms.emplace_back(setup.lower[k], setup.upper[k]);
  }
  setup.sigma_prior.Validate("sigma");
  im.priors = std::move(setup.priors);
  im.reparam = setup.reparam;
  im.sigma_prior = setup.sigma_prior;
  for (auto& tile : setup.tiles) {
    tile.weight = nullptr;
    tile.uniform_weight = 1.0;
  }
  model::KernelOptions ko;
  ko.threads = setup.threads;
  ko.worker_start = setup.worker_start;
  ko.sigma = 1.0;
  im.kernel = std::make_unique<model::ModelKernel>(setup.mode, setup.geometry, setup.t,
                                                   setup.phi_deg, std::move(setup.tiles), ko);
  im.jtr_expanded.assign(static_cast<std::size_t>(layout_.num_expanded()), 0.0);
}

ShardPosterior::~ShardPosterior() = default;

int ShardPosterior::dimension() const { return impl_->n_theta + 1; }

std::int64_t ShardPosterior::num_points() const { return impl_->kernel->num_points(); }

std::vector<double> ShardPosterior::ToUnconstrained(std::span<const double> theta,
                                                    double sigma) const {
  const std::vector<double> sites = impl_->reparam.active()
                                        ? impl_->reparam.ToSites(theta.first(impl_->n_theta))
                                        : std::vector<double>(theta.begin(), theta.end());
  std::vector<double> q;
  for (int i = 0; i < impl_->n_theta; ++i) {
    q.push_back(impl_->transforms[static_cast<std::size_t>(i)].ToUnconstrained(
        sites[static_cast<std::size_t>(i)]));
  }
  q.push_back(std::log(sigma));
  return q;
}

std::vector<double> ShardPosterior::ToConstrained(std::span<const double> q) const {
  std::vector<double> out;
  for (int i = 0; i < impl_->n_theta; ++i) {
    out.push_back(impl_->transforms[static_cast<std::size_t>(i)].ToConstrained(
        q[static_cast<std::size_t>(i)]));
  }
  if (impl_->reparam.active()) {
    const std::vector<double> theta = impl_->reparam.ToTheta(out);
    std::copy(theta.begin(), theta.end(), out.begin());
  }
  out.push_back(std::exp(q[static_cast<std::size_t>(impl_->n_theta)]));
  return out;
}

double ShardPosterior::LogDensityGradient(std::span<const double> q,
                                          std::span<double> gradient) const {
  const Impl& im = *impl_;
  const auto n = static_cast<std::size_t>(im.n_theta);
  std::vector<double> sites(n);
  for (std::size_t i = 0; i < n; ++i) sites[i] = im.transforms[i].ToConstrained(q[i]);
  const std::vector<double> theta = im.reparam.active() ? im.reparam.ToTheta(sites) : sites;
  const double log_sigma = q[n];
  const double sigma = std::exp(log_sigma);
  if (!std::isfinite(sigma) || sigma <= 0.0) return -std::numeric_limits<double>::infinity();

  // Likelihood: χ² = Σ (y − m)², Jᵀr = −Σ (y − m)·∂m/∂θ (J = ∂r/∂θ, r = y − m), from the
  // kernel's gradient-only pass; optimiser-space Jᵀr = Bᵀ·(expanded Jᵀr).
  const double chi2 = im.kernel->Gradient(layout_.Expand(theta), im.jtr_expanded);
  const int n_expanded = layout_.num_expanded();
  const double n_points = static_cast<double>(im.kernel->num_points());
  const double inv_s2 = 1.0 / (sigma * sigma);
  double lp = -0.5 * chi2 * inv_s2 - n_points * log_sigma;

  // ∂ log L / ∂θ, then ∂ log L / ∂sites (the chain rule through the reparameterisation).
  std::vector<double> dll(n);
  for (std::size_t i = 0; i < n; ++i) {
    double jtr = 0.0;
    for (int e = 0; e < n_expanded; ++e) {
      const double b = layout_.B(e, static_cast<int>(i));
      if (b != 0.0) jtr += b * im.jtr_expanded[static_cast<std::size_t>(e)];
    }
    dll[i] = -jtr * inv_s2;
  }
  if (im.reparam.active()) im.reparam.PullBack(theta, dll);
  for (std::size_t i = 0; i < n; ++i) {
    lp += im.priors[i].LogDensity(sites[i]) + im.transforms[i].LogJacobian(q[i]);
    gradient[i] = (dll[i] + im.priors[i].DLogDensity(sites[i])) * im.transforms[i].DxDu(q[i]) +
                  im.transforms[i].DLogJacobian(q[i]);
  }
  // σ = exp(q_σ): log-Jacobian q_σ.
  lp += im.sigma_prior.LogDensity(sigma) + log_sigma;
  const double dll_sigma = chi2 * inv_s2 / sigma - n_points / sigma;
  gradient[n] = (dll_sigma + im.sigma_prior.DLogDensity(sigma)) * sigma + 1.0;
  return lp;
}

}  // namespace homodyne::cmc
