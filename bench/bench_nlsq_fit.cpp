// Full NLSQ fit benchmark: laminar_flow, 23 angles × 1000 frames, auto (averaged)
// per-angle mode, noise σ = 1e-3, from a start 20–50 % off the truth. Reports the fit
// time (slowest rank), data passes, fitted points, points/s per core and peak RSS (max
// over ranks) as Google Benchmark counters (JSON with --benchmark_out).
// Environment: HOMODYNE_BENCH_FRAMES (default 1000), HOMODYNE_BENCH_ANGLES (23),
// HOMODYNE_BENCH_THREADS (threads per rank, default 1).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "bench_env.h"
#include "bench_laminar_config.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace {

// Peak resident set size of this process in MiB: VmHWM from /proc/self/status (resettable),
// else getrusage's ru_maxrss (not resettable).
double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Linux: writing 5 to /proc/self/clear_refs resets VmHWM to the current RSS, after the heap's
// free memory (the generator's matrices, kept by malloc) has gone back to the system.
void ResetPeakRss() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

using homodyne::bench::EnvInt;

homodyne::config::Config BenchConfig(const std::string& data, const std::string& values) {
  return homodyne::bench::LaminarBenchConfig(
      data, values,
      "  nlsq:\n    max_iterations: 300\n    anti_degeneracy: {per_angle_mode: auto}\n",
      "bench-config");
}

void BM_NlsqFitLaminar(benchmark::State& state) {
  const auto& world = homodyne::bench::BenchEnvironment().world();
  const int frames = EnvInt("HOMODYNE_BENCH_FRAMES", 1000);
  const int n_angles = EnvInt("HOMODYNE_BENCH_ANGLES", 23);
  const int threads = EnvInt("HOMODYNE_BENCH_THREADS", 1);
  const std::string data = (std::filesystem::temp_directory_path() /
                            fmt::format("homodyne_bench_fit_{}x{}.h5", n_angles, frames))
                               .string();
  const std::string truth = "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4";
  homodyne::RunCollectively(world, [&] {
    if (world.rank() != 0 || std::filesystem::exists(data)) return;
    homodyne::synth::SynthOptions o;
    o.output = data;
    o.frames = frames;
    o.phi_deg.clear();
    for (int k = 0; k < n_angles; ++k) o.phi_deg.push_back(-90.0 + 180.0 * k / n_angles);
    o.noise = 1e-3;
    o.seed = 1;
    o.contrast = 0.3;
    o.offset = 1.0;
    o.threads = 2;
    homodyne::synth::WriteSyntheticDataset(BenchConfig(data, truth), o);
  });
  // The peak RSS reported is the fit's: reset the high-water mark after generating the data
  // set (it held every full matrix when the file was absent).
  ResetPeakRss();
  const auto cfg = BenchConfig(data, "14000, -0.3, 0, 0.002, 0.1, 0.0001, 2");
  homodyne::nlsq::NlsqRunOptions opts;
  opts.print_progress = false;
  opts.threads = threads;
  homodyne::nlsq::NlsqRunResult r;
  for (auto _ : state) {
    const double t0 = MPI_Wtime();
    r = homodyne::nlsq::RunNlsqFit(world, cfg, opts, homodyne::Logger::Silent());
    double dt = MPI_Wtime() - t0;
    double slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.get());
    state.SetIterationTime(slowest);
    state.counters["fit_seconds"] = slowest;
  }
  double rss = PeakRssMib();
  double peak = 0;
  MPI_Allreduce(&rss, &peak, 1, MPI_DOUBLE, MPI_MAX, world.get());
  const double cores = static_cast<double>(world.size()) * threads;
  const double points = static_cast<double>(r.unique_pairs);
  state.counters["angles"] = n_angles;
  state.counters["frames"] = frames;
  state.counters["ranks"] = world.size();
  state.counters["threads_per_rank"] = threads;
  state.counters["points"] = points;
  state.counters["passes"] = r.passes;
  state.counters["iterations"] = r.summary.iterations;
  state.counters["converged"] = r.report.convergence_status == "converged" ? 1 : 0;
  state.counters["points_per_second_per_core"] =
      points * r.passes / (state.counters["fit_seconds"].value * cores);
  state.counters["peak_rss_mib_max_rank"] = peak;
  state.counters["chi2_reduced"] = r.report.reduced_chi_squared;
  state.counters["D0_rel_error"] = std::abs(r.report.physical_values[0] - 20000.0) / 20000.0;
}
BENCHMARK(BM_NlsqFitLaminar)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
