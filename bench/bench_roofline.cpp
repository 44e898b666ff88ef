// The machine's roofline ceilings as Google Benchmark entries (JSON counters):
// STREAM-triad bandwidth and peak FMA flops of one core.
#include <benchmark/benchmark.h>

#include "roofline_ceilings.h"

namespace {

void BM_CeilingMemoryBandwidthTriad(benchmark::State& state) {
  double bw = 0;
  for (auto _ : state) bw = homodyne::bench::MeasureTriadBandwidth(0.5);
  state.counters["bandwidth_bytes_per_second"] = bw;
}
BENCHMARK(BM_CeilingMemoryBandwidthTriad)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CeilingPeakFlopsPerCore(benchmark::State& state) {
  double flops = 0;
  for (auto _ : state) flops = homodyne::bench::MeasurePeakFlops(0.3);
  state.counters["peak_flops_per_second"] = flops;
  state.SetLabel(homodyne::bench::PeakFlopsIsa());
}
BENCHMARK(BM_CeilingPeakFlopsPerCore)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
