// The replicated TAO solver on a distributed test problem y = a·exp(−b·t) + c.
#include <gtest/gtest.h>
#include <petscsys.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "core/random.h"
#include "lsq/bounded_solver.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/nlsq_checkpoint.h"
#include "parallel/tile_sum.h"

namespace homodyne::lsq {
namespace {

using homodyne::testing::MpiTempDir;

constexpr int kPoints = 20000;
constexpr int kTiles = 64;

// Data split into tiles; each rank owns a contiguous tile range of `comm`.
class ExpDecayProblem : public LeastSquaresProblem {
 public:
  ExpDecayProblem(const Comm& comm, double noise) : comm_(comm) {
    CounterRng rng(99, 0, 0);
    for (int p = 0; p < kPoints; ++p) {
      const double t = 4.0 * p / kPoints;
      t_.push_back(t);
      y_.push_back(2.5 * std::exp(-1.3 * t) + 0.4 + noise * rng.Normal());
    }
    begin_ = kTiles * comm.rank() / comm.size();
    end_ = kTiles * (comm.rank() + 1) / comm.size();
  }
  int num_parameters() const override { return 3; }
  void Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) override {
    const std::size_t n = 3;
    const std::size_t width = with_derivatives ? 1 + n + n * n : 1;
    auto tile = [&](std::int64_t k, std::span<double> acc) {
      for (std::int64_t p = kPoints * k / kTiles; p < kPoints * (k + 1) / kTiles; ++p) {
        const double e = std::exp(-x[1] * t_[static_cast<std::size_t>(p)]);
        const double r = y_[static_cast<std::size_t>(p)] - (x[0] * e + x[2]);
        acc[0] += r * r;
        if (!with_derivatives) continue;
        const double j[3] = {-e, x[0] * t_[static_cast<std::size_t>(p)] * e, -1.0};  // ∂r/∂x
        for (std::size_t a = 0; a < n; ++a) {
          acc[1 + a] += j[a] * r;
          for (std::size_t b = 0; b < n; ++b) acc[1 + n + a * n + b] += j[a] * j[b];
        }
      }
    };
    const auto sum = ReproducibleTileSum(comm_, kTiles, begin_, end_, width, tile);
    out.chi2 = sum[0];
    out.n_points = kPoints;
    if (with_derivatives) {
      out.gradient.assign(sum.begin() + 1, sum.begin() + 1 + static_cast<long>(n));
      out.hessian.assign(sum.begin() + 1 + static_cast<long>(n), sum.end());
    }
  }
  double ZeroModelChi2(std::span<const double>) override {
    double s = 0.0;
    for (double y : y_) s += y * y;
    return s;
  }

 private:
  const Comm& comm_;
  std::vector<double> t_, y_;
  std::int64_t begin_ = 0, end_ = 0;
};

TEST(BoundedSolver, RecoversNoiseFreeParameters) {
  ExpDecayProblem problem(testing::TestEnvironment().world(), 0.0);
  SolverOptions options;
  options.print_petsc_monitors = testing::TestEnvironment().rank() == 0;
  options.ftol = options.xtol = 1e-14;
  options.gtol = 1e-12;
  auto s = SolveBounded(problem, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 5, 1}, options);
  ASSERT_TRUE(s.IsUsable()) << s.BriefReport();
  EXPECT_EQ(s.termination, Termination::kConverged) << s.BriefReport();
  EXPECT_NEAR(s.x[0], 2.5, 1e-8);
  EXPECT_NEAR(s.x[1], 1.3, 1e-8);
  EXPECT_NEAR(s.x[2], 0.4, 1e-8);
  EXPECT_LT(s.final_chi2, 1e-12);
  EXPECT_LT(s.iterations, 50);
}

TEST(BoundedSolver, StopsAtAnActiveBoundWithKktGradient) {
  ExpDecayProblem problem(testing::TestEnvironment().world(), 0.01);
  SolverOptions options;
  auto s = SolveBounded(problem, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 0.8, 1}, options);
  ASSERT_TRUE(s.IsUsable()) << s.BriefReport();
  EXPECT_DOUBLE_EQ(s.x[1], 0.8);
  EXPECT_TRUE(s.at_upper_bound[1]);
  // Optimal at the upper bound: ∂(½χ²)/∂b < 0 holds b there, and the free parameters meet
  // the optimality test (their columns are orthogonal to the residual to 1e-4 or better).
  EXPECT_EQ(s.termination, Termination::kConverged) << s.BriefReport();
  EXPECT_LT(s.final_equations.gradient[1], 0.0);
  EXPECT_LE(s.optimality.decrement, options.ftol);
  EXPECT_LT(s.optimality.cosine, 1e-4);
  EXPECT_EQ(s.optimality.free_parameters, 2);
}

