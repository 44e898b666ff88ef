// Bounded nonlinear least squares through PETSc/TAO, replicated on every rank.
//
// Every rank builds the same TAO solver on PETSC_COMM_SELF over the small parameter
// vector; objective, gradient and Gauss–Newton Hessian come from the problem's reduced
// normal equations (one data pass gives all three, cached by parameter value). No
// N×P Jacobian is ever formed. See docs/architecture.md ("NLSQ") for why this pattern
// was chosen over TAOBRGN.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "nlsq/least_squares_problem.h"

namespace homodyne::nlsq {

struct SolverOptions {
  int max_iterations = 1000;  // optimization.nlsq.max_iterations
  double ftol = 1e-8;         // relative χ² decrease between iterations (tolerance)
  double xtol = 1e-8;         // relative step ‖Δx‖ ≤ xtol·(xtol + ‖x‖)
  double gtol = 1e-8;         // ‖projected gradient‖∞ ≤ gtol·max(χ²/2, 1)
  // TAO type unless overridden on the command line (-tao_type); "bnls" (bounded
  // Newton line search on the Gauss–Newton Hessian), "bntr", "bntl", "bqnls".
  std::string tao_type = "bnls";
  // Whether PETSc's own monitors from the command line (-tao_monitor, ...) print on this
  // rank; set it to (rank == 0) so a 64-rank job prints them once.
  bool print_petsc_monitors = true;
  // Returns an empty string if valid, else a message naming the field and the rule.
  std::string Validate() const;
};

enum class Termination {
  kConverged,      // a tolerance was met; parameters updated
  kMaxIterations,  // iteration limit; parameters are the last accepted point
  kLineSearchFailure,
  kNumericalFailure,  // NaN/Inf in χ² or derivatives
  kFailure,
};
std::string_view ToString(Termination t);

struct IterationInfo {
  int iteration = 0;
  double chi2 = 0.0;
  double gradient_norm = 0.0;  // ‖projected gradient‖₂
  double step_norm = 0.0;
};

struct SolverSummary {
  Termination termination = Termination::kFailure;
  std::string message = "Solve was not called.";
  std::vector<double> x;  // final parameters (inside the bounds)
  double initial_chi2 = -1.0;
  double final_chi2 = -1.0;
  NormalEquations final_equations;  // at x
  double projected_gradient_norm = -1.0;
  int iterations = -1;
  int evaluations = 0;            // data passes with derivatives
  int objective_evaluations = 0;  // data passes for χ² only
  double seconds = 0.0;
  std::vector<double> chi2_history;  // one entry per accepted iteration (incl. start)
  std::vector<bool> at_lower_bound, at_upper_bound;
  double trust_radius = 0.0;  // TAO's trust radius at the end (continuation state)
  bool stopped = false;       // SolverStart::stop asked to stop (x is the last accepted point)

  bool IsUsable() const {
    return termination == Termination::kConverged || termination == Termination::kMaxIterations;
  }
  std::string BriefReport() const;
};

// Called on every rank after each iteration (print on rank 0 only).
using IterationCallback = std::function<void(const IterationInfo&)>;

// How a solve continues an earlier one (checkpoint segments, resume); the defaults are a
// fresh solve. A continuation restarts TAO at x0 with the saved trust radius, so two
// runs continued from the same state follow the same path.
struct SolverStart {
  int iteration_offset = 0;   // iterations already done (callback numbering, history)
  double trust_radius = 0.0;  // > 0: TAO's initial trust radius (-tao_bnk_init_type constant)
  const NormalEquations* equations_at_x0 = nullptr;  // known equations at x0: saves a pass
  // Jacobi instead of TAO's default LMVM preconditioner for the Newton system. LMVM
  // accumulates history that a restart loses (a restarted solve then takes different,
  // often much poorer steps); with Jacobi the solver's whole state is x, the trust radius
  // and the equations at x, so a restart repeats the uninterrupted path exactly.
  bool stateless_preconditioner = false;
  // Called on every rank after each accepted iteration with the overall iteration
  // number; true stops the solve there (it must return the same on every rank).
  std::function<bool(int iteration)> stop;
};

SolverSummary SolveBounded(LeastSquaresProblem& problem, std::vector<double> x0,
                           const std::vector<double>& lower, const std::vector<double>& upper,
                           const SolverOptions& options, const IterationCallback& callback = {},
                           const SolverStart& start = {});

}  // namespace homodyne::nlsq
