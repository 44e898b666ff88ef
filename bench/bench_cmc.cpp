// CMC benchmarks (laminar_flow synthetic data, auto per-angle mode → reparameterised
// sampling of one averaged contrast/offset + 7 physical parameters + σ):
//  * BM_ShardGradient/{0,1}: one shard's likelihood pass, the kernel's gradient-only pass (1)
//    against the full normal-equation pass the shard posterior used before (0): evaluations
//    per second on one thread;
//  * BM_CmcFitLaminar: a whole CMC run (NUTS per shard, chains in parallel on the rank's
//    threads, consensus): wall time (slowest rank), gradient evaluations per second per core,
//    and the ESS per second per core: min over shards and parameters of the bulk/tail ESS,
//    times the number of shards, over (wall time × cores).
// Environment: HOMODYNE_BENCH_FRAMES (default 50), HOMODYNE_BENCH_ANGLES (8),
// HOMODYNE_BENCH_THREADS (threads per rank, 1), HOMODYNE_BENCH_SHARDS (2),
// HOMODYNE_BENCH_DRAWS (warmup = draws per chain, 150), HOMODYNE_BENCH_CHAINS (2).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "bench_env.h"
#include "bench_laminar_config.h"
#include "cmc/cmc_fit.h"
#include "core/random.h"
#include "model/kernel.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace {

using homodyne::bench::EnvInt;

const char* kTruth = "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4";

homodyne::config::Config BenchConfig(const std::string& data) {
  return homodyne::bench::LaminarBenchConfig(data, kTruth,
                                             "  cmc:\n    per_angle_mode: auto\n    seed: 42\n"
                                             "    validation: {heterogeneity_abort: false}\n",
                                             "bench-cmc-config");
}

// A laminar shard-sized set of tiles (8 angles, 5 000 points) with noisy model data.
void BM_ShardGradient(benchmark::State& state) {
  using namespace homodyne::model;
  const int n = 40;
  const Geometry geometry{0.0054, 2e6, 0.1};
  std::vector<double> t, phi;
  for (int m = 1; m <= n; ++m) t.push_back(0.1 * m);
  for (int k = 0; k < 8; ++k) phi.push_back(-20.0 + 30.0 * k);
  std::vector<RowTile> tiles;
  std::vector<double> data;
  data.reserve(static_cast<std::size_t>(8 * n * n));
  homodyne::CounterRng rng(1, 0, 0);
  for (int k = 0; k < 8; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      // Every second row segment (a shard holds a random half of the segments).
      if ((i + k) % 2 != 0) continue;
      tiles.push_back({k, i, i + 1, n - i - 1, data.data() + data.size(), nullptr, 1.0});
      for (int j = i + 1; j < n; ++j) data.push_back(1.0 + 0.3 * std::exp(-0.01 * (j - i)));
    }
  }
  std::vector<double> params;
  for (int k = 0; k < 8; ++k) params.push_back(0.3);
  for (int k = 0; k < 8; ++k) params.push_back(1.0);
  params.insert(params.end(), {20000.0, -0.4, 10.0, 0.003, 0.2, 2e-4, 4.0});
  ModelKernel kernel(AnalysisMode::kLaminarFlow, geometry, t, phi, tiles, {.sigma = 1.0});
  std::vector<double> jtr(params.size());
  const bool gradient_pass = state.range(0) == 1;
  for (auto _ : state) {
    if (gradient_pass) {
      benchmark::DoNotOptimize(kernel.Gradient(params, jtr));
    } else {
      benchmark::DoNotOptimize(kernel.Accumulate(params).chi2);
    }
  }
  state.counters["points"] = static_cast<double>(kernel.num_points());
  state.counters["evaluations_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(gradient_pass ? "gradient-only pass" : "normal-equation pass");
}
BENCHMARK(BM_ShardGradient)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_CmcFitLaminar(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const int frames = EnvInt("HOMODYNE_BENCH_FRAMES", 50);
  const int n_angles = EnvInt("HOMODYNE_BENCH_ANGLES", 8);
  const int threads = EnvInt("HOMODYNE_BENCH_THREADS", 1);
  const std::string data = (std::filesystem::temp_directory_path() /
                            fmt::format("homodyne_bench_cmc_{}x{}.h5", n_angles, frames))
                               .string();
  homodyne::RunCollectively(world, [&] {
    if (world.rank() != 0 || std::filesystem::exists(data)) return;
    homodyne::synth::SynthOptions o;
    o.output = data;
    o.frames = frames;
    o.phi_deg.clear();
    for (int k = 0; k < n_angles; ++k) o.phi_deg.push_back(-90.0 + 180.0 * k / n_angles);
    o.noise = 2e-3;
    o.seed = 1;
    o.contrast = 0.3;
    o.offset = 1.0;
    homodyne::synth::WriteSyntheticDataset(BenchConfig(data), o);
  });
  world.Barrier();
  const auto cfg = BenchConfig(data);
  homodyne::cmc::CmcRunOptions o;
  o.threads = threads;
  o.num_shards = EnvInt("HOMODYNE_BENCH_SHARDS", 2);
  o.num_warmup = EnvInt("HOMODYNE_BENCH_DRAWS", 150);
  o.num_samples = o.num_warmup;
  o.num_chains = EnvInt("HOMODYNE_BENCH_CHAINS", 2);
  o.print_progress = false;
  homodyne::cmc::CmcRunResult r;
  for (auto _ : state) {
    const double t0 = MPI_Wtime();
    r = homodyne::cmc::RunCmcFit(world, cfg, o, homodyne::Logger::Silent());
    double dt = MPI_Wtime() - t0;
    double slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
    state.SetIterationTime(slowest);
    state.counters["wall_seconds"] = slowest;
  }
  if (world.rank() != 0) return;
  const double cores = static_cast<double>(world.size()) * threads;
  const double wall = state.counters["wall_seconds"].value;
  double gradients = 0, points = 0;
  for (const auto& d : r.shards) {
    gradients += static_cast<double>(d.gradient_evaluations);
    points += static_cast<double>(d.points);
  }
  state.counters["ranks"] = world.size();
  state.counters["threads_per_rank"] = threads;
  state.counters["angles"] = n_angles;
  state.counters["frames"] = frames;
  state.counters["points"] = points;
  state.counters["shards"] = r.num_shards;
  state.counters["chains"] = r.num_chains;
  state.counters["draws_per_chain"] = r.num_samples;
  state.counters["gradient_evaluations"] = gradients;
  state.counters["gradient_evaluations_per_second_per_core"] = gradients / (wall * cores);
  state.counters["min_ess"] = r.min_ess;
  state.counters["ess_per_second_per_core"] = r.min_ess * r.num_shards / (wall * cores);
  state.counters["max_rhat"] = r.max_rhat;
}
BENCHMARK(BM_CmcFitLaminar)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
