// What the data leave undetermined at a fit's answer (degeneracy diagnostics): pairs of
// parameters whose estimates are almost fully correlated, parameters at a bound, and the
// directions of parameter space the data constrain least. Homodyne's anti-degeneracy
// layers reshape the problem; these say, for any fit, where it is still degenerate.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lsq/covariance.h"

namespace homodyne::nlsq {

// Pairs with |correlation| above this are named in a warning.
inline constexpr double kCorrelationWarning = 0.99;
// A direction whose eigenvalue of the equilibrated JᵀJ, relative to the largest, lies below
// this is named in a warning: the data then determine that combination of parameters
// 1e3 times less well than the best-determined one (in units of each parameter's own scale).
inline constexpr double kWeakDirectionWarning = 1e-6;

struct CorrelatedPair {
  std::string first, second;
  double correlation = 0.0;
};

struct WeakDirection {
  double relative_eigenvalue = 0.0;  // λ/λ_max of the equilibrated JᵀJ (S·JᵀJ·S, unit diagonal)
  // The parameters that span it: its unit eigenvector's components of magnitude ≥ 0.2, the
  // largest first (in the equilibrated coordinates, so units do not weigh in).
  std::vector<std::pair<std::string, double>> components;
};

// A second minimum as good as the answer's, separate from it: a restart of the pipeline
// ended there at the answer's objective (to the pipeline's same-minimum tolerance) with the
// parameter elsewhere, and the objective half-way between the two is higher (a barrier).
// E.g. phi0 with two angles φ1, φ2: the data fix γ̇·|cos(φ1 − φ0)| and γ̇·|cos(φ2 − φ0)|,
// which two values of phi0 reproduce (phi0 and −phi0 for 0° and 90°). The answer's σ
// describes its own minimum only.
struct EquivalentMinimum {
  std::string parameter;      // the parameter the check moved ("phi0")
  double answer_value = 0.0;  // its value at the answer
  double value = 0.0;         // its value at the other minimum
  double answer_objective = 0.0;
  double objective = 0.0;          // the other minimum's objective
  double barrier_objective = 0.0;  // half-way between the two (every parameter averaged)
  bool on_rows = false;            // found by the screen on rows: objectives on the rows only
  std::string found_by;            // "the phi0 check's restart from phi0 = -7.5"
};
std::string DescribeEquivalentMinimum(const EquivalentMinimum& m);

struct DegeneracyDiagnostics {
  std::vector<std::string> names;          // the fitted (optimiser) parameters
  std::vector<double> correlation;         // names² row-major, from the covariance
  std::vector<CorrelatedPair> correlated;  // |ρ| > kCorrelationWarning, the largest first
  std::vector<std::string> at_bound;       // "D0 (upper bound)", …
  std::vector<WeakDirection> weakest;      // the (up to) 3 smallest eigenvalues, smallest first
  std::vector<EquivalentMinimum> equivalent_minima;  // the pipeline's (global/fit_pipeline)
  // A line for each correlated pair, weak direction and equivalent minimum.
  std::vector<std::string> warnings;
};

// "0.74·D_offset − 0.67·D0": the direction's components, the largest first.
std::string DescribeDirection(const WeakDirection& w);

// `cov` is lsq::CovarianceFromNormalEquations of JᵀJ at the answer, in the order of `names`
// (its covariance and its equilibrated eigensystem); at_lower/at_upper per parameter.
DegeneracyDiagnostics DiagnoseDegeneracy(const std::vector<std::string>& names,
                                         const lsq::CovarianceResult& cov,
                                         const std::vector<bool>& at_lower,
                                         const std::vector<bool>& at_upper);

}  // namespace homodyne::nlsq
