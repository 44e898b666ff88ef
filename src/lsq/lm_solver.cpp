// The Levenberg–Marquardt engine of SolveBounded.
//
// Each iteration solves the damped, equilibrated normal equations
//     (D⁻¹ JᵀJ D⁻¹ + λ I) z = −D⁻¹ Jᵀr,   s = D⁻¹ z,
// over the free parameters (optimality.h), D_i the largest sqrt((JᵀJ)_ii) seen so far
// (Moré's scaling: invariant to the parameters' units). A step that would cross a bound
// stops there: that parameter is fixed at the bound and the system is solved again for the
// others. The step is accepted when χ² decreases by at least 1e-4 of what the quadratic
// model predicts; λ then shrinks by Nielsen's rule, else grows (×2, ×4, ×8, …), which turns the
// step toward a short scaled gradient step: a point that is not stationary always yields an
// accepted step eventually. When the step becomes negligible (xtol) before the optimality
// test holds — χ² can no longer be decreased in floating point — the damping is restarted
// from the best point (at most kMaxRecoveries times), and then the solve ends "stalled".
// A trial point where the model stops responding to a parameter it responded to (a plateau
// of the model: e.g. D(t) floored at every time, so D0, alpha and D_offset move nothing) is
// rejected like a χ² increase: from a plateau no local step leads back, and no minimum is
// verified there, so a shorter step is tried instead. Only a parameter the model responds to
// clearly at the current point (kPlateauMargin times the insensitivity threshold) can veto a
// step: at a point already at the plateau's edge every trial step, however short, tips some
// barely-felt parameter over the threshold, and the fit stalled there with the gradient
// pointing well downhill (two-component fits with a rate floored over most of the window).
//
// The trial point is evaluated with derivatives: most steps are accepted, so one data pass
// per iteration serves both the acceptance test and the next step.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "lsq/bounded_solver.h"

