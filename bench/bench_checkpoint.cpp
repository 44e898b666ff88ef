// Checkpoint write and read time (parallel HDF5, fletcher32, fsync + atomic rename) for
// NLSQ-shaped records: P parameters → x, Jᵀr, JᵀJ (P²) and a 100-entry χ² history.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bench_env.h"
#include "checkpoint/checkpoint_store.h"

namespace {

namespace ck = homodyne::checkpoint;

std::filesystem::path SharedDir(const homodyne::Comm& world, const std::string& stem) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, world.get());
  return std::filesystem::temp_directory_path() /
         ("homodyne_bench_ckpt_" + std::to_string(pid) + "_" + stem);
}

ck::CheckpointRecord NlsqLike(int p) {
  ck::CheckpointRecord r;
  const auto n = static_cast<std::size_t>(p);
  r.PutDoubles("nlsq.x", std::vector<double>(n, 1.25));
  r.PutDoubles("nlsq.gradient", std::vector<double>(n, -0.5));
  r.PutDoubles("nlsq.hessian", std::vector<double>(n * n, 2.0));
  r.PutDoubles("nlsq.chi2_history", std::vector<double>(100, 3.0));
  r.PutInts("nlsq.counters", {10, 12, 3, 0, 0});
  r.PutText("nlsq.tag", "fit");
  return r;
}

// Times one collective operation: the slowest rank's time, the same on every rank.
template <typename Fn>
void TimeCollective(benchmark::State& state, const homodyne::Comm& world, Fn&& fn) {
  world.Barrier();
  const double t0 = MPI_Wtime();
  fn();
  double elapsed = MPI_Wtime() - t0, slowest = 0.0;
  MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
  state.SetIterationTime(slowest);
}

void BM_CheckpointWrite(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const int p = static_cast<int>(state.range(0));
  const auto dir = SharedDir(world, "write");
  ck::CheckpointStore store(world, {dir, "nlsq", 3}, {"config: x\n", "data: y\n"},
                            homodyne::Logger::Silent());
  const ck::CheckpointRecord record = NlsqLike(p);
  for (auto _ : state) TimeCollective(state, world, [&] { store.Write(record); });
  world.Barrier();
  if (world.is_root()) std::filesystem::remove_all(dir);
  state.counters["parameters"] = p;
  state.counters["ranks"] = world.size();
}
// 9 (static, 3 angles), 53 (laminar, 23 angles individual), 207 (100 angles).
BENCHMARK(BM_CheckpointWrite)
    ->Arg(9)
    ->Arg(53)
    ->Arg(207)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_CheckpointLoadNewest(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const int p = static_cast<int>(state.range(0));
  const auto dir = SharedDir(world, "read");
  ck::CheckpointStore store(world, {dir, "nlsq", 3}, {"config: x\n", "data: y\n"},
                            homodyne::Logger::Silent());
  store.Write(NlsqLike(p));
  for (auto _ : state) {
    TimeCollective(state, world, [&] { benchmark::DoNotOptimize(store.LoadNewest()); });
  }
  world.Barrier();
  if (world.is_root()) std::filesystem::remove_all(dir);
  state.counters["parameters"] = p;
  state.counters["ranks"] = world.size();
}
BENCHMARK(BM_CheckpointLoadNewest)->Arg(53)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
