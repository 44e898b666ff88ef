// libhomodyne_petsc.so: everything of homodyne that calls PETSc, loaded with dlopen only when
// PETSc is asked for (src/core/petsc_module.h). Its entry points are the only symbols it
// exports; it links PETSc, MPI and fmt, and reaches homodyne's own code only through the
// PetscModuleHost table each solve hands it (the loop, the optimality measures, the method's
// name), so the process holds one copy of the Levenberg–Marquardt loop.
#include <petscsys.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"
#include "lsq/bounded_solver.h"
#include "petsc/tao_lm.h"

#define HOMODYNE_PETSC_ENTRY extern "C" __attribute__((visibility("default")))

namespace homodyne::lsq {
namespace {
const detail::PetscModuleHost* g_host = nullptr;  // set by each solve entry, main thread only

const detail::PetscModuleHost& Host() {
  HOMODYNE_CHECK(g_host != nullptr, "the PETSc module was called outside a solve entry");
  return *g_host;
}
}  // namespace

// The host's functions under their own names, for tao_lm.cpp and tao_solver.cpp.
std::string_view ToString(LocalMethod method) { return Host().method_name(method); }
OptimalityMeasure MeasureOptimality(const std::vector<double>& x, const NormalEquations& eq,
                                    const std::vector<double>& lower,
                                    const std::vector<double>& upper) {
  return Host().measure_optimality(x, eq, lower, upper);
}

namespace detail {
SolverSummary SolveLevenbergMarquardt(LeastSquaresProblem& problem, const std::vector<double>& x0,
                                      const std::vector<double>& lower,
                                      const std::vector<double>& upper,
                                      const SolverOptions& options,
                                      const IterationCallback& callback, const SolverHooks& hooks,
                                      const LmObserver& observer) {
  return Host().solve_lm(problem, x0, lower, upper, options, callback, hooks, observer);
}
double ProjectedGradientNorm(const std::vector<double>& x, const std::vector<double>& g,
                             const std::vector<double>& lower, const std::vector<double>& upper) {
  return Host().projected_gradient_norm(x, g, lower, upper);
}
}  // namespace detail

}  // namespace homodyne::lsq

namespace {

// PetscInitialize's arguments: argv[0], PETSc's signal handler off (homodyne's own handlers
// checkpoint on SIGTERM/SIGUSR1), then the options given.
struct PetscArgv {
  explicit PetscArgv(const std::vector<std::string>& args) {
    storage.emplace_back("homodyne");
    storage.emplace_back("-no_signal_handler");
    storage.insert(storage.end(), args.begin(), args.end());
    for (auto& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    argc = static_cast<int>(storage.size());
    argv = pointers.data();
  }
  std::vector<std::string> storage;
  std::vector<char*> pointers;
  int argc = 0;
  char** argv = nullptr;
};

PetscArgv* g_argv = nullptr;  // PETSc keeps pointers into argv until PetscFinalize

}  // namespace

HOMODYNE_PETSC_ENTRY void homodyne_petsc_start(const std::vector<std::string>* args,
                                               MPI_Comm comm) {
  delete g_argv;
  g_argv = new PetscArgv(*args);
  PETSC_COMM_WORLD = comm;
  if (PetscInitialize(&g_argv->argc, &g_argv->argv, nullptr, nullptr) != 0) {
    homodyne::ThrowInternal("PetscInitialize failed");
  }
}

HOMODYNE_PETSC_ENTRY bool homodyne_petsc_running() {
  PetscBool initialized = PETSC_FALSE;
  PetscBool finalized = PETSC_FALSE;
  PetscInitialized(&initialized);
  PetscFinalized(&finalized);
  return initialized == PETSC_TRUE && finalized == PETSC_FALSE;
}

HOMODYNE_PETSC_ENTRY void homodyne_petsc_stop() { PetscFinalize(); }

HOMODYNE_PETSC_ENTRY homodyne::lsq::SolverSummary homodyne_petsc_solve_tao(
    const homodyne::lsq::detail::PetscModuleHost& host, homodyne::lsq::LeastSquaresProblem& problem,
    const std::vector<double>& x0, const std::vector<double>& lower,
    const std::vector<double>& upper, const homodyne::lsq::SolverOptions& options,
    const homodyne::lsq::IterationCallback& callback, const homodyne::lsq::SolverHooks& hooks) {
  homodyne::lsq::g_host = &host;
  return homodyne::lsq::detail::SolveTao(problem, x0, lower, upper, options, callback, hooks);
}

HOMODYNE_PETSC_ENTRY homodyne::lsq::SolverSummary homodyne_petsc_solve_tao_lm(
    const homodyne::lsq::detail::PetscModuleHost& host, homodyne::lsq::LeastSquaresProblem& problem,
    const std::vector<double>& x0, const std::vector<double>& lower,
    const std::vector<double>& upper, const homodyne::lsq::SolverOptions& options,
    const homodyne::lsq::IterationCallback& callback, const homodyne::lsq::SolverHooks& hooks) {
  homodyne::lsq::g_host = &host;
  return homodyne::lsq::detail::SolveTaoLevenbergMarquardt(problem, x0, lower, upper, options,
                                                           callback, hooks);
}
