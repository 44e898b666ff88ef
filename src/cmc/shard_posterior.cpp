#include "cmc/shard_posterior.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <Eigen/Dense>

#include "config/key_paths.h"
#include "core/errors.h"
#include "model/kernel_factory.h"

namespace homodyne::cmc {

struct ShardPosterior::Impl {
  explicit Impl(model::ParameterLayout l) : layout(std::move(l)) {}

  model::ParameterLayout layout;
  std::unique_ptr<model::PassKernel> kernel;  // σ_kernel = 1, weights 1: χ² = Σ (y − m)²
  std::vector<Prior> priors;
  std::vector<BoundedTransform> transforms;
  Prior sigma_prior;
  std::optional<double> known_sigma;
  Reparameterization reparam;
  SamplingGeometry geometry;
  std::vector<double> theta_lower, theta_upper;
  int n_theta = 0;

  Whitening whitening;                       // q = L⁻¹(u − centre); empty: q = u
  mutable std::vector<double> jtr_expanded;  // scratch (the density is not thread-safe)

  int dimension() const { return n_theta + (known_sigma ? 0 : 1); }
  // Priors are evaluated on θ where the geometry changes the coordinate, else on the site.
  bool PriorOnTheta(std::size_t i) const {
    return geometry.active() && geometry.Changes(static_cast<int>(i));
  }
  std::vector<double> SitesToTheta(const std::vector<double>& sites) const {
    std::vector<double> theta = reparam.active() ? reparam.ToTheta(sites) : sites;
    return geometry.active() ? geometry.ToTheta(theta) : theta;
  }
  std::vector<double> Sites(std::span<const double> u) const {
    std::vector<double> sites(static_cast<std::size_t>(n_theta));
    for (std::size_t i = 0; i < sites.size(); ++i) sites[i] = transforms[i].ToConstrained(u[i]);
    return sites;
  }
  // In place: g holds ∂f/∂θ at θ = SitesToTheta(Sites(u)) and becomes the chain rule's
  // ∂f/∂u (no prior, no log-Jacobian).
  void PullBackToU(std::span<const double> u, std::span<const double> theta,
                   std::span<double> g) const {
    if (geometry.active()) geometry.PullBack(theta, g);
    if (reparam.active()) reparam.PullBack(theta, g);
    for (std::size_t i = 0; i < static_cast<std::size_t>(n_theta); ++i) {
      g[i] *= transforms[i].DxDu(u[i]);
    }
  }
  std::vector<double> ToU(std::span<const double> theta, double sigma) const;
  Eigen::MatrixXd Hessian(std::span<const double> u) const;
  double DensityInU(std::span<const double> u, std::span<double> gradient) const;
};

namespace {
// x = L⁻¹·y for lower-triangular n × n (row-major) L.
std::vector<double> LowerSolve(const std::vector<double>& l, std::span<const double> y) {
  const std::size_t n = y.size();
  std::vector<double> x(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    double v = y[i];
    for (std::size_t j = 0; j < i; ++j) v -= l[i * n + j] * x[j];
    x[i] = v / l[i * n + i];
  }
  return x;
}
}  // namespace

std::vector<double> Whitening::ToU(std::span<const double> q) const {
  if (empty()) return {q.begin(), q.end()};
  const std::size_t n = q.size();
  std::vector<double> u(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) u[i] += chol[i * n + j] * q[j];
    u[i] += centre[i];
  }
  return u;
}

