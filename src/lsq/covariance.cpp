#include "lsq/covariance.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.h"

namespace homodyne::lsq {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

CovarianceResult CovarianceFromNormalEquations(const std::vector<double>& jtj, int n, double chi2,
                                               std::int64_t n_data, int n_params_for_dof) {
  HOMODYNE_CHECK(n > 0 && jtj.size() == static_cast<std::size_t>(n) * static_cast<std::size_t>(n),
                 "JᵀJ has the wrong size");
  CovarianceResult out;
  const std::int64_t dof = n_data - n_params_for_dof;
  out.reduced_chi2 =
      dof > 0 ? chi2 / static_cast<double>(dof) : std::numeric_limits<double>::quiet_NaN();

  // The pseudo-inverse is taken of the equilibrated matrix S·JᵀJ·S, S = diag(JᵀJ)^(-1/2)
  // (a correlation-like matrix, invariant to the units of the parameters), then mapped back:
  // (JᵀJ)⁺ = S·(S·JᵀJ·S)⁺·S. On JᵀJ itself the parameters' scales (D0 ~ 1e4 next to
  // γ̇0 ~ 1e-3) spread the eigenvalues over more than the 16 digits of the eigensolver, so
  // the small ones — those of correlated directions such as D0 with D_offset — were rounding
  // noise, and so were the uncertainties along them (a change of the last bits of JᵀJ moved
  // σ(D0) from 242 to 16 in a laminar test fit).
  const Eigen::Map<const RowMatrix> raw(jtj.data(), n, n);
  Eigen::VectorXd scale(n);
  for (int i = 0; i < n; ++i) {
    const double d = raw(i, i);
    scale(i) = d > 0.0 && std::isfinite(d) ? 1.0 / std::sqrt(d) : 1.0;
  }
  const Eigen::MatrixXd a = scale.asDiagonal() *
                            Eigen::MatrixXd(raw.selfadjointView<Eigen::Upper>()) *
                            scale.asDiagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
  const Eigen::VectorXd lambda = eig.eigenvalues();
  const double lambda_max = std::max(lambda.maxCoeff(), 0.0);
  // Singular values of (the equilibrated) J are √λ; drop s < eps·max(M, N)·s_max.
  const double cut = std::numeric_limits<double>::epsilon() *
                     static_cast<double>(std::max<std::int64_t>(n_data, n));
  const double lambda_cut = cut * cut * lambda_max;
  Eigen::VectorXd inv = Eigen::VectorXd::Zero(n);
  double lambda_min_kept = lambda_max;
  for (int i = 0; i < n; ++i) {
    if (lambda(i) > lambda_cut && lambda(i) > 0.0) {
      inv(i) = 1.0 / lambda(i);
      lambda_min_kept = std::min(lambda_min_kept, lambda(i));
    } else {
      ++out.dropped_directions;
    }
  }
  out.condition_number =
      lambda_min_kept > 0 ? lambda_max / lambda_min_kept : std::numeric_limits<double>::infinity();
  const Eigen::MatrixXd pinv = scale.asDiagonal() * eig.eigenvectors() * inv.asDiagonal() *
                               eig.eigenvectors().transpose() * scale.asDiagonal();
  out.equilibrated_eigenvalues.assign(lambda.data(), lambda.data() + n);
  out.equilibrated_eigenvectors.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  Eigen::Map<RowMatrix>(out.equilibrated_eigenvectors.data(), n, n) = eig.eigenvectors();
  const double s2 = std::isfinite(out.reduced_chi2) ? out.reduced_chi2 : 0.0;
  out.covariance.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  Eigen::Map<RowMatrix>(out.covariance.data(), n, n) = pinv * s2;
  for (int i = 0; i < n; ++i) {
    out.uncertainties.push_back(
        std::sqrt(std::max(out.covariance[static_cast<std::size_t>(i * n + i)], 0.0)));
  }
  return out;
}

std::vector<double> TransformCovariance(const std::vector<double>& cov, int n,
                                        const std::vector<double>& b, int m) {
  HOMODYNE_CHECK(
      cov.size() == static_cast<std::size_t>(n * n) && b.size() == static_cast<std::size_t>(m * n),
      "covariance transform: sizes differ");
  const Eigen::Map<const RowMatrix> c(cov.data(), n, n);
  const Eigen::Map<const RowMatrix> bm(b.data(), m, n);
  std::vector<double> out(static_cast<std::size_t>(m * m));
  Eigen::Map<RowMatrix>(out.data(), m, m) = bm * c * bm.transpose();
  return out;
}

}  // namespace homodyne::lsq
