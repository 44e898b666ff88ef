// The TAO type "homodyne_lm": TaoSolve runs our Levenberg–Marquardt loop.
//
// Registered with TaoRegister rather than run as a TAOSHELL: a registered type has a name of
// its own (-tao_view says homodyne_lm, not shell) and its own view routine, which reports the
// loop's damping and restarts. Both need TAO's private header (the type's operations table);
// only ops, data, niter and printreason are touched.
//
// How the loop's endings read as TAO's converged reasons:
//   optimality test (optimality.h: relative, column cosines or Gauss–Newton decrement)
//                                   CONVERGED_GRTOL
//   -tao_gatol / -tao_grtol given   CONVERGED_GATOL / CONVERGED_GRTOL (labelled by the
//                                   optimality test afterwards: a stall unless it holds)
//   iteration limit                 DIVERGED_MAXITS
//   no acceptable step after the damping restarts (a stall)
//                                   DIVERGED_TR_REDUCTION (the damping is the loop's trust
//                                   region, and it cannot be reduced further)
//   NaN/Inf at the start            DIVERGED_NAN
// The loop has no step-size stop of its own (a negligible step restarts the damping), so
// CONVERGED_STEPTOL never appears. A stop request (signal, checkpoint) ends the solve with
// an exception, not a reason. The label in the outputs is SolveBounded's, from the
// optimality test at the answer; the reason says only why the iteration ended.
#include "petsc/tao_lm.h"

#include <petsc/private/taoimpl.h>

#include <cmath>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "core/errors.h"
#include "petsc/petsc_handles.h"

