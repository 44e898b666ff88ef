#include "nlsq/degeneracy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::nlsq {

std::string DescribeDirection(const WeakDirection& w) {
  std::string span;
  for (const auto& [name, c] : w.components) {
    span += fmt::format("{}{:.2f}·{}", span.empty() ? (c < 0 ? "−" : "") : (c < 0 ? " − " : " + "),
                        std::abs(c), name);
  }
  return span;
}

std::string DescribeEquivalentMinimum(const EquivalentMinimum& m) {
  return fmt::format(
      "{} {:.6g} fits as well as the answer's {:.6g} ({}: objective {:.12g}{} against {:.12g}, "
      "{:.6g} half-way between them): two separate minima the data do not choose between; the "
      "reported {} and its σ are those of one of them",
      m.parameter, m.value, m.answer_value, m.found_by, m.objective,
      m.on_rows ? " on the rows" : "", m.answer_objective, m.barrier_objective, m.parameter);
}

DegeneracyDiagnostics DiagnoseDegeneracy(const std::vector<std::string>& names,
                                         const lsq::CovarianceResult& cov,
                                         const std::vector<bool>& at_lower,
                                         const std::vector<bool>& at_upper) {
  const auto n = names.size();
  const std::vector<double>& covariance = cov.covariance;
  HOMODYNE_CHECK(covariance.size() == n * n && at_lower.size() == n && at_upper.size() == n,
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

  // The eigen-directions of the equilibrated JᵀJ (unit diagonal, so the parameters' units do
  // not weigh in) that the covariance took its pseudo-inverse of.
  const std::vector<double>& lambda = cov.equilibrated_eigenvalues;
  const std::vector<double>& vectors = cov.equilibrated_eigenvectors;
  if (lambda.size() != n || vectors.size() != n * n) return d;
  const bool finite =
      std::all_of(lambda.begin(), lambda.end(), [](double x) { return std::isfinite(x); }) &&
      std::all_of(vectors.begin(), vectors.end(), [](double x) { return std::isfinite(x); });
  const double lambda_max = n > 0 ? *std::max_element(lambda.begin(), lambda.end()) : 0.0;
  if (!finite || !(lambda_max > 0.0)) return d;
  for (std::size_t k = 0; k < std::min<std::size_t>(3, n); ++k) {  // ascending eigenvalues
    WeakDirection w;
    w.relative_eigenvalue = std::max(lambda[k], 0.0) / lambda_max;
    const auto component = [&](std::size_t i) { return vectors[i * n + k]; };
    std::size_t largest = 0;
    for (std::size_t i = 1; i < n; ++i) {
      if (std::abs(component(i)) > std::abs(component(largest))) largest = i;
    }
    const double sign = component(largest) < 0.0 ? -1.0 : 1.0;  // the largest component positive
    for (std::size_t i = 0; i < n; ++i) {
      if (std::abs(component(i)) >= 0.2) w.components.emplace_back(names[i], sign * component(i));
    }
    std::stable_sort(w.components.begin(), w.components.end(), [](const auto& x, const auto& y) {
      return std::abs(x.second) > std::abs(y.second);
    });
    if (w.relative_eigenvalue < kWeakDirectionWarning) {
      d.warnings.push_back(fmt::format(
          "the data barely constrain the direction {} (eigenvalue {:.2g} of the largest, in "
          "units of each parameter's scale)",
          DescribeDirection(w), w.relative_eigenvalue));
    }
    d.weakest.push_back(std::move(w));
  }
  return d;
}

}  // namespace homodyne::nlsq
