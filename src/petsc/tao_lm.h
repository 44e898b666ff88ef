// Our Levenberg–Marquardt (lm_solver.cpp) as a TAO type, "homodyne_lm", so that TaoSolve
// drives the default local solve and a PETSc user's options reach it: -tao_monitor (and the
// other monitors), -tao_view, -tao_converged_reason, -tao_max_it, -tao_gatol, -tao_grtol.
//
// The type's solve routine runs the same loop as detail::SolveLevenbergMarquardt; TAO only
// watches it, so the iterates, the checkpointed state and the answer have the same bits as
// the loop run alone (tests/mpi/nlsq_solver_test.cpp).
//
// Precedence: the options (optimization.nlsq.max_iterations, the optimality tolerances) are
// the defaults; -tao_max_it given on the command line replaces max_iterations (it counts the
// accepted steps of the whole solve, a resumed one's earlier steps included), and -tao_gatol
// or -tao_grtol (off unless given) add TAO's absolute or relative gradient test on
// f = ½χ² and the projected gradient Jᵀr. A solve such a test ends is labelled by the
// optimality test all the same (a stall unless that holds).
#pragma once

#include <vector>

#include "lsq/bounded_solver.h"

namespace homodyne::lsq::detail {

// The TAO type name (-tao_view shows it; -tao_type must leave it).
inline constexpr const char* kTaoLmType = "homodyne_lm";

// TAO's bounded Newton methods (bnls, bntr, bntl) on the Gauss–Newton Hessian
// (tao_solver.cpp). PETSc must be initialised.
SolverSummary SolveTao(LeastSquaresProblem& problem, const std::vector<double>& x0,
                       const std::vector<double>& lower, const std::vector<double>& upper,
                       const SolverOptions& options, const IterationCallback& callback,
                       const SolverHooks& hooks);

// The lm engine of SolveBounded, through TaoSolve. PETSc must be initialised.
SolverSummary SolveTaoLevenbergMarquardt(
    LeastSquaresProblem& problem, const std::vector<double>& x0, const std::vector<double>& lower,
    const std::vector<double>& upper, const SolverOptions& options,
    const IterationCallback& callback, const SolverHooks& hooks);

}  // namespace homodyne::lsq::detail
