// Bounded nonlinear least squares, replicated on every rank.
//
// Every rank runs the same solver over the small parameter vector; χ², gradient and
// Gauss–Newton Hessian come from the problem's reduced normal equations (one collective data
// pass gives all three). No N×P Jacobian is ever formed.
//
// Two local methods:
//   lm    (default) our Levenberg–Marquardt on the reduced normal equations with a projected,
//         bound-fixing step (lm_solver.cpp). Its whole state is SolverState, so a checkpointed
//         or resumed solve repeats the uninterrupted one bit for bit. It runs as the TAO type
//         "homodyne_lm" (tao_lm.cpp): TaoSolve drives it, so -tao_monitor, -tao_view,
//         -tao_converged_reason, -tao_max_it, -tao_gatol and -tao_grtol work for it too.
//   bnls, bntr, bntl   PETSc/TAO's bounded Newton methods on the Gauss–Newton Hessian
//         (tao_solver.cpp); their internal state cannot be saved, so they run without
//         checkpoints.
// Whatever the method, "converged" means the first-order test of optimality.h holds at the
// answer; a method that stops elsewhere has stalled, and is reported so.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lsq/least_squares_problem.h"
#include "lsq/local_method.h"
#include "lsq/optimality.h"

namespace homodyne::lsq {

struct SolverOptions {
  int max_iterations = 1000;  // optimization.nlsq.max_iterations (accepted steps)
  double ftol = 1e-8;         // optimality: Gauss–Newton decrement ≤ ftol (optimality.h)
  double xtol = 1e-8;         // a step ‖D·s‖ ≤ xtol·(‖D·x‖ + xtol) makes no progress
  double gtol = 1e-8;         // optimality: max column cosine ≤ gtol (optimality.h)
  LocalMethod method = LocalMethod::kLm;  // optimization.nlsq.local_solver
  // Whether PETSc's own monitors from the command line (-tao_monitor, ...) print on this
  // rank; set it to (rank == 0) so a 64-rank job prints them once.
  bool print_petsc_monitors = true;
  // Names of the optimiser's parameters, for messages (empty: they say indices).
  std::vector<std::string> parameter_names;
  // Returns an empty string if valid, else a message naming the field and the rule.
  std::string Validate() const;
  bool UsesTao() const { return method != LocalMethod::kLm; }
};

enum class Termination {
  kConverged,         // the optimality test holds at x
  kStalled,           // no acceptable step although the test does not hold (x: best point)
  kMaxIterations,     // iteration limit before the test held (x: last accepted point)
  kNumericalFailure,  // NaN/Inf in χ² or derivatives at the start or the end
  kFailure,
};
// "converged", "stalled", "max_iter", "numerical_failure", "failed".
std::string_view ToString(Termination t);

// The label of the outputs (parameters.json, convergence_metrics.json, run_report.yaml):
// "converged", "stalled", "max_iter", or "failed" (numerical failure and other failures).
std::string_view ConvergenceStatus(Termination t);

struct IterationInfo {
  int iteration = 0;
  double chi2 = 0.0;
  double gradient_norm = 0.0;  // ‖projected gradient‖₂
  double step_norm = 0.0;
  // Jᵀr = ∇(½χ²) at the iterate when the solver has it at hand (no extra pass is made for
  // it); empty otherwise. Valid during the callback only.
  std::span<const double> gradient;
};

// Everything the Levenberg–Marquardt iteration carries from one accepted step to the next.
struct SolverState {
  int iteration = 0;  // accepted steps so far
  std::vector<double> x;
  NormalEquations equations;  // at x
  double lambda = 0.0;        // damping of the equilibrated normal equations
  double nu = 2.0;            // growth factor of lambda after a rejected step
  std::vector<double> scale;  // D_i: largest sqrt((JᵀJ)_ii) seen so far
  int recoveries = 0;         // damping restarts after a stall
  int evaluations = 0;        // data passes with derivatives
  int objective_evaluations = 0;
  std::vector<double> chi2_history;  // χ² at the start and after every accepted step
};

struct SolverSummary {
  Termination termination = Termination::kFailure;
  std::string message = "Solve was not called.";
  std::vector<double> x;  // final parameters (inside the bounds)
  double initial_chi2 = -1.0;
  double final_chi2 = -1.0;
  NormalEquations final_equations;  // at x
  OptimalityMeasure optimality;     // at x
  double projected_gradient_norm = -1.0;
  int iterations = -1;
  int evaluations = 0;            // data passes with derivatives
  int objective_evaluations = 0;  // data passes for χ² only
  int recoveries = 0;
  double seconds = 0.0;
  std::vector<double> chi2_history;  // one entry per accepted iteration (incl. start)
  std::vector<bool> at_lower_bound, at_upper_bound;
  std::string method;
  SolverState final_state;  // lm: the state at the end (a checkpoint of the finished solve)