// The distributed solve equals a solve on COMM_SELF with all data, bit for bit.
TEST(BoundedSolver, DistributedEqualsSerialBitwise) {
  const Comm& world = testing::TestEnvironment().world();
  ExpDecayProblem distributed(world, 0.02);
  Comm self(MPI_COMM_SELF);
  ExpDecayProblem serial(self, 0.02);
  SolverOptions options;
  auto a = SolveBounded(distributed, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 5, 1}, options);
  auto b = SolveBounded(serial, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 5, 1}, options);
  ASSERT_EQ(a.x.size(), b.x.size());
  EXPECT_EQ(std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(double)), 0);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.final_chi2, b.final_chi2);
}

// Checkpoints never change the answer: at frequencies 1, 3 and 10 the solve takes the
// iterates of the solve without checkpoints, bit for bit, and a resume from any of the
// checkpoints written (the newest is kept) ends with the same bits too.
TEST(BoundedSolver, CheckpointsNeverChangeTheIterates) {
  const Comm& world = testing::TestEnvironment().world();
  ExpDecayProblem problem(world, 0.02);
  MpiTempDir dir(world, "nlsq_checkpoints", /*create=*/true);
  SolverOptions options;
  const SolverSummary plain =
      SolveBounded(problem, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 5, 1}, options);
  ASSERT_EQ(plain.termination, Termination::kConverged) << plain.BriefReport();
  ASSERT_GT(plain.iterations, 3);
  const auto run = [&](int frequency, bool resume, int max_iterations) {
    checkpoint::CheckpointSettings cs;
    cs.enabled = true;
    cs.resume = resume;
    cs.dir = dir.path() / std::to_string(frequency);
    cs.frequency = frequency;
    cs.keep_last = 100;
    cs.stop_on_signal = false;
    cs.config_description = "exp decay";
    SolverOptions o = options;
    o.max_iterations = max_iterations;
    return checkpoint::SolveWithCheckpoints(world, problem, {1.0, 0.5, 0.0}, {0, 0, -1}, {10, 5, 1},
                                            o, {}, cs, "exp decay data", Logger::Silent());
  };
  for (int frequency : {1, 3, 10}) {
    const SolverSummary ck = run(frequency, false, options.max_iterations);
    EXPECT_EQ(ck.termination, Termination::kConverged) << ck.BriefReport();
    EXPECT_EQ(ck.iterations, plain.iterations) << "frequency " << frequency;
    ASSERT_EQ(ck.x.size(), plain.x.size());
    EXPECT_EQ(std::memcmp(ck.x.data(), plain.x.data(), plain.x.size() * sizeof(double)), 0)
        << "frequency " << frequency;
    EXPECT_EQ(ck.chi2_history, plain.chi2_history);
  }
  // Interrupted after 3 iterations (max_iterations 3: a checkpoint at iteration 3), then
  // resumed with the full limit: the uninterrupted answer.
  const SolverSummary part = run(3, false, 3);
  ASSERT_EQ(part.termination, Termination::kMaxIterations) << part.BriefReport();
  // The finished (max_iter) state is the newest checkpoint; a resume continues it.
  const SolverSummary resumed = run(3, true, options.max_iterations);
  EXPECT_EQ(resumed.termination, Termination::kConverged) << resumed.BriefReport();
  EXPECT_EQ(resumed.iterations, plain.iterations);
  EXPECT_EQ(std::memcmp(resumed.x.data(), plain.x.data(), plain.x.size() * sizeof(double)), 0);
  EXPECT_EQ(resumed.chi2_history, plain.chi2_history);
}

// Every iterate of a Levenberg–Marquardt solve, as the callback and the checkpoint hook see
// them, for comparing two solves bit for bit.
struct Trace {
  std::vector<IterationInfo> iterations;
  std::vector<std::vector<double>> gradients;
  std::vector<SolverState> states;
  IterationCallback Callback() {
    return [this](const IterationInfo& info) {
      iterations.push_back(info);
      gradients.emplace_back(info.gradient.begin(), info.gradient.end());
      iterations.back().gradient = {};
    };
  }
};

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

