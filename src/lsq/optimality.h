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
// (Karush–Kuhn–Tucker). The answer is optimal when the model responds to every free
// parameter and either
//   cosine ≤ gtol, or
//   decrement ≤ ftol while cosine ≤ kDecrementMaxCosine (1e-4).
// The decrement is the quadratic model's promise, and on a slow stretch (a long, gently
// curved way down, or the edge of a plateau) the model promises little at every step of the
// way: a two-component fit with the template's ftol = gtol = 1e-6 passed it at 52 times the
// minimum's χ² with a cosine of 4.6e-4. The decrement bounds the cosine (decrement ≥
// cosine²), so with the default ftol = 1e-8 the cap never binds; it keeps a looser ftol from
// ending a solve where the gradient is larger than the default would let pass. The cap is not
// tied to gtol: at a true minimum of a two-component fit 1000 further steps left the cosine
// at 1.2e-6 (117 times the default gtol) with the decrement at 1.4e-12.
// On a plateau of the model (e.g. a correlation that has decayed to its baseline
// everywhere, so D0 moves nothing) the gradient vanishes without a minimum. A free parameter
// is insensitive when moving it across its whole bound range changes the linearised
// residual by less than kInsensitive of the residual's norm:
// sqrt(H_ii)·(upper_i − lower_i) < kInsensitive·sqrt(χ²).
#pragma once

#include <vector>

#include "lsq/least_squares_problem.h"

namespace homodyne::lsq {

inline constexpr double kInsensitive = 1e-3;
// The largest cosine beside which the decrement test may end a solve: sqrt of the default
// ftol 1e-8, the largest cosine that default admits.
inline constexpr double kDecrementMaxCosine = 1e-4;

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

// The decrement test, with the cosine at most kDecrementMaxCosine (see above).
inline bool DecrementHolds(const OptimalityMeasure& m, double ftol) {
  return m.decrement <= ftol && m.cosine <= kDecrementMaxCosine;
}

inline bool IsOptimal(const OptimalityMeasure& m, double ftol, double gtol) {
  return m.insensitive.empty() && (m.cosine <= gtol || DecrementHolds(m, ftol));
}

}  // namespace homodyne::lsq