  // The parameters are a point of the problem (written, labelled by termination).
  bool IsUsable() const {
    return termination == Termination::kConverged || termination == Termination::kStalled ||
           termination == Termination::kMaxIterations;
  }
  std::string BriefReport() const;
};

// Called on every rank after each iteration (print on rank 0 only).
using IterationCallback = std::function<void(const IterationInfo&)>;

// How a solve continues an earlier one, and what it reports as it goes (lm only).
struct SolverHooks {
  const SolverState* resume = nullptr;               // continue this state instead of x0
  const NormalEquations* equations_at_x0 = nullptr;  // known equations at x0: saves a pass
  // Called on every rank after each accepted step with the complete state; it may throw
  // (the same agreed error on every rank) to end the solve, e.g. after a checkpoint.
  std::function<void(const SolverState&)> after_iteration;
  // Called once the starting state is complete (equations at x0, damping, scaling; not on a
  // resume): the state a stop before the first accepted step saves (Levenberg–Marquardt).
  std::function<void(const SolverState&)> at_start;
};

SolverSummary SolveBounded(LeastSquaresProblem& problem, std::vector<double> x0,
                           const std::vector<double>& lower, const std::vector<double>& upper,
                           const SolverOptions& options, const IterationCallback& callback = {},
                           const SolverHooks& hooks = {});

namespace detail {
// What drives the Levenberg–Marquardt loop from outside (the TAO type of tao_lm.cpp): it is
// told of every iterate and may end the solve on a test of its own. Neither changes an
// iterate, so a driven solve has the bits of an undriven one until `stop` ends it.
struct LmObserver {
  // At the start point (or the resumed one) and after every accepted step, before the
  // checkpoint hook; `step_norm` is 0 at the start.
  std::function<void(const SolverState&, double step_norm)> at_iterate;
  // Asked before each step once the optimality test has failed and the iteration limit is
  // not reached: a non-empty answer ends the solve as kConverged with that text as its ending
  // (SolveBounded then labels it by the optimality test, so it is a stall unless that holds).
  std::function<std::string(const SolverState&)> stop;
};

// The engines behind SolveBounded: they fill x, final_equations, termination, message,
// iterations, the counters and the history; SolveBounded checks the inputs before and
// classifies the answer after. SolveLevenbergMarquardt is the bare loop. When PETSc is running
// (PETSc options were given: core/petsc_module.h) SolveBounded runs it through TaoSolve instead
// (SolveTaoLevenbergMarquardt, src/petsc/tao_lm.h), which gives the same bits; TAO's own
// methods (SolveTao, src/petsc/tao_solver.cpp) start PETSc when it is not running. Both live in
// the PETSc module, which calls back into this layer through PetscModuleHost.
SolverSummary SolveLevenbergMarquardt(LeastSquaresProblem& problem, const std::vector<double>& x0,
                                      const std::vector<double>& lower,
                                      const std::vector<double>& upper,
                                      const SolverOptions& options,
                                      const IterationCallback& callback, const SolverHooks& hooks,
                                      const LmObserver& observer = {});
double ProjectedGradientNorm(const std::vector<double>& x, const std::vector<double>& g,
                             const std::vector<double>& lower, const std::vector<double>& upper);

// What the PETSc module calls in this layer (the module links none of homodyne's layers).
struct PetscModuleHost {
  SolverSummary (*solve_lm)(LeastSquaresProblem&, const std::vector<double>&,
                            const std::vector<double>&, const std::vector<double>&,
                            const SolverOptions&, const IterationCallback&, const SolverHooks&,
                            const LmObserver&);
  double (*projected_gradient_norm)(const std::vector<double>&, const std::vector<double>&,
                                    const std::vector<double>&, const std::vector<double>&);
  std::string_view (*method_name)(LocalMethod);
  OptimalityMeasure (*measure_optimality)(const std::vector<double>&, const NormalEquations&,
                                          const std::vector<double>&, const std::vector<double>&);
};
// The module's solve entries (homodyne_petsc_solve_tao, homodyne_petsc_solve_tao_lm).
using PetscSolveEntry = SolverSummary (*)(const PetscModuleHost&, LeastSquaresProblem&,
                                          const std::vector<double>&, const std::vector<double>&,
                                          const std::vector<double>&, const SolverOptions&,
                                          const IterationCallback&, const SolverHooks&);
}  // namespace detail

}  // namespace homodyne::lsq
