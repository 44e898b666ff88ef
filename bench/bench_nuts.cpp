// NUTS throughput on Gaussian targets: gradient evaluations per second (the sampler's
// own overhead on top of a cheap density) and bulk ESS per second for a full chain.
// Serial per chain; under MPI every rank runs the same chain independently.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "nuts/diagnostics.h"
#include "nuts/log_density.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"

namespace {

using homodyne::nuts::MetricKind;

// One whole chain (500 warmup + 1000 draws) per benchmark iteration.
void BM_NutsChainStandardNormal(benchmark::State& state) {
  const int dimension = static_cast<int>(state.range(0));
  const MetricKind metric = state.range(1) != 0 ? MetricKind::kDense : MetricKind::kDiag;
  homodyne::nuts::StandardNormalDensity density(dimension);
  homodyne::nuts::NutsOptions options;
  options.num_warmup = 500;
  options.num_samples = 1000;
  options.metric = metric;
  double gradients = 0.0;
  double min_ess = 0.0;
  std::uint64_t chain_id = 0;
  for (auto _ : state) {
    std::vector<double> init(dimension, 0.5);
    homodyne::nuts::NutsChain chain(density, options, init, 0, chain_id++);
    const auto run = homodyne::nuts::RunChain(chain);
    gradients += static_cast<double>(run.summary.num_gradient_evaluations);
    state.PauseTiming();
    double ess = 1e300;
    for (int i = 0; i < std::min(dimension, 10); ++i) {
      ess = std::min(ess, homodyne::nuts::SplitRankNormalizedEss({run.Parameter(i)}).bulk);
    }
    min_ess += ess;
    state.ResumeTiming();
  }
  state.counters["dimension"] = dimension;
  state.counters["dense"] = metric == MetricKind::kDense ? 1 : 0;
  state.counters["gradients_per_s"] = benchmark::Counter(gradients, benchmark::Counter::kIsRate);
  state.counters["min_bulk_ess_per_s"] = benchmark::Counter(min_ess, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NutsChainStandardNormal)
    ->Args({10, 0})
    ->Args({10, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
