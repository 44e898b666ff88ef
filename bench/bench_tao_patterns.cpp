// Measurement behind the NLSQ design choice (docs/architecture.md): the replicated
// bounded Gauss–Newton (TAOBNLS on PETSC_COMM_SELF with reduced JᵀJ, Jᵀr — what
// homodyne-hpc uses) against TAOBRGN with a distributed residual Vec and a dense
// distributed Jacobian (PETSc's own least-squares pattern, l2pure λ=0 as the spec advises).
// Problem: y = a·exp(−b·t) + c, truth (2.5, 1.3, 0.4), start (1, 0.5, 0), b ≤ 0.8 active.
// Counters: data passes (residual / Jacobian evaluations), iterations, final ½‖r‖².
#include <benchmark/benchmark.h>
#include <petsctao.h>

#include <cmath>
#include <vector>

#include "bench_env.h"
#include "lsq/bounded_solver.h"
#include "parallel/tile_sum.h"

namespace {

constexpr int kPoints = 200000;

struct Data {
  std::vector<double> t, y;
  int begin = 0, end = 0;
};

Data MakeData(const homodyne::Comm& comm) {
  Data d;
  d.begin = kPoints * comm.rank() / comm.size();
  d.end = kPoints * (comm.rank() + 1) / comm.size();
  for (int p = d.begin; p < d.end; ++p) {
    const double t = 4.0 * p / kPoints;
    d.t.push_back(t);
    d.y.push_back(2.5 * std::exp(-1.3 * t) + 0.4 + 0.01 * std::sin(7.0 * p));
  }
  return d;
}

class Replicated : public homodyne::lsq::LeastSquaresProblem {
 public:
  Replicated(const homodyne::Comm& c, const Data& d) : comm_(c), d_(d) {}
  int num_parameters() const override { return 3; }
  void Evaluate(std::span<const double> x, bool deriv,
                homodyne::lsq::NormalEquations& out) override {
    ++(deriv ? jacobian_passes : residual_passes);
    const int tiles = 64;
    const std::size_t w = deriv ? 13 : 1;
    const auto b = tiles * comm_.rank() / comm_.size();
    const auto e = tiles * (comm_.rank() + 1) / comm_.size();
    auto fn = [&](std::int64_t k, std::span<double> acc) {
      const auto lo = kPoints * k / tiles - d_.begin;
      const auto hi = kPoints * (k + 1) / tiles - d_.begin;
      for (auto p = lo; p < hi; ++p) {
        const auto i = static_cast<std::size_t>(p);
        const double ex = std::exp(-x[1] * d_.t[i]);
        const double r = d_.y[i] - x[0] * ex - x[2];
        acc[0] += r * r;
        if (!deriv) continue;
        const double j[3] = {-ex, x[0] * d_.t[i] * ex, -1.0};
        for (int a = 0; a < 3; ++a) {
          acc[1 + a] += j[a] * r;
          for (int c = 0; c < 3; ++c) acc[4 + 3 * a + c] += j[a] * j[c];
        }
      }
    };
    auto s = homodyne::ReproducibleTileSum(comm_, tiles, b, e, w, fn);
    out.chi2 = s[0];
    if (deriv) {
      out.gradient.assign(s.begin() + 1, s.begin() + 4);
      out.hessian.assign(s.begin() + 4, s.end());
    }
  }
  int residual_passes = 0, jacobian_passes = 0;

