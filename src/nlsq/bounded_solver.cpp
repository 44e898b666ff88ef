#include "nlsq/bounded_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "nlsq/petsc_handles.h"

namespace homodyne::nlsq {

std::string SolverOptions::Validate() const {
  if (max_iterations < 1) return fmt::format("max_iterations must be ≥ 1 (got {})", max_iterations);
  for (auto [name, v] : {std::pair{"tolerance (ftol)", ftol}, {"xtol", xtol}, {"gtol", gtol}}) {
    if (!(v >= 0.0) || !std::isfinite(v)) return fmt::format("{} must be ≥ 0 (got {})", name, v);
  }
  return {};
}

std::string_view ToString(Termination t) {
  switch (t) {
    case Termination::kConverged:
      return "converged";
    case Termination::kMaxIterations:
      return "max_iter";
    case Termination::kLineSearchFailure:
      return "line_search_failure";
    case Termination::kNumericalFailure:
      return "numerical_failure";
    case Termination::kFailure:
      return "failed";
  }
  return "failed";
}

std::string SolverSummary::BriefReport() const {
  return fmt::format("{}: {} iterations, chi2 {:.10g} -> {:.10g}, |pg| {:.3g}, {} passes, {:.3f} s",
                     ToString(termination), iterations, initial_chi2, final_chi2,
                     projected_gradient_norm, evaluations + objective_evaluations, seconds);
}

namespace {

// State shared by the TAO callbacks of one solve.
struct SolveContext {
  LeastSquaresProblem* problem = nullptr;
  const SolverOptions* options = nullptr;
  const IterationCallback* callback = nullptr;
  std::vector<double> lower, upper;
  // Cache of the last evaluation with derivatives (TAO asks for the Hessian at the
  // point where it just evaluated f and g).
  std::vector<double> cached_x;
  NormalEquations cached;
  bool cache_valid = false;
  int evaluations = 0;
  int objective_evaluations = 0;
  int non_finite_evaluations = 0;  // trial points where chi2 or its gradient was NaN/Inf
  std::exception_ptr error;
  std::vector<double> chi2_history;
  // For the ftol rule: f at the current and the previous iteration.
  PetscInt previous_iteration = -1;
  double f_current = std::numeric_limits<double>::quiet_NaN();
  double f_before = std::numeric_limits<double>::quiet_NaN();
  const SolverStart* start = nullptr;
  bool stop_now = false;
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

double ProjectedGradientNorm(const std::vector<double>& x, const std::vector<double>& g,
                             const std::vector<double>& lo, const std::vector<double>& hi,
                             bool inf_norm) {
  double acc = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double gi = g[i];
    if (x[i] <= lo[i] && gi > 0) gi = 0;  // descent would leave the box
    if (x[i] >= hi[i] && gi < 0) gi = 0;
    acc = inf_norm ? std::max(acc, std::abs(gi)) : acc + gi * gi;
  }
  return inf_norm ? acc : std::sqrt(acc);
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

// TAO's default test, plus homodyne's relative χ² (ftol) and relative step (xtol) rules
// and a gradient test on the projected gradient (gtol); these also at the iteration limit.
PetscErrorCode ConvergenceTest(Tao tao, void* raw) {
  auto& ctx = *static_cast<SolveContext*>(raw);
  if (ctx.stop_now) {
    PetscCall(TaoSetConvergedReason(tao, TAO_DIVERGED_USER));
    return 0;
  }
  PetscCall(TaoDefaultConvergenceTest(tao, nullptr));
  TaoConvergedReason reason;
  PetscCall(TaoGetConvergedReason(tao, &reason));
  // At the iteration limit the rules below still run and win: a solve capped at the
  // iteration where it converges is converged (checkpoint segments of one iteration were
  // otherwise never seen to converge).
  if (reason != TAO_CONTINUE_ITERATING && reason != TAO_DIVERGED_MAXITS) return 0;
  PetscInt it = 0;
  PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
  PetscCall(TaoGetSolutionStatus(tao, &it, &f, &gnorm, &cnorm, &xdiff, &reason));
  if (it == 0) {
    ctx.previous_iteration = 0;
    ctx.f_current = f;
    return 0;
  }
  Vec X;
  PetscCall(TaoGetSolution(tao, &X));
  const std::vector<double> x = ToStd(X);
  double xnorm = 0;
  for (double v : x) xnorm += v * v;
  xnorm = std::sqrt(xnorm);
  const SolverOptions& o = *ctx.options;
  if (ctx.cache_valid && ctx.cached_x == x) {
    const double pg = ProjectedGradientNorm(x, ctx.cached.gradient, ctx.lower, ctx.upper, true);
    if (pg <= o.gtol * std::max(f, 1.0)) {
      PetscCall(TaoSetConvergedReason(tao, TAO_CONVERGED_GATOL));
      return 0;
    }
  }
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
  const int offset = ctx.start->iteration_offset;
  // A continuation's iteration 0 is the previous solve's last iteration.
  if (it == 0 && offset > 0) return 0;
  ctx.chi2_history.push_back(2.0 * f);
  if (*ctx.callback || ctx.start->stop) {
    try {
      if (*ctx.callback) (*ctx.callback)({static_cast<int>(it) + offset, 2.0 * f, gnorm, xdiff});
      if (ctx.start->stop && ctx.start->stop(static_cast<int>(it) + offset)) ctx.stop_now = true;
    } catch (...) {
      ctx.error = std::current_exception();
      return PETSC_ERR_USER;
    }
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
      return Termination::kLineSearchFailure;
    case TAO_DIVERGED_NAN:
      return Termination::kNumericalFailure;
    default:
      return Termination::kFailure;
  }
}

}  // namespace

SolverSummary SolveBounded(LeastSquaresProblem& problem, std::vector<double> x0,
                           const std::vector<double>& lower, const std::vector<double>& upper,
                           const SolverOptions& options, const IterationCallback& callback,
                           const SolverStart& start) {
  using petsc::Check;
  const auto t_start = std::chrono::steady_clock::now();
  const int n = problem.num_parameters();
  if (auto msg = options.Validate(); !msg.empty()) ThrowBadInput(msg, {}, "optimization.nlsq");
  HOMODYNE_CHECK(static_cast<int>(x0.size()) == n && static_cast<int>(lower.size()) == n &&
                     static_cast<int>(upper.size()) == n,
                 "parameter, bound and problem sizes differ");
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(x0[i]) || !std::isfinite(lower[i]) || !std::isfinite(upper[i])) {
      ThrowBadInput(
          fmt::format("parameter {} has a non-finite start or bound: start {}, bounds "
                      "[{}, {}] (expected finite numbers)",
                      i, x0[i], lower[i], upper[i]));
    }
    if (!(lower[i] < upper[i])) {
      ThrowBadInput(
          fmt::format("bounds of parameter {} are empty: [{}, {}]", i, lower[i], upper[i]));
    }
    x0[i] = std::clamp(x0[i], lower[i], upper[i]);
  }

