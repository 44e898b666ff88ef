// The first-order optimality test that decides whether a bounded least-squares answer may be
// called "converged", whichever local method produced it.
//
// Both measures are invariant to the units of the parameters and to the scale of χ²:
//   cosine     max over free parameters i of |g_i| / sqrt(H_ii · χ²): the cosine of the angle
//              between the residual vector and the Jacobian column of parameter i (g = Jᵀr,
//              H = JᵀJ); zero at a stationary point.
//   decrement  gᵀ H⁺ g / χ² over the free parameters: the share of the residual that lies in
//              the span of the Jacobian's columns, i.e. the relative χ² decrease the
//              Gauss–Newton model still promises. Directions whose equilibrated eigenvalue is
//              below 1e-13 of the largest are numerically null and left out.
// A parameter at a bound whose gradient points out of the box is not free: the bound holds it
// (Karush–Kuhn–Tucker). The answer is optimal when cosine ≤ gtol or decrement ≤ ftol, and
// the model responds to every free parameter: on a plateau of the model (e.g. a correlation
// that has decayed to its baseline everywhere, so D0 moves nothing) the gradient vanishes
// without a minimum. A free parameter is insensitive when moving it across its whole bound
// range changes the linearised residual by less than kInsensitive of the residual's norm:
// sqrt(H_ii)·(upper_i − lower_i) < kInsensitive·sqrt(χ²).
#pragma once

#include <vector>

#include "nlsq/least_squares_problem.h"

namespace homodyne::nlsq {

inline constexpr double kInsensitive = 1e-3;

struct OptimalityMeasure {
  double cosine = 0.0;
  double decrement = 0.0;
  int free_parameters = 0;
  std::vector<int> insensitive;  // free parameters the model does not respond to
};

// Which parameters the model does not respond to at the point of `eq` (see kInsensitive),
// or, with `factor` > 1, responds to less than `factor` times that threshold.
std::vector<bool> InsensitiveParameters(const NormalEquations& eq, const std::vector<double>& lower,
                                        const std::vector<double>& upper, double factor = 1.0);

// Which parameters are free at x: not held at a bound by the gradient g.
std::vector<bool> FreeParameters(const std::vector<double>& x, const std::vector<double>& g,
                                 const std::vector<double>& lower,
                                 const std::vector<double>& upper);

OptimalityMeasure MeasureOptimality(const std::vector<double>& x, const NormalEquations& eq,
                                    const std::vector<double>& lower,
                                    const std::vector<double>& upper);

inline bool IsOptimal(const OptimalityMeasure& m, double ftol, double gtol) {
  return m.insensitive.empty() && (m.cosine <= gtol || m.decrement <= ftol);
}

}  // namespace homodyne::nlsq
