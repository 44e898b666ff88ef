#include "roofline_ceilings.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace homodyne::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr int kChains = 12;  // independent accumulators: hides FMA latency (4–5 cycles × 2 ports)

// Inlined into each target-specific caller so it is compiled for that ISA.
template <typename V>
[[gnu::always_inline]] inline double FmaChains(long iterations, double seed) {
  V acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = V{} + (seed + k);
  const V mul = V{} + 0.999999999;
  const V add = V{} + 1e-9;
  for (long i = 0; i < iterations; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * mul + add;
  }
  V sum = V{};
  for (int k = 0; k < kChains; ++k) sum += acc[k];
  return sum[0];
}

typedef double V8 __attribute__((vector_size(64)));
typedef double V4 __attribute__((vector_size(32)));
typedef double V2 __attribute__((vector_size(16)));

__attribute__((target("avx512f,fma"))) double Run512(long n, double s) {
  return FmaChains<V8>(n, s);
}
__attribute__((target("avx2,fma"))) double Run256(long n, double s) { return FmaChains<V4>(n, s); }
double Run128(long n, double s) { return FmaChains<V2>(n, s); }

int Width() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 8;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 4;
  return 2;
}

}  // namespace

const char* PeakFlopsIsa() {
  switch (Width()) {
    case 8:
      return "avx512f";
    case 4:
      return "avx2+fma";
    default:
      return "sse2";
  }
}

double MeasurePeakFlops(double seconds_budget) {
  const int width = Width();
  double best = 0.0;
  volatile double sink = 0.0;
  long n = 1 << 16;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds_budget);
  while (Clock::now() < deadline) {
    const auto t0 = Clock::now();
    const double r = width == 8 ? Run512(n, 1.0) : width == 4 ? Run256(n, 1.0) : Run128(n, 1.0);
    const double dt = Seconds(t0, Clock::now());
    sink = sink + r;
    // SSE2 has no FMA: a mul and an add still count as 2 flops per lane.
    best = std::max(best, 2.0 * width * kChains * static_cast<double>(n) / dt);
    if (dt < 0.02) n *= 2;
  }
  (void)sink;
  return best;
}

double MeasureTriadBandwidth(double seconds_budget) {
  const std::size_t n = 1 << 24;  // 3 × 128 MiB, far beyond any L3
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  const double s = 3.0;
  double best = 0.0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds_budget);
  int reps = 0;
  while (Clock::now() < deadline || reps < 3) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    const double dt = Seconds(t0, Clock::now());
    best = std::max(best, 24.0 * static_cast<double>(n) / dt);
    b[reps % n] = a[(reps * 7) % n];  // keep the loop observable
    ++reps;
  }
  return best;
}

}  // namespace homodyne::bench