ShardPosterior::ShardPosterior(ShardPosteriorSetup setup, model::ParameterLayout layout)
    : impl_(std::make_unique<Impl>(std::move(layout))) {
  Impl& im = *impl_;
  im.n_theta = im.layout.num_optimised();
  if (static_cast<int>(setup.priors.size()) != im.n_theta ||
      static_cast<int>(setup.lower.size()) != im.n_theta ||
      static_cast<int>(setup.upper.size()) != im.n_theta) {
    ThrowBadInput(
        fmt::format("shard posterior: {} sampled parameters but {} priors and {}/{} bounds",
                    im.n_theta, setup.priors.size(), setup.lower.size(), setup.upper.size()));
  }
  const auto& names = im.layout.names();
  for (int i = 0; i < im.n_theta; ++i) {
    const auto k = static_cast<std::size_t>(i);
    setup.priors[k].Validate(names[k]);
    im.transforms.emplace_back(setup.lower[k], setup.upper[k]);
  }
  setup.sigma_prior.Validate("sigma");
  if (setup.known_sigma && !(*setup.known_sigma > 0.0 && std::isfinite(*setup.known_sigma))) {
    ThrowBadInput(fmt::format("the known noise sigma must be a finite number > 0, got {}",
                              *setup.known_sigma),
                  {}, config::keys::Key(config::keys::kCmc, "known_sigma"));
  }
  im.known_sigma = setup.known_sigma;
  im.priors = std::move(setup.priors);
  im.reparam = setup.reparam;
  im.geometry = setup.sampling_geometry;
  if (im.geometry.active()) {
    if (static_cast<int>(setup.theta_lower.size()) != im.n_theta ||
        static_cast<int>(setup.theta_upper.size()) != im.n_theta) {
      ThrowBadInput(
          fmt::format("shard posterior: the sampling geometry needs {} bounds of θ", im.n_theta));
    }
    const std::vector<std::string> reparam_sites = im.reparam.SiteNames(names);
    for (int i = 0; i < im.n_theta; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (im.geometry.Changes(i) && im.reparam.active() && reparam_sites[k] != names[k]) {
        ThrowBadInput(
            fmt::format("shard posterior: {} is changed by both the reparameterisation "
                        "and the sampling geometry",
                        names[k]));
      }
    }
    im.theta_lower = setup.theta_lower;
    im.theta_upper = setup.theta_upper;
  }
  im.sigma_prior = setup.sigma_prior;
  im.whitening = std::move(setup.whitening);
  if (!im.whitening.empty()) {
    const auto d = static_cast<std::size_t>(im.dimension());
    if (im.whitening.centre.size() != d || im.whitening.chol.size() != d * d) {
      ThrowBadInput(
          fmt::format("shard posterior: the whitening has {} centre values and {} "
                      "factor values for {} coordinates",
                      im.whitening.centre.size(), im.whitening.chol.size(), d));
    }
  }
  for (auto& tile : setup.tiles) {
    tile.weight = nullptr;
    tile.uniform_weight = 1.0;
  }
  model::KernelOptions ko;
  ko.threads = setup.threads;
  ko.worker_start = setup.worker_start;
  ko.sigma = 1.0;
  im.kernel = model::MakePassKernel(setup.mode, setup.geometry, setup.t, setup.phi_deg,
                                    std::move(setup.tiles), ko);
  im.jtr_expanded.assign(static_cast<std::size_t>(im.layout.num_expanded()), 0.0);
}

ShardPosterior::~ShardPosterior() = default;

const model::ParameterLayout& ShardPosterior::layout() const { return impl_->layout; }

int ShardPosterior::dimension() const { return impl_->dimension(); }

bool ShardPosterior::samples_sigma() const { return !impl_->known_sigma.has_value(); }

std::int64_t ShardPosterior::num_points() const { return impl_->kernel->num_points(); }

std::vector<double> ShardPosterior::Impl::ToU(std::span<const double> theta, double sigma) const {
  const auto th = theta.first(static_cast<std::size_t>(n_theta));
  std::vector<double> sites =
      reparam.active() ? reparam.ToSites(th) : std::vector<double>(th.begin(), th.end());
  if (geometry.active()) sites = geometry.ToSites(sites);
  std::vector<double> u;
  for (int i = 0; i < n_theta; ++i) {
    u.push_back(transforms[static_cast<std::size_t>(i)].ToUnconstrained(
        sites[static_cast<std::size_t>(i)]));
  }
  if (!known_sigma) u.push_back(std::log(sigma));
  return u;
}

std::vector<double> ShardPosterior::ToUnconstrained(std::span<const double> theta,
                                                    double sigma) const {
  std::vector<double> u = impl_->ToU(theta, sigma);
  if (impl_->whitening.empty()) return u;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] -= impl_->whitening.centre[i];
  return LowerSolve(impl_->whitening.chol, u);
}

