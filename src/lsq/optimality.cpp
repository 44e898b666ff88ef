#include "lsq/optimality.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace homodyne::lsq {

std::vector<bool> FreeParameters(const std::vector<double>& x, const std::vector<double>& g,
                                 const std::vector<double>& lower,
                                 const std::vector<double>& upper) {
  std::vector<bool> free(x.size(), true);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // ∇(½χ²) = g: a descent step −g would leave the box.
    if ((x[i] <= lower[i] && g[i] > 0.0) || (x[i] >= upper[i] && g[i] < 0.0)) free[i] = false;
  }
  return free;
}

std::vector<bool> InsensitiveParameters(const NormalEquations& eq, const std::vector<double>& lower,
                                        const std::vector<double>& upper, double factor) {
  const std::size_t n = eq.gradient.size();
  std::vector<bool> out(n, false);
  if (!(eq.chi2 > 0.0)) return out;
  for (std::size_t i = 0; i < n; ++i) {
    const double hii = std::max(eq.hessian[i * n + i], 0.0);
    out[i] =
        !(std::sqrt(hii) * (upper[i] - lower[i]) >= factor * kInsensitive * std::sqrt(eq.chi2));
  }
  return out;
}

OptimalityMeasure MeasureOptimality(const std::vector<double>& x, const NormalEquations& eq,
                                    const std::vector<double>& lower,
                                    const std::vector<double>& upper) {
  OptimalityMeasure m;
  const std::size_t n = x.size();
  const std::vector<bool> free = FreeParameters(x, eq.gradient, lower, upper);
  // Free parameters that move the model at all (a zero Jacobian column has g_i = 0 too).
  std::vector<std::size_t> active;
  const std::vector<bool> insensitive = InsensitiveParameters(eq, lower, upper);
  for (std::size_t i = 0; i < n; ++i) {
    if (!free[i]) continue;
    if (insensitive[i]) m.insensitive.push_back(static_cast<int>(i));
    if (eq.hessian[i * n + i] > 0.0) active.push_back(i);
  }
  m.free_parameters = static_cast<int>(active.size());
  if (!(eq.chi2 > 0.0) || active.empty()) return m;  // exact fit, or nothing free to move

  const auto k = static_cast<Eigen::Index>(active.size());
  Eigen::VectorXd gh(k);
  Eigen::MatrixXd hh(k, k);
  for (Eigen::Index a = 0; a < k; ++a) {
    const std::size_t i = active[static_cast<std::size_t>(a)];
    const double di = std::sqrt(eq.hessian[i * n + i]);
    gh(a) = eq.gradient[i] / di;
    m.cosine = std::max(m.cosine, std::abs(gh(a)) / std::sqrt(eq.chi2));
    for (Eigen::Index b = 0; b < k; ++b) {
      const std::size_t j = active[static_cast<std::size_t>(b)];
      hh(a, b) = eq.hessian[i * n + j] / (di * std::sqrt(eq.hessian[j * n + j]));
    }
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(hh);
  const Eigen::VectorXd lambda = eig.eigenvalues();
  const Eigen::VectorXd proj = eig.eigenvectors().transpose() * gh;
  const double cut = 1e-13 * std::max(lambda.maxCoeff(), 0.0);
  double dec = 0.0;
  for (Eigen::Index a = 0; a < k; ++a) {
    if (lambda(a) > cut && lambda(a) > 0.0) dec += proj(a) * proj(a) / lambda(a);
  }
  m.decrement = dec / eq.chi2;
  return m;
}

}  // namespace homodyne::lsq