void ExpectSameState(const SolverState& a, const SolverState& b, const std::string& what) {
  EXPECT_EQ(a.iteration, b.iteration) << what;
  EXPECT_TRUE(SameBits(a.x, b.x)) << what;
  EXPECT_TRUE(SameBits(a.equations.gradient, b.equations.gradient)) << what;
  EXPECT_TRUE(SameBits(a.equations.hessian, b.equations.hessian)) << what;
  EXPECT_TRUE(SameBits(a.equations.chi2, b.equations.chi2)) << what;
  EXPECT_TRUE(SameBits(a.lambda, b.lambda)) << what;
  EXPECT_TRUE(SameBits(a.nu, b.nu)) << what;
  EXPECT_TRUE(SameBits(a.scale, b.scale)) << what;
  EXPECT_EQ(a.recoveries, b.recoveries) << what;
  EXPECT_EQ(a.evaluations, b.evaluations) << what;
  EXPECT_EQ(a.objective_evaluations, b.objective_evaluations) << what;
  EXPECT_TRUE(SameBits(a.chi2_history, b.chi2_history)) << what;
}

// SolveBounded runs the default Levenberg–Marquardt through TaoSolve (the TAO type
// homodyne_lm); its iterates, its saved states and its answer have the bits of the bare loop,
// from a start point and from a resumed state, at any rank count (every rank runs both).
TEST(BoundedSolver, TaoDrivenLevenbergMarquardtEqualsTheBareLoopBitwise) {
  const Comm& world = testing::TestEnvironment().world();
  ExpDecayProblem problem(world, 0.02);
  SolverOptions options;
  options.print_petsc_monitors = world.is_root();
  // Free, and with b held at its upper bound (a bound-fixing step).
  for (const double b_max : {5.0, 0.8}) {
    const std::vector<double> x0{1.0, 0.5, 0.0}, lower{0, 0, -1}, upper{10, b_max, 1};
    const std::string what = "upper bound of b " + std::to_string(b_max);
    Trace tao_trace, bare_trace;
    SolverHooks tao_hooks, bare_hooks;
    tao_hooks.after_iteration = [&](const SolverState& st) { tao_trace.states.push_back(st); };
    bare_hooks.after_iteration = [&](const SolverState& st) { bare_trace.states.push_back(st); };
    const SolverSummary tao =
        SolveBounded(problem, x0, lower, upper, options, tao_trace.Callback(), tao_hooks);
    const SolverSummary bare = detail::SolveLevenbergMarquardt(problem, x0, lower, upper, options,
                                                               bare_trace.Callback(), bare_hooks);
    ASSERT_EQ(tao.termination, Termination::kConverged) << tao.BriefReport();
    EXPECT_EQ(bare.termination, Termination::kConverged) << what;
    ASSERT_GT(tao.iterations, 3) << what;
    EXPECT_EQ(tao.iterations, bare.iterations) << what;
    EXPECT_TRUE(SameBits(tao.x, bare.x)) << what;
    EXPECT_TRUE(SameBits(tao.chi2_history, bare.chi2_history)) << what;
    EXPECT_EQ(tao.message.find("not optimal"), std::string::npos) << tao.message;
    ExpectSameState(tao.final_state, bare.final_state, what + ", final state");
    ASSERT_EQ(tao_trace.iterations.size(), bare_trace.iterations.size()) << what;
    for (std::size_t i = 0; i < tao_trace.iterations.size(); ++i) {
      const IterationInfo &t = tao_trace.iterations[i], &u = bare_trace.iterations[i];
      EXPECT_EQ(t.iteration, u.iteration);
      EXPECT_TRUE(SameBits(t.chi2, u.chi2) && SameBits(t.gradient_norm, u.gradient_norm) &&
                  SameBits(t.step_norm, u.step_norm))
          << what << ", iteration " << t.iteration;
      EXPECT_TRUE(SameBits(tao_trace.gradients[i], bare_trace.gradients[i])) << what;
    }
    ASSERT_EQ(tao_trace.states.size(), bare_trace.states.size()) << what;
    for (std::size_t i = 0; i < tao_trace.states.size(); ++i)
      ExpectSameState(tao_trace.states[i], bare_trace.states[i], what + ", saved state");
    // Resumed from the state saved after the second step: the uninterrupted answer, through
    // TAO as through the bare loop.
    SolverHooks resume;
    resume.resume = &tao_trace.states[1];
    const SolverSummary tao_resumed = SolveBounded(problem, x0, lower, upper, options, {}, resume);
    const SolverSummary bare_resumed =
        detail::SolveLevenbergMarquardt(problem, x0, lower, upper, options, {}, resume);
    ExpectSameState(tao_resumed.final_state, tao.final_state, what + ", resumed through TAO");
    ExpectSameState(bare_resumed.final_state, tao.final_state, what + ", resumed bare");
  }
}