std::vector<double> ShardPosterior::ToConstrained(std::span<const double> q) const {
  return ToConstrained(q, /*whitened=*/true);
}

std::vector<double> ShardPosterior::ToConstrained(std::span<const double> q, bool whitened) const {
  const std::vector<double> u =
      whitened ? impl_->whitening.ToU(q) : std::vector<double>(q.begin(), q.end());
  std::vector<double> out = impl_->SitesToTheta(impl_->Sites(u));
  out.push_back(impl_->known_sigma ? *impl_->known_sigma
                                   : std::exp(u[static_cast<std::size_t>(impl_->n_theta)]));
  return out;
}

double ShardPosterior::LogDensityGradient(std::span<const double> q,
                                          std::span<double> gradient) const {
  const Impl& im = *impl_;
  if (im.whitening.empty()) return im.DensityInU(q, gradient);
  // q = L⁻¹(u − centre): same density up to the constant log|det L|, ∂/∂q = Lᵀ·∂/∂u.
  const std::vector<double> u = im.whitening.ToU(q);
  std::vector<double> gu(u.size());
  const double lp = im.DensityInU(u, gu);
  const std::size_t n = u.size();
  for (std::size_t j = 0; j < n; ++j) {
    double v = 0.0;
    for (std::size_t i = j; i < n; ++i) v += im.whitening.chol[i * n + j] * gu[i];
    gradient[j] = v;
  }
  return lp;
}

double ShardPosterior::Impl::DensityInU(std::span<const double> q,
                                        std::span<double> gradient) const {
  const auto n = static_cast<std::size_t>(n_theta);
  const std::vector<double> sites = Sites(q);
  const std::vector<double> theta = SitesToTheta(sites);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  if (geometry.active() && !geometry.Inside(theta, theta_lower, theta_upper)) {
    return kNegInf;  // outside θ's box: the wall of the changed coordinates
  }
  const double log_sigma = known_sigma ? std::log(*known_sigma) : q[n];
  const double sigma = known_sigma ? *known_sigma : std::exp(log_sigma);
  if (!std::isfinite(sigma) || sigma <= 0.0) return kNegInf;

  // Likelihood: χ² = Σ (y − m)², Jᵀr = −Σ (y − m)·∂m/∂θ (J = ∂r/∂θ, r = y − m), from the
  // kernel's gradient-only pass; optimiser-space Jᵀr = Bᵀ·(expanded Jᵀr).
  const double chi2 = kernel->Gradient(layout.Expand(theta), jtr_expanded);
  const int n_expanded = layout.num_expanded();
  const double n_points = static_cast<double>(kernel->num_points());
  const double inv_s2 = 1.0 / (sigma * sigma);
  double lp = -0.5 * chi2 * inv_s2 - n_points * log_sigma;

  // ∂ log L / ∂θ, plus the priors evaluated on θ (where the geometry changes the
  // coordinate), then the chain rule to u; the priors on sites and the log-Jacobians.
  std::vector<double> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    double jtr = 0.0;
    for (int e = 0; e < n_expanded; ++e) {
      const double b = layout.B(e, static_cast<int>(i));
      if (b != 0.0) jtr += b * jtr_expanded[static_cast<std::size_t>(e)];
    }
    g[i] = -jtr * inv_s2;
  }
  if (geometry.active()) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!PriorOnTheta(i)) continue;
      lp += priors[i].LogDensity(theta[i]);
      g[i] += priors[i].DLogDensity(theta[i]);
    }
    lp += geometry.LogJacobian(sites);
    geometry.PullBack(theta, g);
    geometry.AddLogJacobianGradient(g);
  }
  if (reparam.active()) reparam.PullBack(theta, g);
  for (std::size_t i = 0; i < n; ++i) {
    double d = g[i];
    if (!PriorOnTheta(i)) {
      lp += priors[i].LogDensity(sites[i]);
      d += priors[i].DLogDensity(sites[i]);
    }
    lp += transforms[i].LogJacobian(q[i]);
    gradient[i] = d * transforms[i].DxDu(q[i]) + transforms[i].DLogJacobian(q[i]);
  }
  if (known_sigma) return lp;
  // σ = exp(q_σ): log-Jacobian q_σ.
  lp += sigma_prior.LogDensity(sigma) + log_sigma;
  const double dll_sigma = chi2 * inv_s2 / sigma - n_points / sigma;
  gradient[n] = (dll_sigma + sigma_prior.DLogDensity(sigma)) * sigma + 1.0;
  return lp;
}

