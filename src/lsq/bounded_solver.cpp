#include "lsq/bounded_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "core/petsc_module.h"

namespace homodyne::lsq {

std::string SolverOptions::Validate() const {
  if (max_iterations < 1) return fmt::format("max_iterations must be ≥ 1 (got {})", max_iterations);
  for (auto [name, v] : {std::pair{"tolerance (ftol)", ftol}, {"xtol", xtol}, {"gtol", gtol}}) {
    if (!(v >= 0.0) || !std::isfinite(v)) return fmt::format("{} must be ≥ 0 (got {})", name, v);
  }
  return {};
}

std::string_view ToString(LocalMethod method) {
  switch (method) {
    case LocalMethod::kBnls:
      return "bnls";
    case LocalMethod::kBntr:
      return "bntr";
    case LocalMethod::kBntl:
      return "bntl";
    case LocalMethod::kLm:
      break;
  }
  return "lm";
}

std::string_view ToString(Termination t) {
  switch (t) {
    case Termination::kConverged:
      return "converged";
    case Termination::kStalled:
      return "stalled";
    case Termination::kMaxIterations:
      return "max_iter";
    case Termination::kNumericalFailure:
      return "numerical_failure";
    case Termination::kFailure:
      return "failed";
  }
  return "failed";
}

std::string_view ConvergenceStatus(Termination t) {
  switch (t) {
    case Termination::kConverged:
    case Termination::kStalled:
    case Termination::kMaxIterations:
      return ToString(t);
    case Termination::kNumericalFailure:
    case Termination::kFailure:
      break;
  }
  return "failed";
}

std::string SolverSummary::BriefReport() const {
  return fmt::format(
      "{}: {} iterations, chi2 {:.10g} -> {:.10g}, cosine {:.3g}, decrement {:.3g}, {} passes, "
      "{:.3f} s",
      ToString(termination), iterations, initial_chi2, final_chi2, optimality.cosine,
      optimality.decrement, evaluations + objective_evaluations, seconds);
}

namespace detail {

double ProjectedGradientNorm(const std::vector<double>& x, const std::vector<double>& g,
                             const std::vector<double>& lower, const std::vector<double>& upper) {
  const std::vector<bool> free = FreeParameters(x, g, lower, upper);
  double acc = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) acc += free[i] ? g[i] * g[i] : 0.0;
  return std::sqrt(acc);
}

}  // namespace detail

namespace {

// A χ² this small against the data's own scale (residuals ~1e-12 of the data) is an exact
// fit up to floating-point round-off, where the relative measures of optimality.h see only
// round-off and no step can decrease χ² further.
constexpr double kRoundOffFit = 1e-24;

// The label the answer has earned: only the optimality test (or an exact fit to round-off)
// makes it "converged".
void Classify(LeastSquaresProblem& problem, SolverSummary& s, const SolverOptions& o) {
  if (s.termination == Termination::kFailure) return;
  if (!IsFinite(s.final_equations)) {
    // NaN/Inf from the model (extreme parameters) or the data (overflowing values): never
    // reported as a fit.
    s.termination = Termination::kNumericalFailure;
    s.message = fmt::format(
        "numerical failure: chi2 = {} or its derivatives are not finite at the {} point (NaN/Inf "
        "from extreme parameter values or data values; check initial values, bounds and the "
        "data scale)",
        s.final_chi2, s.iterations == 0 ? "starting" : "final");
    return;
  }
  const OptimalityMeasure& m = s.optimality;
  std::string measures =
      fmt::format("cosine {:.3g} (gtol {:.3g}), Gauss-Newton decrement {:.3g} (ftol {:.3g})",
                  m.cosine, o.gtol, m.decrement, o.ftol);
  if (!m.insensitive.empty()) {
    std::vector<std::string> which;
    for (const auto i : m.insensitive) {
      const auto u = static_cast<std::size_t>(i);
      which.push_back(u < o.parameter_names.size() ? o.parameter_names[u] : std::to_string(i));
    }
    measures += fmt::format(
        "; the model does not respond to parameter(s) {} here (a plateau, not a minimum)",
        fmt::join(which, ", "));
  }
  if (m.decrement <= o.ftol && !DecrementHolds(m, o.ftol)) {
    measures += fmt::format(
        "; the decrement test holds but the cosine is above the {:.3g} it needs beside it (a "
        "slow stretch, not a minimum)",
        kDecrementMaxCosine);
  }
  if (IsOptimal(m, o.ftol, o.gtol)) {
    s.termination = Termination::kConverged;
    s.message = fmt::format("optimal: {}; {}", measures, s.message);
    return;
  }
  if (s.termination != Termination::kMaxIterations) {
    // Every rank takes this branch (replicated solver), so the collective pass is safe.
    const double zero_model = problem.ZeroModelChi2(s.x);
    if (std::isfinite(zero_model) && s.final_chi2 <= kRoundOffFit * zero_model) {
      s.termination = Termination::kConverged;
      s.message = fmt::format(
          "exact fit to floating-point round-off: chi2 {:.3g} is {:.3g} of the data's own "
          "chi2; {}",
          s.final_chi2, s.final_chi2 / zero_model, s.message);
      return;
    }
  }
  if (s.termination == Termination::kConverged) {
    // A method stopped on its own rule (step size, χ² change, line search) where the
    // first-order test fails: a stall, not an answer.
    s.termination = Termination::kStalled;
  }
  s.message = fmt::format("not optimal: {}; {}", measures, s.message);
}

// The bare Levenberg–Marquardt loop unless PETSc is running (PETSc options were given: then
// through TaoSolve, so that they reach it, with the same bits); TAO's methods in the PETSc
// module, which is loaded and started for them when it is not.
SolverSummary RunEngine(LeastSquaresProblem& problem, const std::vector<double>& x0,
                        const std::vector<double>& lower, const std::vector<double>& upper,
                        const SolverOptions& options, const IterationCallback& callback,
                        const SolverHooks& hooks) {
  if (!options.UsesTao() && !PetscStarted()) {
    return detail::SolveLevenbergMarquardt(problem, x0, lower, upper, options, callback, hooks);
  }
  static constexpr detail::PetscModuleHost kHost{
      &detail::SolveLevenbergMarquardt, &detail::ProjectedGradientNorm,
      static_cast<std::string_view (*)(LocalMethod)>(&ToString), &MeasureOptimality};
  if (options.UsesTao()) EnsurePetscStarted();
  auto solve = reinterpret_cast<detail::PetscSolveEntry>(PetscModuleEntry(
      options.UsesTao() ? "homodyne_petsc_solve_tao" : "homodyne_petsc_solve_tao_lm"));
  return solve(kHost, problem, x0, lower, upper, options, callback, hooks);
}

}  // namespace