namespace homodyne::lsq::detail {
namespace {

constexpr double kInitialLambda = 0.1;
constexpr double kAcceptRatio = 1e-4;
constexpr double kMaxLambda = 1e16;
// λ never shrinks below this (the reciprocal of the largest trust region Ceres allows): on a
// long crawl of accepted steps Nielsen's rule (×1/3 each) underflowed λ to 0 after ~650
// steps, and a rejected step then multiplied 0 by ν until 0·∞ = NaN, after which no damped
// system could be solved and the step loop never ended (a two-component fit hung).
constexpr double kMinLambda = 1e-16;
constexpr int kMaxRecoveries = 2;
constexpr double kPlateauMargin = 10.0;

void UpdateScale(std::vector<double>& scale, const NormalEquations& eq) {
  const std::size_t n = eq.gradient.size();
  scale.resize(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    scale[i] = std::max(scale[i], std::sqrt(eq.hessian[i * n + i]));
}

// The scaling of a step: D_i (Moré: the largest sqrt((JᵀJ)_ii) seen so far), but at least
// kRangeFloor·sqrt(χ²)/(upper_i − lower_i) with the χ² of the current point, so that moving a
// parameter across its whole bound range costs the damped model at least λ·kRangeFloor²·χ².
// Without the floor a parameter the model barely responds to (D0 while shear dominates the
// correlation, or every physical parameter while contrast and offset are still far off) gets
// a huge step in its own units, which the bounds clip into a corner of the box, often onto
// the plateau where D(t) is floored. The floor follows the current χ² (it is not kept in the
// running maximum), so it fades as the fit approaches its minimum. On the recovery study
// (docs/robustness.md) it raised the starts at the truth that reach the minimum from 83 to 93
// of 100 and left the default starts at 92.
constexpr double kRangeFloor = 10.0;

std::vector<double> EffectiveScale(const std::vector<double>& scale, const NormalEquations& eq,
                                   const std::vector<double>& lower,
                                   const std::vector<double>& upper) {
  std::vector<double> d = scale;
  const double residual = std::sqrt(std::max(eq.chi2, 0.0));
  for (std::size_t i = 0; i < d.size(); ++i) {
    // A parameter held fixed (lower = upper) never moves: no floor.
    if (upper[i] > lower[i]) d[i] = std::max(d[i], kRangeFloor * residual / (upper[i] - lower[i]));
  }
  return d;
}

struct Step {
  std::vector<double> s;   // x_trial − x (the trial point is clamped into the box)
  double predicted = 0.0;  // ½χ² decrease the quadratic model predicts
  bool ok = false;         // false: the damped system could not be factorised
};

Step ComputeStep(const std::vector<double>& x, const NormalEquations& eq,
                 const std::vector<double>& scale, double lambda, const std::vector<double>& lower,
                 const std::vector<double>& upper) {
  const std::size_t n = x.size();
  Step step;
  step.s.assign(n, 0.0);
  std::vector<bool> free = FreeParameters(x, eq.gradient, lower, upper);
  auto d = [&](std::size_t i) { return scale[i] > 0.0 ? scale[i] : 1.0; };
  for (std::size_t pass = 0; pass <= n; ++pass) {
    std::vector<std::size_t> f;
    for (std::size_t i = 0; i < n; ++i) {
      if (free[i]) f.push_back(i);
    }
    if (f.empty()) break;
    const auto k = static_cast<Eigen::Index>(f.size());
    Eigen::MatrixXd a(k, k);
    Eigen::VectorXd b(k);
    for (Eigen::Index p = 0; p < k; ++p) {
      const std::size_t i = f[static_cast<std::size_t>(p)];
      // Parameters already fixed at a bound in this step move by s_j: their coupling counts.
      double rhs = eq.gradient[i];
      for (std::size_t j = 0; j < n; ++j) {
        if (!free[j]) rhs += eq.hessian[i * n + j] * step.s[j];
      }
      b(p) = -rhs / d(i);
      for (Eigen::Index q = 0; q < k; ++q) {
        const std::size_t j = f[static_cast<std::size_t>(q)];
        a(p, q) = eq.hessian[i * n + j] / (d(i) * d(j));
      }
      a(p, p) += lambda;
    }
    const Eigen::LLT<Eigen::MatrixXd> llt(a);
    if (llt.info() != Eigen::Success) return step;
    const Eigen::VectorXd z = llt.solve(b);
    bool clipped = false;
    for (Eigen::Index p = 0; p < k; ++p) {
      const std::size_t i = f[static_cast<std::size_t>(p)];
      const double si = z(p) / d(i);
      if (!std::isfinite(si)) return step;
      if (x[i] + si < lower[i] || x[i] + si > upper[i]) {
        step.s[i] = std::clamp(x[i] + si, lower[i], upper[i]) - x[i];
        free[i] = false;
        clipped = true;
      }
    }
    if (!clipped) {
      for (Eigen::Index p = 0; p < k; ++p) {
        const std::size_t i = f[static_cast<std::size_t>(p)];
        step.s[i] = z(p) / d(i);
      }
      break;
    }
  }
  // Clamp once more: x + s must be exactly inside the box (round-off of bound − x + x).
  for (std::size_t i = 0; i < n; ++i)
    step.s[i] = std::clamp(x[i] + step.s[i], lower[i], upper[i]) - x[i];
  double gs = 0.0, shs = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    gs += eq.gradient[i] * step.s[i];
    for (std::size_t j = 0; j < n; ++j) shs += step.s[i] * eq.hessian[i * n + j] * step.s[j];
  }
  step.predicted = -(gs + 0.5 * shs);
  step.ok = true;
  return step;
}

double ScaledNorm(const std::vector<double>& v, const std::vector<double>& scale) {
  double acc = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double d = scale[i] > 0.0 ? scale[i] : 1.0;
    acc += (d * v[i]) * (d * v[i]);
  }
  return std::sqrt(acc);
}

// Trial points refused over a solve, for its message.
struct Rejections {
  int non_finite = 0;  // NaN/Inf chi2 or gradient
  int plateau = 0;     // a parameter stopped mattering there
};

// The state at x0 (equations, damping, scaling, the first history entry), reported to the
// callback and at_start. False when the equations at x0 are not finite.
bool StartState(LeastSquaresProblem& problem, const std::vector<double>& x0,
                const std::vector<double>& lower, const std::vector<double>& upper,
                const IterationCallback& callback, const SolverHooks& hooks, SolverState& st) {
  st.x = x0;
  if (hooks.equations_at_x0 != nullptr) {
    st.equations = *hooks.equations_at_x0;
  } else {
    problem.Evaluate(st.x, true, st.equations);
    ++st.evaluations;
  }
  if (!IsFinite(st.equations)) return false;
  st.lambda = kInitialLambda;
  st.nu = 2.0;
  UpdateScale(st.scale, st.equations);
  st.chi2_history.push_back(st.equations.chi2);
  if (callback) {
    callback({0, st.equations.chi2,
              ProjectedGradientNorm(st.x, st.equations.gradient, lower, upper), 0.0,
              st.equations.gradient});
  }
  if (hooks.at_start) hooks.at_start(st);
  return true;
}

// One accepted step from st.x: trial steps with more damping after each rejection, the
// damping restarted (at most kMaxRecoveries times over the solve) when the step becomes
// negligible or the damping too large. Returns the accepted step's scaled norm, or nullopt
// when no step is acceptable (a stall); st is updated in place either way.
std::optional<double> AcceptStep(LeastSquaresProblem& problem, const std::vector<double>& lower,
                                 const std::vector<double>& upper, const SolverOptions& options,
                                 SolverState& st, Rejections& rejections) {
  const std::size_t n = st.x.size();
  // Which parameters the model barely responds to at st.x (fixed while no step is accepted).
  const std::vector<bool> insensitive_here =
      InsensitiveParameters(st.equations, lower, upper, kPlateauMargin);
  // A rejected step: more damping (×2, ×4, ×8, … of the last), never below the floor.
  const auto reject_step = [&st] {
    st.lambda = std::max(st.lambda * st.nu, kMinLambda);
    st.nu *= 2.0;
  };
  for (;;) {
    const std::vector<double> scale = EffectiveScale(st.scale, st.equations, lower, upper);
    const Step step = ComputeStep(st.x, st.equations, scale, st.lambda, lower, upper);
    const double sn = step.ok ? ScaledNorm(step.s, scale) : 0.0;
    const bool negligible =
        step.ok && sn <= options.xtol * (ScaledNorm(st.x, scale) + options.xtol);
    // !(λ ≤ max) also catches a NaN damping (a corrupt resumed state).
    if (negligible || !(st.lambda <= kMaxLambda)) {
      if (st.recoveries >= kMaxRecoveries) return std::nullopt;
      // Restart the damping and forget the scaling history: a different step from the
      // same best point.
      ++st.recoveries;
      st.lambda = kInitialLambda;
      st.nu = 2.0;
      st.scale.clear();
      UpdateScale(st.scale, st.equations);
      continue;
    }
    if (!step.ok || !(step.predicted > 0.0)) {
      reject_step();
      continue;
    }
    std::vector<double> trial(n);
    for (std::size_t i = 0; i < n; ++i) trial[i] = st.x[i] + step.s[i];
    NormalEquations eq;
    problem.Evaluate(trial, true, eq);
    ++st.evaluations;
    const bool finite = IsFinite(eq);
    if (!finite) ++rejections.non_finite;
    const double actual = 0.5 * (st.equations.chi2 - eq.chi2);
    const double rho = actual / step.predicted;
    bool onto_plateau = false;
    if (finite) {
      const std::vector<bool> after = InsensitiveParameters(eq, lower, upper);
      for (std::size_t i = 0; i < n; ++i)
        onto_plateau = onto_plateau || (after[i] && !insensitive_here[i]);
      if (onto_plateau) ++rejections.plateau;
    }
    if (finite && !onto_plateau && actual > 0.0 && rho > kAcceptRatio) {
      st.x = std::move(trial);
      st.equations = std::move(eq);
      const double t = 2.0 * rho - 1.0;
      st.lambda = std::max(st.lambda * std::max(1.0 / 3.0, 1.0 - t * t * t), kMinLambda);
      st.nu = 2.0;
      UpdateScale(st.scale, st.equations);
      return sn;
    }
    reject_step();
  }
}

// The summary of a finished solve: its message (why it ended, restarts, refused points) and
// the final state.
SolverSummary FinishSolve(SolverSummary out, SolverState st, const std::string& ending,
                          const Rejections& rejections) {
  out.message = fmt::format("Levenberg-Marquardt: {} accepted steps, {} passes", st.iteration,
                            st.evaluations + st.objective_evaluations);
  if (!ending.empty()) out.message += "; " + ending;
  if (st.recoveries > 0) out.message += fmt::format("; {} damping restart(s)", st.recoveries);
  if (rejections.plateau > 0) {
    out.message += fmt::format(
        "; {} trial point(s) on a plateau of the model (a parameter stopped mattering) were "
        "rejected",
        rejections.plateau);
  }
  if (rejections.non_finite > 0) {
    out.message += fmt::format(
        "; {} trial point(s) gave NaN/Inf chi2 or gradient and were rejected (extreme "
        "parameter values)",
        rejections.non_finite);
  }
  out.x = st.x;
  out.final_equations = st.equations;
  out.iterations = st.iteration;
  out.evaluations = st.evaluations;
  out.objective_evaluations = st.objective_evaluations;
  out.recoveries = st.recoveries;
  out.chi2_history = st.chi2_history;
  out.initial_chi2 = st.chi2_history.empty() ? -1.0 : st.chi2_history.front();
  out.final_state = std::move(st);
  return out;
}

}  // namespace