// −∇² log π in u: the Gauss–Newton Hessian of the likelihood, Dᵀ·Bᵀ(JᵀJ)B·D/σ² (D = ∂θ/∂u),
// plus the priors' curvature (central difference of their derivative) where they are
// evaluated, plus 2N for log σ (the likelihood's curvature at χ² = Nσ²).
Eigen::MatrixXd ShardPosterior::Impl::Hessian(std::span<const double> u) const {
  const auto n = static_cast<std::size_t>(n_theta);
  const auto d = static_cast<std::size_t>(dimension());
  const auto idx = [](std::size_t i) { return static_cast<Eigen::Index>(i); };
  const std::vector<double> sites = Sites(u);
  const std::vector<double> th = SitesToTheta(sites);
  const double s = known_sigma ? *known_sigma : std::exp(u[n]);
  const model::NormalEquations ne = kernel->Accumulate(layout.Expand(th));
  const int ne_size = layout.num_expanded();
  Eigen::MatrixXd b(ne_size, idx(n));
  for (int a = 0; a < ne_size; ++a) {
    for (std::size_t i = 0; i < n; ++i) b(a, idx(i)) = layout.B(a, static_cast<int>(i));
  }
  Eigen::MatrixXd jtj(ne_size, ne_size);
  for (int a = 0; a < ne_size; ++a) {
    for (int c = 0; c < ne_size; ++c) jtj(a, c) = ne.JtJ(a, c);
  }
  Eigen::MatrixXd h_theta = b.transpose() * jtj * b / (s * s);
  std::vector<double> site_curvature(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const bool on_theta = PriorOnTheta(i);
    const double x = on_theta ? th[i] : sites[i];
    const double step = 1e-6 * std::max(std::abs(x), 1e-3);
    const double k =
        -(priors[i].DLogDensity(x + step) - priors[i].DLogDensity(x - step)) / (2.0 * step);
    if (!(std::isfinite(k) && k > 0.0)) continue;
    if (on_theta) {
      h_theta(idx(i), idx(i)) += k;
    } else {
      site_curvature[i] = k;
    }
  }
  // D row by row: the chain rule applied to the unit vectors of θ.
  Eigen::MatrixXd jac(idx(n), idx(n));
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<double> e(n, 0.0);
    e[r] = 1.0;
    PullBackToU(u, th, e);
    for (std::size_t c = 0; c < n; ++c) jac(idx(r), idx(c)) = e[c];
  }
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(idx(d), idx(d));
  h.topLeftCorner(idx(n), idx(n)) = jac.transpose() * h_theta * jac;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = transforms[i].DxDu(u[i]);
    h(idx(i), idx(i)) += site_curvature[i] * dx * dx;
  }
  if (d > n) h(idx(n), idx(n)) = 2.0 * static_cast<double>(kernel->num_points());
  return h;
}