namespace homodyne::lsq::detail {
namespace {

// One TaoSolve of the type: the loop's inputs, then its answer.
struct LmRun {
  LeastSquaresProblem* problem = nullptr;
  const std::vector<double>* x0 = nullptr;
  const std::vector<double>* lower = nullptr;
  const std::vector<double>* upper = nullptr;
  const SolverOptions* options = nullptr;
  const IterationCallback* callback = nullptr;
  const SolverHooks* hooks = nullptr;
  // The reason of a -tao_gatol / -tao_grtol stop (TAO_CONTINUE_ITERATING: none).
  TaoConvergedReason stop_reason = TAO_CONTINUE_ITERATING;
  bool finished = false;
  SolverSummary summary;
  std::exception_ptr error;
};

void CopyTo(Vec v, const std::vector<double>& x) {
  PetscScalar* a = nullptr;
  petsc::Check(VecGetArray(v, &a), "VecGetArray");
  for (std::size_t i = 0; i < x.size(); ++i) a[i] = x[i];
  petsc::Check(VecRestoreArray(v, &a), "VecRestoreArray");
}

TaoConvergedReason ReasonOf(const SolverSummary& s, TaoConvergedReason stop_reason) {
  switch (s.termination) {
    case Termination::kConverged:
      return stop_reason != TAO_CONTINUE_ITERATING ? stop_reason : TAO_CONVERGED_GRTOL;
    case Termination::kMaxIterations:
      return TAO_DIVERGED_MAXITS;
    case Termination::kStalled:
      return TAO_DIVERGED_TR_REDUCTION;
    case Termination::kNumericalFailure:
      return TAO_DIVERGED_NAN;
    case Termination::kFailure:
      break;
  }
  return TAO_DIVERGED_USER;
}

// TAO's gradient tests as the loop's extra stop, on f = ½χ² and the projected Jᵀr (the
// gradient of f), as TAO's default test reads them; a tolerance of 0 is off.
std::string GradientStop(LmRun& run, const SolverState& st, double gatol, double grtol) {
  const double g = ProjectedGradientNorm(st.x, st.equations.gradient, *run.lower, *run.upper);
  const double f = 0.5 * st.equations.chi2;
  if (gatol > 0.0 && g <= gatol) {
    run.stop_reason = TAO_CONVERGED_GATOL;
    return fmt::format("-tao_gatol: projected gradient norm {:.3g} <= {:.3g}", g, gatol);
  }
  if (grtol > 0.0 && f != 0.0 && g / std::abs(f) <= grtol) {
    run.stop_reason = TAO_CONVERGED_GRTOL;
    return fmt::format("-tao_grtol: projected gradient norm / (chi2/2) {:.3g} <= {:.3g}",
                       g / std::abs(f), grtol);
  }
  return {};
}

// The loop with TAO's limits, each iterate shown to TAO's monitors and history.
void RunLoop(Tao tao, LmRun& run) {
  PetscInt max_it = 0;
  PetscReal gatol = 0, grtol = 0, gttol = 0;
  petsc::Check(TaoGetMaximumIterations(tao, &max_it), "TaoGetMaximumIterations");
  petsc::Check(TaoGetTolerances(tao, &gatol, &grtol, &gttol), "TaoGetTolerances");
  SolverOptions options = *run.options;
  options.max_iterations = static_cast<int>(std::max<PetscInt>(max_it, 0));
  LmObserver observer;
  observer.at_iterate = [&](const SolverState& st, double step_norm) {
    const double f = 0.5 * st.equations.chi2;
    const double g = ProjectedGradientNorm(st.x, st.equations.gradient, *run.lower, *run.upper);
    CopyTo(tao->solution, st.x);
    tao->niter = st.iteration;
    petsc::Check(TaoLogConvergenceHistory(tao, f, g, 0.0, st.iteration),
                 "TaoLogConvergenceHistory");
    petsc::Check(TaoMonitor(tao, st.iteration, f, g, 0.0, step_norm), "TaoMonitor");
  };
  if (gatol > 0.0 || grtol > 0.0) {
    observer.stop = [&](const SolverState& st) { return GradientStop(run, st, gatol, grtol); };
  }
  run.summary = SolveLevenbergMarquardt(*run.problem, *run.x0, *run.lower, *run.upper, options,
                                        *run.callback, *run.hooks, observer);
  run.finished = true;
  if (!run.summary.x.empty()) CopyTo(tao->solution, run.summary.x);
  tao->niter = std::max(run.summary.iterations, 0);
  petsc::Check(TaoSetConvergedReason(tao, ReasonOf(run.summary, run.stop_reason)),
               "TaoSetConvergedReason");
}

PetscErrorCode SolveLm(Tao tao) {
  auto* run = static_cast<LmRun*>(tao->data);
  if (run == nullptr) return PETSC_ERR_ORDER;  // the type was set outside this file
  try {
    RunLoop(tao, *run);
  } catch (...) {
    run->error = std::current_exception();
    return PETSC_ERR_USER;
  }
  return 0;
}

PetscErrorCode ViewLm(Tao tao, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscCall(
      PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  const auto* run = static_cast<const LmRun*>(tao->data);
  if (!ascii || run == nullptr) return 0;
  const SolverOptions& o = *run->options;
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "homodyne Levenberg-Marquardt on the reduced normal equations, replicated\n"));
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "optimality test: max column cosine <= gtol %g or Gauss-Newton decrement <= ftol %g\n",
      o.gtol, o.ftol));
  PetscCall(PetscViewerASCIIPrintf(viewer, "negligible step: xtol %g\n", o.xtol));
  if (run->finished) {
    const SolverState& st = run->summary.final_state;
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "final damping lambda %g, damping restarts %d, data passes %d\n", st.lambda,
        st.recoveries, st.evaluations + st.objective_evaluations));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  return 0;
}

// The run belongs to SolveTaoLevenbergMarquardt; the type only forgets it.
PetscErrorCode DestroyLm(Tao tao) {
  tao->data = nullptr;
  return 0;
}

PetscErrorCode CreateLm(Tao tao) {
  tao->ops->solve = SolveLm;
  tao->ops->view = ViewLm;
  tao->ops->destroy = DestroyLm;
  tao->data = nullptr;
  return 0;
}