  SolveContext ctx;
  ctx.problem = &problem;
  ctx.options = &options;
  ctx.callback = &callback;
  ctx.lower = lower;
  ctx.upper = upper;
  ctx.start = &start;
  if (start.equations_at_x0 != nullptr) {
    ctx.cached = *start.equations_at_x0;
    ctx.cached_x = x0;
    ctx.cache_valid = true;
  }

  petsc::VecHandle x, xl, xu;
  petsc::MatHandle hess;
  petsc::TaoHandle tao;
  Check(VecCreateSeq(PETSC_COMM_SELF, n, x.out()), "VecCreateSeq");
  Check(VecDuplicate(x.get(), xl.out()), "VecDuplicate");
  Check(VecDuplicate(x.get(), xu.out()), "VecDuplicate");
  {
    PetscScalar *px = nullptr, *pl = nullptr, *pu = nullptr;
    VecGetArray(x.get(), &px);
    VecGetArray(xl.get(), &pl);
    VecGetArray(xu.get(), &pu);
    for (int i = 0; i < n; ++i) {
      px[i] = x0[static_cast<std::size_t>(i)];
      pl[i] = lower[static_cast<std::size_t>(i)];
      pu[i] = upper[static_cast<std::size_t>(i)];
    }
    VecRestoreArray(x.get(), &px);
    VecRestoreArray(xl.get(), &pl);
    VecRestoreArray(xu.get(), &pu);
  }
  Check(MatCreateSeqDense(PETSC_COMM_SELF, n, n, nullptr, hess.out()), "MatCreateSeqDense");
  Check(TaoCreate(PETSC_COMM_SELF, tao.out()), "TaoCreate");
  Check(TaoSetType(tao.get(), options.tao_type.c_str()), "TaoSetType");
  Check(TaoSetSolution(tao.get(), x.get()), "TaoSetSolution");
  Check(TaoSetVariableBounds(tao.get(), xl.get(), xu.get()), "TaoSetVariableBounds");
  Check(TaoSetObjective(tao.get(), ObjectiveCallback, &ctx), "TaoSetObjective");
  Check(TaoSetObjectiveAndGradient(tao.get(), nullptr, ObjectiveGradientCallback, &ctx),
        "TaoSetObjectiveAndGradient");
  Check(TaoSetHessian(tao.get(), hess.get(), hess.get(), HessianCallback, &ctx), "TaoSetHessian");
  // Our own tests decide convergence; TAO's absolute/relative gradient tests are off.
  Check(TaoSetTolerances(tao.get(), 0.0, 0.0, 0.0), "TaoSetTolerances");
  Check(TaoSetMaximumIterations(tao.get(), options.max_iterations), "TaoSetMaximumIterations");
  Check(TaoSetConvergenceTest(tao.get(), ConvergenceTest, &ctx), "TaoSetConvergenceTest");
  Check(TaoSetMonitor(tao.get(), MonitorCallback, &ctx, nullptr), "TaoSetMonitor");
  // Command-line options (-tao_type, -tao_max_it, -tao_monitor, ...) override; every
  // rank parses the same options, so every rank runs the same algorithm. A continuation
  // starts from the saved trust radius (unless the command line chose an init type).
  if (start.stateless_preconditioner) {
    KSP ksp = nullptr;
    PC pc = nullptr;
    Check(TaoGetKSP(tao.get(), &ksp), "TaoGetKSP");
    if (ksp != nullptr) {
      Check(KSPGetPC(ksp, &pc), "KSPGetPC");
      Check(PCSetType(pc, PCJACOBI), "PCSetType");
    }
  }
  bool set_init_type = false;
  if (start.trust_radius > 0.0) {
    Check(TaoSetInitialTrustRegionRadius(tao.get(), start.trust_radius),
          "TaoSetInitialTrustRegionRadius");
    PetscBool given = PETSC_FALSE;
    Check(PetscOptionsHasName(nullptr, nullptr, "-tao_bnk_init_type", &given),
          "PetscOptionsHasName");
    if (!given) {
      Check(PetscOptionsSetValue(nullptr, "-tao_bnk_init_type", "constant"),
            "PetscOptionsSetValue");
      set_init_type = true;
    }
  }
  const PetscErrorCode from_options = TaoSetFromOptions(tao.get());
  if (set_init_type) PetscOptionsClearValue(nullptr, "-tao_bnk_init_type");
  Check(from_options, "TaoSetFromOptions");
  if (!options.print_petsc_monitors) {
    // Same algorithm everywhere, output once: drop -tao_monitor & co. on this rank but
    // keep our own monitor (it records the χ² history).
    Check(TaoCancelMonitors(tao.get()), "TaoCancelMonitors");
    Check(TaoSetMonitor(tao.get(), MonitorCallback, &ctx, nullptr), "TaoSetMonitor");
  }