// Sets a PETSc option for a scope (as if given on the command line) and clears it after.
class ScopedPetscOption {
 public:
  ScopedPetscOption(std::string name, const std::string& value) : name_(std::move(name)) {
    PetscOptionsSetValue(nullptr, name_.c_str(), value.c_str());
  }
  ~ScopedPetscOption() { PetscOptionsClearValue(nullptr, name_.c_str()); }
  ScopedPetscOption(const ScopedPetscOption&) = delete;
  ScopedPetscOption& operator=(const ScopedPetscOption&) = delete;

 private:
  std::string name_;
};

// PETSc's options reach the default solver: -tao_monitor prints every iterate on the rank
// that prints (only there) without changing a bit; -tao_max_it ends the solve at its limit;
// a -tao_gatol met at the start ends it there, labelled a stall since the optimality test
// does not hold; -tao_type cannot swap the method under the config's back.
TEST(BoundedSolver, PetscOptionsReachTheDefaultSolver) {
  const Comm& world = testing::TestEnvironment().world();
  ExpDecayProblem problem(world, 0.02);
  MpiTempDir dir(world, "tao_lm_monitor", /*create=*/true);
  SolverOptions options;
  options.print_petsc_monitors = world.is_root();
  const std::vector<double> x0{1.0, 0.5, 0.0}, lower{0, 0, -1}, upper{10, 5, 1};
  const SolverSummary plain = SolveBounded(problem, x0, lower, upper, options);
  ASSERT_EQ(plain.termination, Termination::kConverged) << plain.BriefReport();
  {
    // One file per rank (each rank's own options): only the printing rank writes lines.
    const auto file = dir.path() / ("monitor_" + std::to_string(world.rank()) + ".txt");
    ScopedPetscOption scoped("-tao_monitor", file.string());
    const SolverSummary monitored = SolveBounded(problem, x0, lower, upper, options);
    EXPECT_TRUE(SameBits(monitored.x, plain.x));
    EXPECT_TRUE(SameBits(monitored.chi2_history, plain.chi2_history));
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (world.is_root()) {
      ASSERT_EQ(lines.size(), static_cast<std::size_t>(plain.iterations) + 1);
      EXPECT_NE(lines.front().find("0 TAO,"), std::string::npos) << lines.front();
      EXPECT_NE(lines.back().find(std::to_string(plain.iterations) + " TAO,"), std::string::npos)
          << lines.back();
    } else {
      EXPECT_TRUE(lines.empty()) << lines.size() << " monitor lines on rank " << world.rank();
    }
  }
  {
    ScopedPetscOption scoped("-tao_max_it", "2");
    const SolverSummary s = SolveBounded(problem, x0, lower, upper, options);
    EXPECT_EQ(s.termination, Termination::kMaxIterations) << s.BriefReport();
    EXPECT_EQ(s.iterations, 2);
    EXPECT_TRUE(SameBits(s.chi2_history[2], plain.chi2_history[2]));
  }
  {
    ScopedPetscOption scoped("-tao_gatol", "1e300");
    const SolverSummary s = SolveBounded(problem, x0, lower, upper, options);
    EXPECT_EQ(s.iterations, 0);
    EXPECT_EQ(s.termination, Termination::kStalled) << s.message;
    EXPECT_NE(s.message.find("-tao_gatol"), std::string::npos) << s.message;
  }
  {
    ScopedPetscOption scoped("-tao_type", "bnls");
    try {
      SolveBounded(problem, x0, lower, upper, options);
      ADD_FAILURE() << "-tao_type bnls accepted for the lm method";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("-tao_type bnls"), std::string::npos) << e.what();
    }
  }
}

// A NaN start or an infinite bound is bad input before TAO sees it (TaoSolve failed on it).
TEST(BoundedSolver, NonFiniteStartOrBoundIsBadInput) {
  ExpDecayProblem problem(testing::TestEnvironment().world(), 0.0);
  const double nan = std::nan(""), inf = HUGE_VAL;
  for (const auto& [x0, hi] : {std::pair{std::vector<double>{1.0, nan, 0.0}, 5.0},
                               std::pair{std::vector<double>{1.0, 0.5, 0.0}, inf}}) {
    try {
      SolveBounded(problem, x0, {0, 0, -1}, {10, hi, 1}, SolverOptions{});
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("parameter 1 has a non-finite start or bound"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(BoundedSolver, InvalidOptionsAreBadInput) {
  ExpDecayProblem problem(testing::TestEnvironment().world(), 0.0);
  SolverOptions options;
  options.max_iterations = 0;
  EXPECT_THROW(SolveBounded(problem, {1, 1, 0}, {0, 0, -1}, {10, 5, 1}, options), homodyne::Error);
}

}  // namespace
}  // namespace homodyne::lsq