// The type's object: the start point, our limits, then the command line's options. On a
// rank that must not print (print_petsc_monitors false) the monitors and the converged
// reason are dropped after TaoSetFromOptions, and the object reads an empty options
// database from then on, so the -tao_view* that TaoSolve looks up at its end print nothing.
void Configure(Tao tao, Vec x, LmRun& run, petsc::OptionsHandle& quiet) {
  using petsc::Check;
  Check(TaoSetType(tao, kTaoLmType), "TaoSetType");
  tao->data = &run;
  Check(TaoSetSolution(tao, x), "TaoSetSolution");
  // TAO's gradient tests are off unless given on the command line: the loop's own
  // optimality test decides.
  Check(TaoSetTolerances(tao, 0.0, 0.0, 0.0), "TaoSetTolerances");
  Check(TaoSetMaximumIterations(tao, run.options->max_iterations), "TaoSetMaximumIterations");
  Check(TaoSetFromOptions(tao), "TaoSetFromOptions");
  TaoType type = nullptr;
  Check(TaoGetType(tao, &type), "TaoGetType");
  if (type == nullptr || std::string(type) != kTaoLmType) {
    ThrowBadInput(fmt::format(
        "-tao_type {} on the command line: the default local solver "
        "(optimization.nlsq.local_solver: lm) runs as the TAO type {}; choose TAO's own "
        "methods with optimization.nlsq.local_solver (bnls, bntr, bntl)",
        type != nullptr ? type : "?", kTaoLmType));
  }
  if (!run.options->print_petsc_monitors) {
    Check(TaoCancelMonitors(tao), "TaoCancelMonitors");
    tao->printreason = PETSC_FALSE;
    Check(PetscOptionsCreate(quiet.out()), "PetscOptionsCreate");
    Check(PetscObjectSetOptions(reinterpret_cast<PetscObject>(tao), quiet.get()),
          "PetscObjectSetOptions");
  }
}

}  // namespace

SolverSummary SolveTaoLevenbergMarquardt(
    LeastSquaresProblem& problem, const std::vector<double>& x0, const std::vector<double>& lower,
    const std::vector<double>& upper, const SolverOptions& options,
    const IterationCallback& callback, const SolverHooks& hooks) {
  using petsc::Check;
  PetscBool initialized = PETSC_FALSE;
  PetscInitialized(&initialized);
  HOMODYNE_CHECK(initialized == PETSC_TRUE,
                 "the Levenberg-Marquardt solve runs under TAO: initialise PETSc first (a "
                 "homodyne::Session)");
  // Registering again replaces the entry: no state to keep across PETSc's lifetimes.
  Check(TaoRegister(kTaoLmType, CreateLm), "TaoRegister");
  LmRun run;
  run.problem = &problem;
  run.x0 = &x0;
  run.lower = &lower;
  run.upper = &upper;
  run.options = &options;
  run.callback = &callback;
  run.hooks = &hooks;
  petsc::VecHandle x;
  Check(VecCreateSeq(PETSC_COMM_SELF, static_cast<PetscInt>(x0.size()), x.out()), "VecCreateSeq");
  CopyTo(x.get(), hooks.resume != nullptr ? hooks.resume->x : x0);
  petsc::OptionsHandle quiet;  // outlives the Tao that reads it
  petsc::TaoHandle tao;
  Check(TaoCreate(PETSC_COMM_SELF, tao.out()), "TaoCreate");
  Configure(tao.get(), x.get(), run, quiet);
  PetscErrorCode code = 0;
  {
    petsc::QuietErrors quiet_errors;
    code = TaoSolve(tao.get());
  }
  if (run.error) std::rethrow_exception(run.error);
  Check(code, "TaoSolve");
  HOMODYNE_CHECK(run.finished, "TaoSolve did not run the Levenberg-Marquardt loop");
  return std::move(run.summary);
}

}  // namespace homodyne::lsq::detail
