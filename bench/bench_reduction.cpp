// Cost of the per-iteration reduction of the normal equations (JᵀJ, Jᵀr, χ²) across
// ranks: Reduce to rank 0 + Bcast, which gives bit-identical results on every rank.
// The parameter count p follows the individual per-angle layout 7 + 2·n_phi.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <vector>

#include "bench_env.h"

namespace {

void BM_NormalEquationReduceBcast(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const auto p = static_cast<size_t>(state.range(0));
  const size_t n = p * p + p + 1;
  std::vector<double> local(n, 1.0 + world.rank());
  std::vector<double> global(n, 0.0);
  for (auto _ : state) {
    const double t0 = MPI_Wtime();
    MPI_Reduce(local.data(), global.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, 0,
               world.get());
    MPI_Bcast(global.data(), static_cast<int>(n), MPI_DOUBLE, 0, world.get());
    double elapsed = MPI_Wtime() - t0;
    double slowest = 0.0;
    // All ranks must use the same time, or their adaptive iteration counts diverge.
    MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
    state.SetIterationTime(slowest);
    benchmark::DoNotOptimize(global.data());
  }
  state.counters["parameters"] = static_cast<double>(p);
  state.counters["ranks"] = world.size();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(n * sizeof(double)));
}
// 3 angles static (9), 23 angles laminar individual (53), 100 angles (207).
BENCHMARK(BM_NormalEquationReduceBcast)->Arg(9)->Arg(53)->Arg(207)->UseManualTime();

}  // namespace
