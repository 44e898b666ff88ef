// Parameter covariance and uncertainties from the Gauss–Newton normal equations.
//
// Cov = (JᵀJ)⁺ · s²,  s² = χ² / (n_data − n_params)  (the reduced χ²),
// with (JᵀJ)⁺ = S·(S·JᵀJ·S)⁺·S, S = diag(JᵀJ)^(-1/2): the pseudo-inverse of the equilibrated
// (unit-free) matrix, which drops directions whose singular value of the equilibrated J is
// below eps·max(n_data, n_params)·s_max (the rule numpy/SciPy-based fits use), so a
// degenerate direction gives a large but finite uncertainty instead of Inf/NaN.
#pragma once

#include <cstdint>
#include <vector>

namespace homodyne::lsq {

struct CovarianceResult {
  std::vector<double> covariance;     // n×n row-major
  std::vector<double> uncertainties;  // √max(diag, 0)
  double reduced_chi2 = 0.0;          // s²
  double condition_number = 0.0;      // of S·JᵀJ·S (λ_max/λ_min over kept directions)
  int dropped_directions = 0;         // directions removed by the pseudo-inverse
  // The eigensystem of the equilibrated S·JᵀJ·S the pseudo-inverse was taken of (for the
  // degeneracy diagnostics): eigenvalues ascending, eigenvector k in column k (n×n row-major).
  std::vector<double> equilibrated_eigenvalues;
  std::vector<double> equilibrated_eigenvectors;
};

CovarianceResult CovarianceFromNormalEquations(const std::vector<double>& jtj, int n, double chi2,
                                               std::int64_t n_data, int n_params_for_dof);

// Cov_out = B · Cov · Bᵀ for a linear map B (m×n row-major): expands the covariance of
// optimised parameters to derived ones (e.g. per-angle scaling from averaged/Fourier).
std::vector<double> TransformCovariance(const std::vector<double>& cov, int n,
                                        const std::vector<double>& b, int m);

}  // namespace homodyne::lsq
