// The interface between the bounded least-squares solver and whatever computes
// residuals (the XPCS kernel over a rank's data, or a test problem).
//
// With residuals r(x) (weighted, r_p = √w_p (y_p − m_p(x))/σ_p) and their Jacobian
// J = ∂r/∂x, a problem reports the *reduced* quantities over all ranks:
//   chi2 = Σ r²,   gradient = Jᵀr (= ½∇chi2),   hessian = JᵀJ (Gauss–Newton).
// Evaluate is collective over the problem's communicator: every rank passes the same x
// and must receive bit-identical results (use ReproducibleTileSum), because every rank
// runs the same replicated solver and must take the same decisions.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/errors.h"

namespace homodyne::lsq {

struct NormalEquations {
  double chi2 = 0.0;
  std::vector<double> gradient;  // Jᵀr, length n
  std::vector<double> hessian;   // JᵀJ, n×n row-major, symmetric
  std::int64_t n_points = 0;     // residuals that entered the sums
};

// χ², Jᵀr and JᵀJ all finite (NaN/Inf come from extreme parameters or data values).
inline bool IsFinite(const NormalEquations& eq) {
  bool finite = std::isfinite(eq.chi2);
  for (double g : eq.gradient) finite = finite && std::isfinite(g);
  for (double h : eq.hessian) finite = finite && std::isfinite(h);
  return finite;
}

class LeastSquaresProblem {
 public:
  virtual ~LeastSquaresProblem() = default;
  virtual int num_parameters() const = 0;
  // Collective. Fills chi2 always; gradient and hessian when with_derivatives.
  virtual void Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) = 0;
  // Collective. χ² of every point of `xs` (chi2 resized to xs.size()), each with the bits
  // Evaluate(x, false) gives it. The default evaluates them one by one; a distributed
  // problem overrides it with one pass over its data and one reduction for the batch.
  virtual void EvaluateChi2Batch(std::span<const std::vector<double>> xs,
                                 std::vector<double>& chi2) {
    chi2.resize(xs.size());
    NormalEquations eq;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      Evaluate(xs[i], false, eq);
      chi2[i] = eq.chi2;
    }
  }
  // Collective. χ² of a model that is identically zero (Σ of the squared weighted data), the
  // scale against which a χ² at floating-point round-off is recognised as an exact fit; NaN
  // when the problem cannot tell. `x` is any valid point (for the parts of the model that
  // must be evaluated to vanish).
  virtual double ZeroModelChi2(std::span<const double> x) {
    (void)x;
    return std::nan("");
  }
  // From now on each pass asks `stop` (thread-safe; empty: never) between units of work
  // and, when any rank's says true, ends early on every rank with PassInterrupted instead
  // of a result. For callers that can save their state at the last completed step.
  virtual void SetStopCheck(std::function<bool()> stop) { (void)stop; }
  // Told of every step a solver accepts (not collective; every rank's solver accepts the
  // same steps): for the passes per accepted step of the run report.
  virtual void StepAccepted() {}
};

// Thrown on every rank (after they agreed on it) by a pass a stop request cut short. The
// caller checkpoints the state before the pass and ends with exit 75; it is not itself
// the promised checkpoint, so nothing above the caller may treat it as one.
class PassInterrupted : public Error {
 public:
  PassInterrupted()
      : Error(MarkAgreed(Error(ErrorKind::kCheckpointed, "a stop request ended a data pass"))) {}
};

}  // namespace homodyne::lsq