ShardMode ShardPosterior::FindMode(std::span<const double> theta, double sigma,
                                   int max_iterations) const {
  const Impl& im = *impl_;
  ShardMode m;
  m.u = im.ToU(theta, sigma);
  std::vector<double> g(m.u.size()), g_try(m.u.size());
  double f = im.DensityInU(m.u, g);
  m.start_log_density = f;
  if (!im.known_sigma) {
    // σ from its conditional maximum at θ, σ̂² = χ²/N, where that is denser. The steps below
    // move log σ by at most kTrustRadius/√(2N) (the Hessian's 2N), so from a σ far off (the
    // caller's is the data's spread) they would end short of the mode, where the map is built
    // (docs/cmc.md, step 5b).
    const double n_points = static_cast<double>(im.kernel->num_points());
    const double s_hat = std::sqrt(im.kernel->Chi2(im.layout.Expand(theta)) / n_points);
    if (std::isfinite(s_hat) && s_hat > 0.0) {
      std::vector<double> u_hat = im.ToU(theta, s_hat), g_hat(u_hat.size());
      const double f_hat = im.DensityInU(u_hat, g_hat);
      if (std::isfinite(f_hat) && !(f_hat <= f)) {
        m.u = std::move(u_hat);
        g.swap(g_hat);
        f = f_hat;
      }
    }
  }
  if (!std::isfinite(f)) return m;
  // Levenberg–Marquardt on −log π with the Gauss–Newton Hessian.
  constexpr double kTrustRadius = 4.0;
  double lambda = 1e-3;
  const auto dim = static_cast<Eigen::Index>(m.u.size());
  for (int it = 0; it < max_iterations; ++it) {
    const Eigen::MatrixXd h = im.Hessian(m.u);
    Eigen::VectorXd grad(dim);
    for (Eigen::Index i = 0; i < dim; ++i) grad(i) = g[static_cast<std::size_t>(i)];
    bool stepped = false;
    while (lambda < 1e12) {
      Eigen::MatrixXd a = h;
      for (Eigen::Index i = 0; i < dim; ++i) a(i, i) += lambda * std::max(h(i, i), 1e-12);
      const Eigen::LLT<Eigen::MatrixXd> llt(a);
      if (llt.info() != Eigen::Success) {
        lambda *= 10.0;
        continue;
      }
      const Eigen::VectorXd step = llt.solve(grad);
      // A step longer than kTrustRadius posterior sds (in the metric of the Hessian at
      // this point) is shortened: the search must climb to the mode of the basin it
      // starts in. A long Gauss–Newton step can land in another basin of higher density
      // than the start but far lower than the start's own mode (the two-component model's
      // velocity aliases and label mirror; docs/cmc.md).
      if (step.dot(h * step) > kTrustRadius * kTrustRadius) {
        lambda *= 10.0;
        continue;
      }
      std::vector<double> u_try(m.u);
      for (Eigen::Index i = 0; i < dim; ++i) u_try[static_cast<std::size_t>(i)] += step(i);
      const double f_try = im.DensityInU(u_try, g_try);
      if (std::isfinite(f_try) && f_try > f) {
        const double gain = f_try - f;
        m.u = std::move(u_try);
        g.swap(g_try);
        f = f_try;
        lambda = std::max(lambda / 10.0, 1e-9);
        stepped = true;
        m.iterations = it + 1;
        if (gain < 1e-9 * (1.0 + std::abs(f))) m.converged = true;
        break;
      }
      lambda *= 10.0;
    }
    if (!stepped) {
      m.converged = true;  // no ascent direction left at this resolution
      break;
    }
    if (m.converged) break;
  }
  m.log_density = f;
  const std::vector<double> c = ToConstrained(m.u, /*whitened=*/false);
  m.theta.assign(c.begin(), c.end() - 1);
  m.sigma = c.back();
  return m;
}

Whitening ShardPosterior::LaplaceAt(std::span<const double> u) const {
  const auto d = static_cast<std::size_t>(impl_->dimension());
  Whitening w;
  w.centre.assign(u.begin(), u.end());
  const Eigen::MatrixXd h = impl_->Hessian(u);
  const Eigen::LLT<Eigen::MatrixXd> llt_h(h);
  if (llt_h.info() != Eigen::Success) return {};
  const Eigen::MatrixXd cov = llt_h.solve(Eigen::MatrixXd::Identity(h.rows(), h.cols()));
  const Eigen::LLT<Eigen::MatrixXd> llt(cov);
  if (llt.info() != Eigen::Success) return {};
  const Eigen::MatrixXd l = llt.matrixL();
  w.chol.assign(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      const double v = l(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      if (!std::isfinite(v)) return {};
      w.chol[i * d + j] = v;
    }
  }
  return w;
}

Whitening ShardPosterior::Laplace(std::span<const double> theta, double sigma) const {
  return LaplaceAt(impl_->ToU(theta, sigma));
}

}  // namespace homodyne::cmc