SolverSummary SolveLevenbergMarquardt(LeastSquaresProblem& problem, const std::vector<double>& x0,
                                      const std::vector<double>& lower,
                                      const std::vector<double>& upper,
                                      const SolverOptions& options,
                                      const IterationCallback& callback, const SolverHooks& hooks,
                                      const LmObserver& observer) {
  SolverSummary out;
  SolverState st;
  if (hooks.resume != nullptr) {
    st = *hooks.resume;
  } else if (!StartState(problem, x0, lower, upper, callback, hooks, st)) {
    out.termination = Termination::kNumericalFailure;  // SolveBounded words the message
    out.x = st.x;
    out.final_equations = st.equations;
    out.iterations = 0;
    out.evaluations = st.evaluations;
    return out;
  }

  if (observer.at_iterate) observer.at_iterate(st, 0.0);
  Rejections rejections;
  std::string ending;
  for (;;) {
    if (IsOptimal(MeasureOptimality(st.x, st.equations, lower, upper), options.ftol,
                  options.gtol)) {
      out.termination = Termination::kConverged;
      break;
    }
    if (st.iteration >= options.max_iterations) {
      out.termination = Termination::kMaxIterations;
      ending = fmt::format("iteration limit {} reached", options.max_iterations);
      break;
    }
    if (observer.stop) {
      ending = observer.stop(st);
      if (!ending.empty()) {
        out.termination = Termination::kConverged;
        break;
      }
    }
    const std::optional<double> step_norm =
        AcceptStep(problem, lower, upper, options, st, rejections);
    if (!step_norm) {
      out.termination = Termination::kStalled;
      ending = fmt::format(
          "no step decreases chi2 any more (damping restarted {} times from the best point)",
          st.recoveries);
      break;
    }
    ++st.iteration;
    problem.StepAccepted();
    st.chi2_history.push_back(st.equations.chi2);
    if (callback) {
      callback({st.iteration, st.equations.chi2,
                ProjectedGradientNorm(st.x, st.equations.gradient, lower, upper), *step_norm,
                st.equations.gradient});
    }
    if (observer.at_iterate) observer.at_iterate(st, *step_norm);
    if (hooks.after_iteration) hooks.after_iteration(st);
  }
  return FinishSolve(std::move(out), std::move(st), ending, rejections);
}

}  // namespace homodyne::lsq::detail