  PetscErrorCode solve_code = 0;
  {
    petsc::QuietErrors quiet;
    solve_code = TaoSolve(tao.get());
  }
  if (ctx.error) std::rethrow_exception(ctx.error);
  Check(solve_code, "TaoSolve");

  SolverSummary s;
  TaoConvergedReason reason;
  PetscInt its = 0;
  PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
  Check(TaoGetSolutionStatus(tao.get(), &its, &f, &gnorm, &cnorm, &xdiff, &reason),
        "TaoGetSolutionStatus");
  s.termination = MapReason(reason);
  s.message = TaoConvergedReasons[reason];
  s.stopped = ctx.stop_now;
  Check(TaoGetCurrentTrustRegionRadius(tao.get(), &s.trust_radius),
        "TaoGetCurrentTrustRegionRadius");
  if (ctx.non_finite_evaluations > 0) {
    s.message += fmt::format(
        "; {} trial point(s) gave NaN/Inf chi2 or gradient and were rejected (extreme "
        "parameter values)",
        ctx.non_finite_evaluations);
  }
  s.x = ToStd(x.get());
  for (int i = 0; i < n; ++i) {  // guard against round-off outside the box
    s.x[static_cast<std::size_t>(i)] =
        std::clamp(s.x[static_cast<std::size_t>(i)], lower[static_cast<std::size_t>(i)],
                   upper[static_cast<std::size_t>(i)]);
  }
  s.final_equations = EvaluateFull(ctx, s.x);
  s.final_chi2 = s.final_equations.chi2;
  bool finite = std::isfinite(s.final_chi2);
  for (double g : s.final_equations.gradient) finite = finite && std::isfinite(g);
  if (!finite) {
    // NaN/Inf from the model (extreme parameters) or the data (overflowing values): never
    // reported as a fit. Steps into such regions were already rejected (f = +inf).
    s.termination = Termination::kNumericalFailure;
    s.message = fmt::format(
        "numerical failure: chi2 = {} or its gradient is not finite at the {} point (NaN/Inf "
        "from extreme parameter values or data values; check initial values, bounds and the "
        "data scale)",
        s.final_chi2, its == 0 ? "starting" : "final");
  }
  s.initial_chi2 = ctx.chi2_history.empty() ? s.final_chi2 : ctx.chi2_history.front();
  s.chi2_history = ctx.chi2_history;
  s.projected_gradient_norm =
      ProjectedGradientNorm(s.x, s.final_equations.gradient, lower, upper, false);
  s.iterations = static_cast<int>(its);
  s.evaluations = ctx.evaluations;
  s.objective_evaluations = ctx.objective_evaluations;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double tol = 1e-9 * (1.0 + std::max(std::abs(lower[k]), std::abs(upper[k])));
    s.at_lower_bound.push_back(s.x[k] - lower[k] <= tol);
    s.at_upper_bound.push_back(upper[k] - s.x[k] <= tol);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return s;
}

}  // namespace homodyne::nlsq
