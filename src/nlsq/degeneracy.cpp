#include "nlsq/degeneracy.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace homodyne::nlsq {

DegeneracyDiagnostics DiagnoseDegeneracy(const std::vector<std::string>& names,
                                         const std::vector<double>& jtj,
                                         const std::vector<double>& covariance,
                                         const std::vector<bool>& at_lower,
                                         const std::vector<bool>& at_upper) {
  const auto n = names.size();
  HOMODYNE_CHECK(jtj.size() == n * n && covariance.size() == n * n && at_lower.size() == n &&
                     at_upper.size() == n,
                 "degeneracy diagnostics: sizes differ");
  DegeneracyDiagnostics d;
  d.names = names;

  // Correlations from the covariance; a parameter without variance (fixed by the layout or
  // a dropped direction of zero width) correlates with nothing.
  d.correlation.assign(n * n, std::numeric_limits<double>::quiet_NaN());
  // From the upper triangle, mirrored: the matrix is symmetric to the bit.
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i; j < n; ++j) {
      const double vi = covariance[i * n + i], vj = covariance[j * n + j];
      if (vi > 0.0 && vj > 0.0 && std::isfinite(vi) && std::isfinite(vj)) {
        const double rho = std::clamp(covariance[i * n + j] / std::sqrt(vi * vj), -1.0, 1.0);
        d.correlation[i * n + j] = d.correlation[j * n + i] = rho;
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double rho = d.correlation[i * n + j];
      if (std::isfinite(rho) && std::abs(rho) > kCorrelationWarning) {
        d.correlated.push_back({names[i], names[j], rho});
      }
    }
    if (at_lower[i]) d.at_bound.push_back(names[i] + " (lower bound)");
    if (at_upper[i]) d.at_bound.push_back(names[i] + " (upper bound)");
  }
  std::stable_sort(d.correlated.begin(), d.correlated.end(), [](const auto& a, const auto& b) {
    return std::abs(a.correlation) > std::abs(b.correlation);
  });
  for (const CorrelatedPair& p : d.correlated) {
    d.warnings.push_back(fmt::format(
        "{} and {} are nearly degenerate (correlation {:+.4f}): the data constrain a combination "
        "of the two much better than either one",
        p.first, p.second, p.correlation));
  }

  // Eigen-directions of the equilibrated JᵀJ (unit diagonal, so the parameters' units do not
  // weigh in), as the covariance takes its pseudo-inverse.
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto m = static_cast<Eigen::Index>(n);
  const Eigen::Map<const RowMatrix> raw(jtj.data(), m, m);
  Eigen::VectorXd scale(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const double v = raw(i, i);
    scale(i) = v > 0.0 && std::isfinite(v) ? 1.0 / std::sqrt(v) : 0.0;
  }
  const Eigen::MatrixXd a = scale.asDiagonal() *
                            Eigen::MatrixXd(raw.selfadjointView<Eigen::Upper>()) *
                            scale.asDiagonal();
  if (!a.allFinite() || n == 0) return d;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
  const double lambda_max = eig.eigenvalues().maxCoeff();
  if (!(lambda_max > 0.0)) return d;
  for (Eigen::Index k = 0; k < std::min<Eigen::Index>(3, m); ++k) {  // ascending eigenvalues
    WeakDirection w;
    w.relative_eigenvalue = std::max(eig.eigenvalues()(k), 0.0) / lambda_max;
    const Eigen::VectorXd v = eig.eigenvectors().col(k);
    const Eigen::Index largest = [&] {
      Eigen::Index index = 0;
      v.cwiseAbs().maxCoeff(&index);
      return index;
    }();
    const double sign = v(largest) < 0.0 ? -1.0 : 1.0;  // the largest component positive
    for (Eigen::Index i = 0; i < m; ++i) {
      if (std::abs(v(i)) >= 0.2)
        w.components.emplace_back(names[static_cast<std::size_t>(i)], sign * v(i));
    }
    std::stable_sort(w.components.begin(), w.components.end(), [](const auto& x, const auto& y) {
      return std::abs(x.second) > std::abs(y.second);
    });
    if (w.relative_eigenvalue < kWeakDirectionWarning) {
      std::string span;
      for (const auto& [name, c] : w.components) {
        span +=
            fmt::format("{}{:.2f}·{}", span.empty() ? (c < 0 ? "−" : "") : (c < 0 ? " − " : " + "),
                        std::abs(c), name);
      }
      d.warnings.push_back(fmt::format(
          "the data barely constrain the direction {} (eigenvalue {:.2g} of the largest, in "
          "units of each parameter's scale)",
          span, w.relative_eigenvalue));
    }
    d.weakest.push_back(std::move(w));
  }
  return d;
}

}  // namespace homodyne::nlsq