SolverSummary SolveBounded(LeastSquaresProblem& problem, std::vector<double> x0,
                           const std::vector<double>& lower, const std::vector<double>& upper,
                           const SolverOptions& options, const IterationCallback& callback,
                           const SolverHooks& hooks) {
  const auto t_start = std::chrono::steady_clock::now();
  const int n = problem.num_parameters();
  if (auto msg = options.Validate(); !msg.empty()) ThrowBadInput(msg);
  HOMODYNE_CHECK(static_cast<int>(x0.size()) == n && static_cast<int>(lower.size()) == n &&
                     static_cast<int>(upper.size()) == n,
                 "parameter, bound and problem sizes differ");
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (!std::isfinite(x0[k]) || !std::isfinite(lower[k]) || !std::isfinite(upper[k])) {
      ThrowBadInput(
          fmt::format("parameter {} has a non-finite start or bound: start {}, bounds "
                      "[{}, {}] (expected finite numbers)",
                      i, x0[k], lower[k], upper[k]));
    }
    // lower = upper holds a parameter fixed (the lm method only: partial solves).
    if (!(lower[k] < upper[k]) && !(lower[k] == upper[k] && !options.UsesTao())) {
      ThrowBadInput(
          fmt::format("bounds of parameter {} are empty: [{}, {}]", i, lower[k], upper[k]));
    }
    x0[k] = std::clamp(x0[k], lower[k], upper[k]);
  }
  HOMODYNE_CHECK(hooks.resume == nullptr || !options.UsesTao(),
                 "a TAO solve cannot resume a saved state");

  SolverSummary s = RunEngine(problem, x0, lower, upper, options, callback, hooks);
  s.method = std::string(ToString(options.method));
  s.final_chi2 = s.final_equations.chi2;
  if (s.initial_chi2 < 0.0) {
    s.initial_chi2 = s.chi2_history.empty() ? s.final_chi2 : s.chi2_history.front();
  }
  if (IsFinite(s.final_equations)) {
    s.optimality = MeasureOptimality(s.x, s.final_equations, lower, upper);
    s.projected_gradient_norm =
        detail::ProjectedGradientNorm(s.x, s.final_equations.gradient, lower, upper);
  }
  Classify(problem, s, options);
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double tol = 1e-9 * (1.0 + std::max(std::abs(lower[k]), std::abs(upper[k])));
    s.at_lower_bound.push_back(s.x[k] - lower[k] <= tol);
    s.at_upper_bound.push_back(upper[k] - s.x[k] <= tol);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return s;
}

}  // namespace homodyne::lsq
