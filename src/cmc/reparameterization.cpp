#include "cmc/reparameterization.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cmc/bounded_transform.h"

namespace homodyne::cmc {
namespace {
// Physical order: D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0.
constexpr int kD0 = 0, kAlpha = 1, kDoff = 2, kGamma = 3, kBeta = 4;
}  // namespace

std::vector<double> Reparameterization::ToTheta(std::span<const double> sites) const {
  std::vector<double> theta(sites.begin(), sites.end());
  const double lt = std::log(t_ref);
  const auto at = [&](int p) { return static_cast<std::size_t>(first_phys + p); };
  if (diffusion) {
    const double d_ref = std::exp(sites[at(kD0)]);
    theta[at(kD0)] = d_ref * std::exp(-sites[at(kAlpha)] * lt);
    theta[at(kDoff)] = d_ref * sites[at(kDoff)];
  }
  if (shear) {
    theta[at(kGamma)] = std::exp(sites[at(kGamma)] - sites[at(kBeta)] * lt);
  }
  return theta;
}

std::vector<double> Reparameterization::ToSites(std::span<const double> theta) const {
  std::vector<double> s(theta.begin(), theta.end());
  const double lt = std::log(t_ref);
  const auto at = [&](int p) { return static_cast<std::size_t>(first_phys + p); };
  if (diffusion) {
    const double log_d_ref = std::log(theta[at(kD0)]) + theta[at(kAlpha)] * lt;
    s[at(kD0)] = log_d_ref;
    s[at(kDoff)] = std::max(theta[at(kDoff)] / std::exp(log_d_ref), kRatioLower + 1e-3);
  }
  if (shear) s[at(kGamma)] = std::log(theta[at(kGamma)]) + theta[at(kBeta)] * lt;
  return s;
}

void Reparameterization::PullBack(std::span<const double> theta, std::span<double> g) const {
  const double lt = std::log(t_ref);
  const auto at = [&](int p) { return static_cast<std::size_t>(first_phys + p); };
  if (diffusion) {
    // D0 = D_ref·t_ref^(−α), D_offset = D_ref·ratio.
    const double d0 = theta[at(kD0)], doff = theta[at(kDoff)];
    const double d_ref = d0 * std::exp(theta[at(kAlpha)] * lt);
    const double g_d0 = g[at(kD0)], g_doff = g[at(kDoff)];
    g[at(kD0)] = g_d0 * d0 + g_doff * doff;
    g[at(kDoff)] = g_doff * d_ref;
    g[at(kAlpha)] += -g_d0 * d0 * lt;
  }
  if (shear) {
    const double gamma = theta[at(kGamma)];
    const double g_gamma = g[at(kGamma)];
    g[at(kGamma)] = g_gamma * gamma;
    g[at(kBeta)] += -g_gamma * gamma * lt;
  }
}

std::vector<std::string> Reparameterization::SiteNames(std::vector<std::string> names) const {
  const auto at = [&](int p) { return static_cast<std::size_t>(first_phys + p); };
  if (diffusion) {
    names[at(kD0)] = "log_D_ref";
    names[at(kDoff)] = "D_offset_ratio";
  }
  if (shear) names[at(kGamma)] = "log_gamma_ref";
  return names;
}

ReparamPriors ReparamPriorsFromEstimate(double t_ref, std::span<const double> p,
                                        std::span<const double> s) {
  ReparamPriors r;
  if (p.size() < 3 || s.size() < 3) return r;
  const auto known = [&](int i) { return std::isfinite(s[i]) && s[i] > 0.0; };
  const double lt = std::log(t_ref);
  const auto sq = [](double x) { return std::isfinite(x) ? x * x : 0.0; };
  const double d_ref = std::max(std::abs(p[kD0]) * std::exp(p[kAlpha] * lt), 1e-10);
  const double var_ld =
      std::max(sq(s[kD0] / std::max(std::abs(p[kD0]), 1e-300)) + sq(lt * s[kAlpha]), 1e-20);
  if (known(kD0) && known(kAlpha) && known(kDoff)) {
    r.log_d_ref = {std::log(d_ref), std::sqrt(var_ld)};
    const double ratio = p[kDoff] / d_ref;
    r.ratio = {ratio, std::sqrt(std::max(sq(s[kDoff] / d_ref) + ratio * ratio * var_ld, 1e-20))};
  }
  if (p.size() >= 5 && s.size() >= 5 && known(kGamma) && known(kBeta)) {
    const double g_ref = std::max(std::abs(p[kGamma]) * std::exp(p[kBeta] * lt), 1e-20);
    const double var_lg =
        std::max(sq(s[kGamma] / std::max(std::abs(p[kGamma]), 1e-300)) + sq(lt * s[kBeta]), 1e-20);
    r.log_gamma_ref = {std::log(g_ref), std::sqrt(var_lg)};
  }
  return r;
}

void ReplaceSitePriors(const Reparameterization& r, const ReparamPriors& p, double temper,
                       std::vector<Prior>& priors, std::vector<double>& lower,
                       std::vector<double>& upper) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double root_k = std::sqrt(std::max(temper, 1.0));
  const auto set = [&](int phys, Prior prior, double lo) {
    const auto i = static_cast<std::size_t>(r.first_phys + phys);
    priors[i] = prior;
    lower[i] = lo;
    upper[i] = kInf;
  };
  if (r.diffusion) {
    set(kD0, {PriorType::kNormal, p.log_d_ref.mu, std::min(p.log_d_ref.sd * root_k, 10.0)}, -kInf);
    set(kDoff,
        {PriorType::kTruncatedNormal, p.ratio.mu, std::min(p.ratio.sd * root_k, 2.0),
         Reparameterization::kRatioLower, kInf},
        Reparameterization::kRatioLower);
  }
  if (r.shear) {
    set(kGamma,
        {PriorType::kNormal, p.log_gamma_ref.mu, std::min(p.log_gamma_ref.sd * root_k, 10.0)},
        -kInf);
  }
}

std::vector<double> UnconstrainedToTheta(std::span<const double> u,
                                         const std::vector<double>& lower,
                                         const std::vector<double>& upper,
                                         const Reparameterization& r, const SamplingGeometry& g) {
  std::vector<double> sites(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    sites[i] = BoundedTransform(lower[i], upper[i]).ToConstrained(u[i]);
  }
  if (r.active()) sites = r.ToTheta(sites);
  return g.active() ? g.ToTheta(sites) : sites;
}

}  // namespace homodyne::cmc