 private:
  const homodyne::Comm& comm_;
  const Data& d_;
};

void BM_ReplicatedBnls(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const Data d = MakeData(world);
  homodyne::lsq::SolverSummary s;
  int rp = 0, jp = 0;
  for (auto _ : state) {
    const double t0 = MPI_Wtime();
    Replicated problem(world, d);
    homodyne::lsq::SolverOptions o;
    o.print_petsc_monitors = false;
    s = homodyne::lsq::SolveBounded(problem, {1, 0.5, 0}, {0, 0, -1}, {10, 0.8, 1}, o);
    rp = problem.residual_passes;
    jp = problem.jacobian_passes;
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
    state.SetIterationTime(slowest);
  }
  state.counters["iterations"] = s.iterations;
  state.counters["residual_passes"] = rp;
  state.counters["jacobian_passes"] = jp;
  state.counters["half_chi2"] = 0.5 * s.final_chi2;
}
BENCHMARK(BM_ReplicatedBnls)->UseManualTime()->Unit(benchmark::kMillisecond);

struct BrgnCtx {
  const Data* d;
  Vec xall;
  VecScatter toall;
  int residual_evals = 0, jacobian_evals = 0;
};

PetscErrorCode BrgnResidual(Tao, Vec X, Vec F, void* raw) {
  auto& c = *static_cast<BrgnCtx*>(raw);
  ++c.residual_evals;
  PetscCall(VecScatterBegin(c.toall, X, c.xall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(c.toall, X, c.xall, INSERT_VALUES, SCATTER_FORWARD));
  const PetscScalar* x;
  PetscScalar* f;
  PetscCall(VecGetArrayRead(c.xall, &x));
  PetscCall(VecGetArray(F, &f));
  for (std::size_t i = 0; i < c.d->t.size(); ++i) {
    f[i] = c.d->y[i] - x[0] * std::exp(-x[1] * c.d->t[i]) - x[2];
  }
  PetscCall(VecRestoreArray(F, &f));
  PetscCall(VecRestoreArrayRead(c.xall, &x));
  return 0;
}

PetscErrorCode BrgnJacobian(Tao, Vec X, Mat J, Mat, void* raw) {
  auto& c = *static_cast<BrgnCtx*>(raw);
  ++c.jacobian_evals;
  PetscCall(VecScatterBegin(c.toall, X, c.xall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(c.toall, X, c.xall, INSERT_VALUES, SCATTER_FORWARD));
  const PetscScalar* x;
  PetscScalar* a;
  PetscInt lda;
  PetscCall(VecGetArrayRead(c.xall, &x));
  PetscCall(MatDenseGetArrayWrite(J, &a));
  PetscCall(MatDenseGetLDA(J, &lda));
  for (std::size_t i = 0; i < c.d->t.size(); ++i) {
    const double ex = std::exp(-x[1] * c.d->t[i]);
    a[i] = -ex;
    a[i + static_cast<std::size_t>(lda)] = x[0] * c.d->t[i] * ex;
    a[i + 2 * static_cast<std::size_t>(lda)] = -1.0;
  }
  PetscCall(MatDenseRestoreArrayWrite(J, &a));
  PetscCall(VecRestoreArrayRead(c.xall, &x));
  PetscCall(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  return 0;
}

void BM_DistributedBrgn(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const Data d = MakeData(world);
  const PetscInt np = 3;
  const PetscInt nlocal = static_cast<PetscInt>(d.t.size());
  BrgnCtx ctx{&d, nullptr, nullptr};
  double half_chi2 = 0;
  PetscInt its = 0;
  for (auto _ : state) {
    const double t0 = MPI_Wtime();
    Vec X, XL, XU, F;
    Mat J;
    Tao tao;
    VecCreateMPI(world.get(), world.rank() == 0 ? np : 0, np, &X);
    VecDuplicate(X, &XL);
    VecDuplicate(X, &XU);
    if (world.rank() == 0) {
      const PetscInt idx[3] = {0, 1, 2};
      const PetscScalar x0[3] = {1, 0.5, 0}, lo[3] = {0, 0, -1}, hi[3] = {10, 0.8, 1};
      VecSetValues(X, 3, idx, x0, INSERT_VALUES);
      VecSetValues(XL, 3, idx, lo, INSERT_VALUES);
      VecSetValues(XU, 3, idx, hi, INSERT_VALUES);
    }
    for (Vec v : {X, XL, XU}) {
      VecAssemblyBegin(v);
      VecAssemblyEnd(v);
    }
    VecScatterCreateToAll(X, &ctx.toall, &ctx.xall);
    VecCreateMPI(world.get(), nlocal, PETSC_DETERMINE, &F);
    MatCreateDense(world.get(), nlocal, world.rank() == 0 ? np : 0, PETSC_DETERMINE, np, nullptr,
                   &J);
    TaoCreate(world.get(), &tao);
    TaoSetType(tao, TAOBRGN);
    TaoSetSolution(tao, X);
    TaoSetVariableBounds(tao, XL, XU);
    TaoSetResidualRoutine(tao, F, BrgnResidual, &ctx);
    TaoSetJacobianResidualRoutine(tao, J, J, BrgnJacobian, &ctx);
    TaoSetTolerances(tao, 1e-10, 0, 0);
    PetscOptionsSetValue(nullptr, "-tao_brgn_regularization_type", "l2pure");
    PetscOptionsSetValue(nullptr, "-tao_brgn_regularizer_weight", "0");
    TaoSetFromOptions(tao);
    TaoSolve(tao);
    Tao sub;
    TaoBRGNGetSubsolver(tao, &sub);
    PetscReal f, gn, cn, xd;
    TaoConvergedReason reason;
    TaoGetSolutionStatus(sub, &its, &f, &gn, &cn, &xd, &reason);
    half_chi2 = f;
    TaoDestroy(&tao);
    MatDestroy(&J);
    VecDestroy(&F);
    VecScatterDestroy(&ctx.toall);
    VecDestroy(&ctx.xall);
    for (Vec* v : {&X, &XL, &XU}) VecDestroy(v);
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
    state.SetIterationTime(slowest);
  }
  state.counters["iterations"] = static_cast<double>(its);
  state.counters["residual_passes"] = ctx.residual_evals / static_cast<double>(state.iterations());
  state.counters["jacobian_passes"] = ctx.jacobian_evals / static_cast<double>(state.iterations());
  state.counters["half_chi2"] = half_chi2;
  state.counters["jacobian_bytes_per_rank"] = static_cast<double>(nlocal) * np * 8.0;
}
BENCHMARK(BM_DistributedBrgn)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
