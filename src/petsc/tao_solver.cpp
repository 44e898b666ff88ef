// The PETSc/TAO engine of SolveBounded (bnls, bntr, bntl on the Gauss–Newton Hessian).
// TAO's stopping rules run with our tolerances; SolveBounded then applies the optimality test,
// so a TAO stop on a step-size or χ²-change rule away from optimality is reported as a stall.
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"
#include "lsq/bounded_solver.h"
#include "petsc/petsc_handles.h"
#include "petsc/tao_lm.h"

namespace homodyne::lsq::detail {
namespace {

// State shared by the TAO callbacks of one solve.
struct SolveContext {
  LeastSquaresProblem* problem = nullptr;
  const SolverOptions* options = nullptr;
  const IterationCallback* callback = nullptr;
  const SolverHooks* hooks = nullptr;
  std::vector<double> lower, upper;
  // Cache of the last evaluation with derivatives (TAO asks for the Hessian at the
  // point where it just evaluated f and g).
  std::vector<double> cached_x;
  NormalEquations cached;
  bool cache_valid = false;
  int evaluations = 0;
  int objective_evaluations = 0;
  int non_finite_evaluations = 0;  // trial points where chi2 or its gradient was NaN/Inf
  int iteration_offset = 0;        // a resumed solve's iterations so far
  std::exception_ptr error;
  std::vector<double> chi2_history;
  // For the ftol rule: f at the current and the previous iteration.
  PetscInt previous_iteration = -1;
  double f_current = std::numeric_limits<double>::quiet_NaN();
  double f_before = std::numeric_limits<double>::quiet_NaN();
};

std::vector<double> ToStd(Vec v) {
  PetscInt n = 0;
  VecGetLocalSize(v, &n);
  const PetscScalar* a = nullptr;
  VecGetArrayRead(v, &a);
  std::vector<double> out(a, a + n);
  VecRestoreArrayRead(v, &a);
  return out;
}

const NormalEquations& EvaluateFull(SolveContext& ctx, const std::vector<double>& x) {
  if (!(ctx.cache_valid && ctx.cached_x == x)) {
    ctx.problem->Evaluate(x, true, ctx.cached);
    ++ctx.evaluations;
    ctx.cached_x = x;
    ctx.cache_valid = true;
  }
  return ctx.cached;
}

// Objective only: f = ½χ².
PetscErrorCode ObjectiveCallback(Tao, Vec X, PetscReal* f, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  try {
    const std::vector<double> x = ToStd(X);
    if (ctx.cache_valid && ctx.cached_x == x) {
      *f = 0.5 * ctx.cached.chi2;
      return 0;
    }
    NormalEquations eq;
    ctx.problem->Evaluate(x, false, eq);
    ++ctx.objective_evaluations;
    if (!std::isfinite(eq.chi2)) ++ctx.non_finite_evaluations;
    *f = std::isfinite(eq.chi2) ? 0.5 * eq.chi2 : PETSC_INFINITY;
    return 0;
  } catch (...) {
    ctx.error = std::current_exception();
    return PETSC_ERR_USER;
  }
}

PetscErrorCode ObjectiveGradientCallback(Tao, Vec X, PetscReal* f, Vec G, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  try {
    const NormalEquations& eq = EvaluateFull(ctx, ToStd(X));
    bool finite = std::isfinite(eq.chi2);
    for (double g : eq.gradient) finite = finite && std::isfinite(g);
    if (!finite) ++ctx.non_finite_evaluations;
    *f = finite ? 0.5 * eq.chi2 : PETSC_INFINITY;
    PetscScalar* g = nullptr;
    VecGetArray(G, &g);
    for (std::size_t i = 0; i < eq.gradient.size(); ++i) g[i] = finite ? eq.gradient[i] : 0.0;
    VecRestoreArray(G, &g);
    return 0;
  } catch (...) {
    ctx.error = std::current_exception();
    return PETSC_ERR_USER;
  }
}

PetscErrorCode HessianCallback(Tao, Vec X, Mat H, Mat, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  try {
    const NormalEquations& eq = EvaluateFull(ctx, ToStd(X));
    const auto n = static_cast<PetscInt>(eq.gradient.size());
    PetscScalar* h = nullptr;
    MatDenseGetArrayWrite(H, &h);  // column-major; JᵀJ is symmetric
    for (PetscInt k = 0; k < n * n; ++k) h[k] = std::isfinite(eq.hessian[k]) ? eq.hessian[k] : 0.0;
    MatDenseRestoreArrayWrite(H, &h);
    MatAssemblyBegin(H, MAT_FINAL_ASSEMBLY);
    MatAssemblyEnd(H, MAT_FINAL_ASSEMBLY);
    return 0;
  } catch (...) {
    ctx.error = std::current_exception();
    return PETSC_ERR_USER;
  }
}

// TAO's default test plus the optimality test (converged) and homodyne's relative step
// (xtol) and relative χ² change (ftol) rules, which stop the method; SolveBounded labels
// such a stop a stall unless the optimality test holds.
PetscErrorCode ConvergenceTest(Tao tao, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  PetscCall(TaoDefaultConvergenceTest(tao, nullptr));
  TaoConvergedReason reason;
  PetscCall(TaoGetConvergedReason(tao, &reason));
  if (reason != TAO_CONTINUE_ITERATING && reason != TAO_DIVERGED_MAXITS) return 0;
  PetscInt it = 0;
  PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
  PetscCall(TaoGetSolutionStatus(tao, &it, &f, &gnorm, &cnorm, &xdiff, &reason));
  Vec X;
  PetscCall(TaoGetSolution(tao, &X));
  const std::vector<double> x = ToStd(X);
  const SolverOptions& o = *ctx.options;
  if (ctx.cache_valid && ctx.cached_x == x) {
    if (IsOptimal(MeasureOptimality(x, ctx.cached, ctx.lower, ctx.upper), o.ftol, o.gtol)) {
      PetscCall(TaoSetConvergedReason(tao, TAO_CONVERGED_GATOL));
      return 0;
    }
  }
  if (it == 0) {
    ctx.previous_iteration = 0;
    ctx.f_current = f;
    return 0;
  }
  double xnorm = 0;
  for (double v : x) xnorm += v * v;
  xnorm = std::sqrt(xnorm);
  if (xdiff > 0 && xdiff <= o.xtol * (o.xtol + xnorm)) {
    PetscCall(TaoSetConvergedReason(tao, TAO_CONVERGED_STEPTOL));
    return 0;
  }
  // ftol compares f with the value at the previous iteration (the test may run more
  // than once per iteration, so remember f per iteration number).
  if (it != ctx.previous_iteration) {
    ctx.f_before = ctx.f_current;
    ctx.f_current = f;
    ctx.previous_iteration = it;
  }
  if (std::isfinite(ctx.f_before) && ctx.f_before - f >= 0 &&
      ctx.f_before - f <= o.ftol * ctx.f_before) {
    PetscCall(TaoSetConvergedReason(tao, TAO_CONVERGED_USER));
  }
  return 0;
}

PetscErrorCode MonitorCallback(Tao tao, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  PetscInt it = 0;
  PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
  TaoConvergedReason reason;
  PetscCall(TaoGetSolutionStatus(tao, &it, &f, &gnorm, &cnorm, &xdiff, &reason));
  if (it == 0 && ctx.iteration_offset > 0) return 0;  // the resumed point was recorded before
  ctx.chi2_history.push_back(2.0 * f);
  const int iteration = static_cast<int>(it) + ctx.iteration_offset;
  if (it > 0) ctx.problem->StepAccepted();  // TAO monitors once per iteration
  try {
    if (*ctx.callback) {
      // Jᵀr from the cache when TAO's last full evaluation was at this iterate (the usual
      // case: it evaluates the Hessian where it accepted the step); no pass is added for it.
      Vec X;
      PetscCall(TaoGetSolution(tao, &X));
      const bool cached = ctx.cache_valid && ctx.cached_x == ToStd(X);
      IterationInfo info{iteration, 2.0 * f, gnorm, xdiff, {}};
      if (cached) info.gradient = ctx.cached.gradient;
      (*ctx.callback)(info);
    }
    if (ctx.hooks->after_iteration && it > 0) {
      // TAO's own state stays inside TAO: the hook sees the point and its history.
      Vec X;
      PetscCall(TaoGetSolution(tao, &X));
      SolverState st;
      st.iteration = iteration;
      st.x = ToStd(X);
      st.equations = EvaluateFull(ctx, st.x);
      st.evaluations = ctx.evaluations;
      st.objective_evaluations = ctx.objective_evaluations;
      st.chi2_history = ctx.chi2_history;
      ctx.hooks->after_iteration(st);
    }
  } catch (...) {
    ctx.error = std::current_exception();
    return PETSC_ERR_USER;
  }
  return 0;
}

Termination MapReason(TaoConvergedReason reason) {
  if (reason > 0) return Termination::kConverged;
  switch (reason) {
    case TAO_DIVERGED_MAXITS:
    case TAO_DIVERGED_MAXFCN:
      return Termination::kMaxIterations;
    case TAO_DIVERGED_LS_FAILURE:
    case TAO_DIVERGED_TR_REDUCTION:
      return Termination::kStalled;
    case TAO_DIVERGED_NAN:
      return Termination::kNumericalFailure;
    default:
      return Termination::kFailure;
  }
}

// The callbacks' shared state at the start: a resumed solve continues its counters and
// history and knows the equations at its point, as does a solve given equations_at_x0.
void StartContext(SolveContext& ctx, LeastSquaresProblem& problem, const std::vector<double>& x0,
                  const std::vector<double>& lower, const std::vector<double>& upper,
                  const SolverOptions& options, const IterationCallback& callback,
                  const SolverHooks& hooks) {
  ctx.problem = &problem;
  ctx.options = &options;
  ctx.callback = &callback;
  ctx.hooks = &hooks;
  ctx.lower = lower;
  ctx.upper = upper;
  if (hooks.resume != nullptr) {
    ctx.iteration_offset = hooks.resume->iteration;
    ctx.chi2_history = hooks.resume->chi2_history;
    ctx.evaluations = hooks.resume->evaluations;
    ctx.objective_evaluations = hooks.resume->objective_evaluations;
    ctx.cached = hooks.resume->equations;
    ctx.cached_x = x0;
    ctx.cache_valid = true;
  } else if (hooks.equations_at_x0 != nullptr) {
    ctx.cached = *hooks.equations_at_x0;
    ctx.cached_x = x0;
    ctx.cache_valid = true;
  }
}

// The start point and the box as PETSc vectors.
struct BoxVectors {
  petsc::VecHandle x, lower, upper;
};
void FillBox(const std::vector<double>& x0, const std::vector<double>& lower,
             const std::vector<double>& upper, BoxVectors& v) {
  using petsc::Check;
  const auto n = static_cast<PetscInt>(x0.size());
  Check(VecCreateSeq(PETSC_COMM_SELF, n, v.x.out()), "VecCreateSeq");
  Check(VecDuplicate(v.x.get(), v.lower.out()), "VecDuplicate");
  Check(VecDuplicate(v.x.get(), v.upper.out()), "VecDuplicate");
  PetscScalar *px = nullptr, *pl = nullptr, *pu = nullptr;
  VecGetArray(v.x.get(), &px);
  VecGetArray(v.lower.get(), &pl);
  VecGetArray(v.upper.get(), &pu);
  for (PetscInt i = 0; i < n; ++i) {
    px[i] = x0[static_cast<std::size_t>(i)];
    pl[i] = lower[static_cast<std::size_t>(i)];
    pu[i] = upper[static_cast<std::size_t>(i)];
  }
  VecRestoreArray(v.x.get(), &px);
  VecRestoreArray(v.lower.get(), &pl);
  VecRestoreArray(v.upper.get(), &pu);
}

// The TAO object of the method, with our callbacks, convergence test and monitor, then the
// command-line options.
void ConfigureTao(Tao tao, Mat hess, const BoxVectors& v, const SolverOptions& options,
                  SolveContext& ctx) {
  using petsc::Check;
  Check(TaoSetType(tao, std::string(ToString(options.method)).c_str()), "TaoSetType");
  Check(TaoSetSolution(tao, v.x.get()), "TaoSetSolution");
  Check(TaoSetVariableBounds(tao, v.lower.get(), v.upper.get()), "TaoSetVariableBounds");
  Check(TaoSetObjective(tao, ObjectiveCallback, &ctx), "TaoSetObjective");
  Check(TaoSetObjectiveAndGradient(tao, nullptr, ObjectiveGradientCallback, &ctx),
        "TaoSetObjectiveAndGradient");
  Check(TaoSetHessian(tao, hess, hess, HessianCallback, &ctx), "TaoSetHessian");
  // Our own tests decide convergence; TAO's absolute/relative gradient tests are off.
  Check(TaoSetTolerances(tao, 0.0, 0.0, 0.0), "TaoSetTolerances");
  Check(TaoSetMaximumIterations(tao, std::max(1, options.max_iterations - ctx.iteration_offset)),
        "TaoSetMaximumIterations");
  Check(TaoSetConvergenceTest(tao, ConvergenceTest, &ctx), "TaoSetConvergenceTest");
  Check(TaoSetMonitor(tao, MonitorCallback, &ctx, nullptr), "TaoSetMonitor");
  // Command-line options (-tao_type, -tao_max_it, -tao_monitor, ...) override; every
  // rank parses the same options, so every rank runs the same algorithm.
  Check(TaoSetFromOptions(tao), "TaoSetFromOptions");
  if (!options.print_petsc_monitors) {
    // Same algorithm everywhere, output once: drop -tao_monitor & co. on this rank but
    // keep our own monitor (it records the χ² history).
    Check(TaoCancelMonitors(tao), "TaoCancelMonitors");
    Check(TaoSetMonitor(tao, MonitorCallback, &ctx, nullptr), "TaoSetMonitor");
  }
}

// The answer of a finished TAO solve: its reason, the point (inside the box) and the
// equations there, the counters.
SolverSummary SummariseTao(Tao tao, Vec x, SolveContext& ctx, const SolverOptions& options) {
  using petsc::Check;
  SolverSummary s;
  TaoConvergedReason reason;
  PetscInt its = 0;
  PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
  Check(TaoGetSolutionStatus(tao, &its, &f, &gnorm, &cnorm, &xdiff, &reason),
        "TaoGetSolutionStatus");
  s.termination = MapReason(reason);
  s.message = fmt::format("TAO {}: {}", ToString(options.method), TaoConvergedReasons[reason]);
  if (ctx.non_finite_evaluations > 0) {
    s.message += fmt::format(
        "; {} trial point(s) gave NaN/Inf chi2 or gradient and were rejected (extreme "
        "parameter values)",
        ctx.non_finite_evaluations);
  }
  s.x = ToStd(x);
  for (std::size_t k = 0; k < s.x.size(); ++k) {  // guard against round-off outside the box
    s.x[k] = std::clamp(s.x[k], ctx.lower[k], ctx.upper[k]);
  }
  s.final_equations = EvaluateFull(ctx, s.x);
  s.chi2_history = ctx.chi2_history;
  s.iterations = static_cast<int>(its) + ctx.iteration_offset;
  s.evaluations = ctx.evaluations;
  s.objective_evaluations = ctx.objective_evaluations;
  return s;
}

}  // namespace

SolverSummary SolveTao(LeastSquaresProblem& problem, const std::vector<double>& x_start,
                       const std::vector<double>& lower, const std::vector<double>& upper,
                       const SolverOptions& options, const IterationCallback& callback,
                       const SolverHooks& hooks) {
  using petsc::Check;
  const int n = problem.num_parameters();
  // A resumed TAO solve restarts TAO at the saved point (its internal state is lost).
  const std::vector<double>& x0 = hooks.resume != nullptr ? hooks.resume->x : x_start;
  SolveContext ctx;
  StartContext(ctx, problem, x0, lower, upper, options, callback, hooks);
  BoxVectors box;
  FillBox(x0, lower, upper, box);
  petsc::MatHandle hess;
  petsc::TaoHandle tao;
  Check(MatCreateSeqDense(PETSC_COMM_SELF, n, n, nullptr, hess.out()), "MatCreateSeqDense");
  Check(TaoCreate(PETSC_COMM_SELF, tao.out()), "TaoCreate");
  ConfigureTao(tao.get(), hess.get(), box, options, ctx);

  PetscErrorCode solve_code = 0;
  {
    petsc::QuietErrors quiet;
    solve_code = TaoSolve(tao.get());
  }
  if (ctx.error) std::rethrow_exception(ctx.error);
  Check(solve_code, "TaoSolve");
  return SummariseTao(tao.get(), box.x.get(), ctx, options);
}

}  // namespace homodyne::lsq::detail
