// The replicated TAO solver on a distributed test problem y = a·exp(−b·t) + c.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
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
