// Throughput of the homodyne model kernel (the NLSQ hot path): laminar_flow, 23 angles,
// 1000 frames, upper triangle (i < j) of every angle → 23·499 500 points. Reports points
// per second for the residual (χ²) pass and the χ² + JᵀWJ + JᵀWr pass at 1 and 2 threads,
// and a naive single-threaded loop (exp and sin recomputed per point and angle) for scale.
//
// Roofline: the binary also measures this machine's two ceilings (STREAM-triad bandwidth,
// peak FMA flops of one core; roofline_ceilings.h) and reports for each pass its flops and
// bytes per point, the roofline bound per core, the attained fraction of that bound and
// the ratio to the bandwidth-only rate. The flop counts are those of the cheapest
// formulation we know (docs/performance.md itemises them); bytes are the data value read
// per point (8 B; these tiles carry a uniform weight, so no weight array is read).
// BM_KernelChi2Ranks splits the points over the MPI ranks (rank scaling of one pass);
// BM_PointBlock times the point loop alone on one cache-resident block.
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "bench_env.h"
#include "core/placement.h"
#include "core/topology.h"
#include "model/heterodyne_kernel.h"
#include "model/kernel.h"
#include "model/kernel_impl.h"
#include "model/point_terms.h"
#include "roofline_ceilings.h"

namespace {

using homodyne::model::AnalysisMode;
using homodyne::model::Geometry;
using homodyne::model::ModelKernel;
using homodyne::model::RowTile;

constexpr int kFrames = 1000;
constexpr int kAngles = 23;

struct Setup {
  Geometry geometry{0.0054, 2e6, 1e-3};
  std::vector<double> t, phi, params, data;
  std::vector<RowTile> tiles;

  Setup() {
    for (int m = 1; m <= kFrames; ++m) t.push_back(geometry.dt * m);
    for (int k = 0; k < kAngles; ++k) phi.push_back(-180.0 + 360.0 * k / kAngles);
    for (int k = 0; k < kAngles; ++k) params.push_back(0.2 + 0.002 * k);
    for (int k = 0; k < kAngles; ++k) params.push_back(1.0);
    for (double v : {5e4, 0.5, -50.0, 0.25, 0.1, 1e-3, -2.0}) params.push_back(v);
    const size_t per_angle = static_cast<size_t>(kFrames) * (kFrames - 1) / 2;
    data.assign(per_angle * kAngles, 1.1);
    size_t offset = 0;
    for (int k = 0; k < kAngles; ++k) {
      for (int i = 0; i < kFrames - 1; ++i) {
        RowTile tile;
        tile.angle = k;
        tile.row = i;
        tile.col_begin = i + 1;
        tile.count = kFrames - 1 - i;
        tile.data = data.data() + offset;
        offset += static_cast<size_t>(tile.count);
        tiles.push_back(tile);
      }
    }
  }
  double points() const { return static_cast<double>(data.size()); }
};

const Setup& TheSetup() {
  static const Setup setup;
  return setup;
}

// The same grid with data as a fit meets them near its answer: the model at `params` plus
// noise from a fixed hash of the point's index, for the robust losses, whose per-point work
// depends on the residual's size. Quiet: uniform of sd 0.002 (|r| ≤ 0.0035). Noisy: Gaussian
// of sd 0.01, the noise of the synthetic sets the whole-job benchmarks fit.
enum class Noise { kQuiet, kNoisy };
void SetDataToModelPlusNoise(const std::vector<double>& model, std::vector<double>& data,
                             Noise noise = Noise::kQuiet) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  const auto uniform = [&h] {  // in [0, 1)
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return static_cast<double>(h >> 11) * 0x1p-53;
  };
  for (std::size_t i = 0; i < model.size(); ++i) {
    if (noise == Noise::kQuiet) {
      data[i] = model[i] + 0.002 * std::sqrt(12.0) * (uniform() - 0.5);
    } else {
      const double u1 = 1.0 - uniform(), u2 = uniform();  // Box–Muller, u1 in (0, 1]
      data[i] = model[i] + 0.01 * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    }
  }
}

// TheSetup's grid with data at the model of `mode` plus noise; its parameters the first
// `n_params` of the laminar set (2·23 + 7; static: 2·23 + 3).
Setup ModelPlusNoiseSetup(AnalysisMode mode, std::size_t n_params, Noise noise = Noise::kQuiet) {
  Setup s;
  s.params.resize(n_params);
  const ModelKernel kernel(mode, s.geometry, s.t, s.phi, s.tiles,
                           homodyne::model::KernelOptions{.threads = 1});
  std::vector<double> model(s.data.size());
  kernel.EvaluateModel(s.params, model);
  SetDataToModelPlusNoise(model, s.data, noise);
  return s;
}

const Setup& TheFitSetup() {
  static const Setup setup = ModelPlusNoiseSetup(AnalysisMode::kLaminarFlow, 2 * kAngles + 7);
  return setup;
}

// Flops per point of the cheapest formulation we know (docs/performance.md, "Counting"),
// FMA = 2 flops: the separable shear path in its double-angle form (sin²x from per-(angle,
// time) tables of cos 2aC and sin 2aC; the χ² with √contrast folded into the row's
// constants), the angle-independent work shared by the angles of a column, the uniform
// weight and 1/σ applied once per sum. Cheaper than what the kernel computes (17 and 88):
// the double-angle form was measured and not adopted (docs/performance.md). Bytes read per
// point: the 8-byte data value.
constexpr double kChi2FlopsPerPoint = 15.0;
constexpr double kNormalFlopsPerPoint = 87.0;
constexpr double kBytesPerPoint = 8.0;

struct Ceilings {
  double bandwidth = 0.0;   // bytes/s, STREAM triad, one thread
  double peak_flops = 0.0;  // flop/s, one core
};

const Ceilings& TheCeilings() {
  static const Ceilings c{homodyne::bench::MeasureTriadBandwidth(0.5),
                          homodyne::bench::MeasurePeakFlops(0.3)};
  return c;
}

// Roofline counters of one kernel pass; `points` = points per iteration over all threads.
void RooflineCounters(benchmark::State& state, double points, int threads, double flops) {
  const Ceilings& c = TheCeilings();
  const double bw_rate = c.bandwidth / kBytesPerPoint;
  const double flop_rate = c.peak_flops / flops;
  const double bound = std::min(bw_rate, flop_rate);
  const double per_core = points * static_cast<double>(state.iterations()) / threads;
  using benchmark::Counter;
  state.counters["points_per_s_per_core"] = Counter(per_core, Counter::kIsRate);
  state.counters["flops_per_point"] = flops;
  state.counters["bytes_per_point"] = kBytesPerPoint;
  state.counters["bandwidth_bytes_per_s"] = c.bandwidth;
  state.counters["peak_flops_per_s"] = c.peak_flops;
  state.counters["roofline_bound_points_per_s"] = bound;
  state.counters["bandwidth_only_points_per_s"] = bw_rate;
  state.counters["compute_only_points_per_s"] = flop_rate;
  // Rates divided by a constant: (points/s/core) / bound.
  state.counters["attained_fraction_of_bound"] = Counter(per_core / bound, Counter::kIsRate);
  state.counters["ratio_to_bandwidth_rate"] = Counter(per_core / bw_rate, Counter::kIsRate);
  state.SetLabel(bw_rate <= flop_rate ? "bound: memory bandwidth" : "bound: peak flops");
}

void BM_CeilingMemoryBandwidthTriad(benchmark::State& state) {
  double bw = 0;
  for (auto _ : state) bw = homodyne::bench::MeasureTriadBandwidth(0.5);
  state.counters["bandwidth_bytes_per_s"] = bw;
}
BENCHMARK(BM_CeilingMemoryBandwidthTriad)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CeilingPeakFlopsPerCore(benchmark::State& state) {
  double flops = 0;
  for (auto _ : state) flops = homodyne::bench::MeasurePeakFlops(0.3);
  state.counters["peak_flops_per_s"] = flops;
  state.SetLabel(homodyne::bench::PeakFlopsIsa());
}
BENCHMARK(BM_CeilingPeakFlopsPerCore)->Iterations(1)->Unit(benchmark::kMillisecond);

// range(0) = threads, range(1) = 1 for exact libm sin/cos (bit-identical c2), 0 for FastSinCos.
homodyne::model::KernelOptions Options(const benchmark::State& state) {
  return {.threads = static_cast<int>(state.range(0)),
          .exact_transcendentals = state.range(1) != 0};
}

const homodyne::Topology& TheTopology() {
  static const homodyne::Topology topology;
  return topology;
}

// While alive: the calling thread pinned to the first core of the process's CPU set and the
// kernel's workers (through worker_start) to the next ones, as homodyne pins its threads —
// unpinned threads on this 2-core VM made the 2-thread times bimodal. Nothing is pinned if
// the CPU set has fewer cores than threads (e.g. under taskset -c 1). The caller's affinity
// comes back on destruction.
class PinnedThreads {
 public:
  PinnedThreads(homodyne::model::KernelOptions& options) {
    const auto& topology = TheTopology();
    const homodyne::PlacementPlan plan = homodyne::PlanThreads(topology, options.threads);
    if (static_cast<int>(plan.slots.size()) < options.threads) return;
    saved_ = sched_getaffinity(0, sizeof(original_), &original_) == 0;
    pinned_ = homodyne::PinCurrentThread(topology, plan.slots.front());
    options.worker_start = [&topology, slots = plan.slots](int index) {
      homodyne::PinCurrentThread(topology, slots.at(static_cast<size_t>(index)));
    };
  }
  ~PinnedThreads() {
    if (saved_) sched_setaffinity(0, sizeof(original_), &original_);
  }
  PinnedThreads(const PinnedThreads&) = delete;
  PinnedThreads& operator=(const PinnedThreads&) = delete;
  bool pinned() const { return pinned_; }

 private:
  cpu_set_t original_{};
  bool saved_ = false;
  bool pinned_ = false;
};

// One kernel pass timed over the benchmark loop, with its rate and roofline counters.
template <typename Pass>
void TimePass(benchmark::State& state, double flops_per_point, Pass pass,
              homodyne::model::KernelOptions options, const Setup& s = TheSetup()) {
  const PinnedThreads pin(options);
  ModelKernel kernel(AnalysisMode::kLaminarFlow, s.geometry, s.t, s.phi, s.tiles, options);
  TheCeilings();  // measured once, outside the timed loop
  for (auto _ : state) benchmark::DoNotOptimize(pass(kernel, s.params));
  state.counters["pinned"] = pin.pinned() ? 1.0 : 0.0;
  state.counters["points_per_s"] = benchmark::Counter(
      s.points() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["threads"] = static_cast<double>(state.range(0));
  // Share of the points on the separable paths (the rest is evaluated directly).
  const auto counts = kernel.CountSeparable(s.params);
  state.counters["separable_shear_fraction"] =
      static_cast<double>(counts.shear) / static_cast<double>(counts.points);
  state.counters["separable_diffusion_fraction"] =
      static_cast<double>(counts.diffusion) / static_cast<double>(counts.points);
  RooflineCounters(state, s.points(), static_cast<int>(state.range(0)), flops_per_point);
}
template <typename Pass>
void TimePass(benchmark::State& state, double flops_per_point, Pass pass) {
  TimePass(state, flops_per_point, pass, Options(state));
}

void BM_KernelChi2(benchmark::State& state) {
  TimePass(state, kChi2FlopsPerPoint,
           [](const ModelKernel& k, const auto& params) { return k.Chi2(params); });
}
BENCHMARK(BM_KernelChi2)
    ->ArgNames({"threads", "exact"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_KernelNormalEquations(benchmark::State& state) {
  TimePass(state, kNormalFlopsPerPoint,
           [](const ModelKernel& k, const auto& params) { return k.Accumulate(params).chi2; });
}
BENCHMARK(BM_KernelNormalEquations)
    ->ArgNames({"threads", "exact"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The passes under a robust loss (optimization.nlsq.loss): range(1) = the LossKind (0 linear,
// 1 soft_l1, 2 huber, 3 cauchy, 4 arctan), range(2) = f_scale in units of σ = 0.01 (100:
// homodyne's default f_scale of 1 in c2 units, where soft_l1 takes its series; 1: f_scale
// 0.01, where most points are beyond the series and, for the other losses, near the knee),
// one thread, on TheFitSetup's data. The robust loops take the weighted form (no unit-weight loops)
// and per point z, ρ, the weight and the weighted residual; the flop counters keep the linear
// pass's count, so their rates compare the same work.
void LossArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads", "loss", "f_scale_sigma"})
      ->Args({1, 0, 1})
      ->ArgsProduct({{1}, {1}, {100, 1}})
      ->ArgsProduct({{1}, {2, 3, 4}, {1}})
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}
homodyne::model::KernelOptions LossOptions(const benchmark::State& state) {
  homodyne::model::KernelOptions o{.threads = static_cast<int>(state.range(0))};
  o.loss.kind = static_cast<homodyne::model::LossKind>(state.range(1));
  o.loss.f_scale = static_cast<double>(state.range(2));
  return o;
}
void BM_KernelChi2Loss(benchmark::State& state) {
  TimePass(
      state, kChi2FlopsPerPoint,
      [](const ModelKernel& k, const auto& params) { return k.Chi2(params); }, LossOptions(state),
      TheFitSetup());
}
BENCHMARK(BM_KernelChi2Loss)->Apply(LossArgs);
void BM_KernelNormalEquationsLoss(benchmark::State& state) {
  TimePass(
      state, kNormalFlopsPerPoint,
      [](const ModelKernel& k, const auto& params) { return k.Accumulate(params).chi2; },
      LossOptions(state), TheFitSetup());
}
BENCHMARK(BM_KernelNormalEquationsLoss)->Apply(LossArgs);

// The two-component (heterodyne) kernel on the same 23 angles × 1000 frames: its time grid
// t_m = (m + 1)·dt, xpcsjax's template-like parameters (decelerating flow, a fraction
// that changes with time). Flops per angle-point of the cheapest formulation we know, counted
// as for the homodyne passes (FMA = 2; the uniform weight and 1/σ applied once per sum; the
// angle-independent work of a column, its decays, fraction products and chain-rule factors,
// shared by the 23 angles; docs/performance.md, "Counting, two-component"):
// χ² — cos θ by angle addition from per-(angle, time) tables (3), the sum from the column's
// rr + ss and m2·h_r·h_s (2), c2 = o + (β/norm)·sum (3), r (1), Σ r² (2), + 1 amortised = 12;
// normal pass, in the factorised form of heterodyne_block.h — cos θ and sin θ (6), the χ²
// terms (8), the six chain-rule coefficients and u_c from per-column parts (21), the tile's
// per-angle sums (65), the per-column sums S (21 FMA) and T (6 FMA) (54), + amortised the
// fold of S and T into JᵀWJ and JᵀWr (373 per column ÷ 23 = 16) and the per-column
// precomputation (2) = 172.
constexpr double kHetChi2FlopsPerPoint = 12.0;
constexpr double kHetNormalFlopsPerPoint = 172.0;

struct HeterodyneSetup {
  homodyne::model::HeterodyneGrid grid;
  std::vector<double> params;

  HeterodyneSetup() {
    const Setup& s = TheSetup();
    grid.dt = 1e-3;
    for (int m = 0; m < kFrames; ++m) grid.t.push_back((m + 1) * grid.dt);
    grid.q = 0.0054;
    grid.phi_deg = s.phi;
    for (int k = 0; k < kAngles; ++k) params.push_back(0.2 + 0.002 * k);
    for (int k = 0; k < kAngles; ++k) params.push_back(1.0);
    for (double v :
         {2e4, 0.3, 50.0, 8e4, -0.2, 100.0, 400.0, -0.43, -5.0, 0.35, 0.8, 0.3, 0.1, 3.0}) {
      params.push_back(v);
    }
  }
};

const HeterodyneSetup& TheHeterodyneSetup() {
  static const HeterodyneSetup setup;
  return setup;
}

// The same model on the first angle alone (999 tiles, 499 500 points): with few angles the
// per-point transport decays are not shared, and dominate.
struct HeterodyneOneAngle {
  homodyne::model::HeterodyneGrid grid;
  std::vector<double> params;
  std::vector<RowTile> tiles;

  HeterodyneOneAngle() {
    const HeterodyneSetup& h = TheHeterodyneSetup();
    grid = h.grid;
    grid.phi_deg.resize(1);
    params = {h.params[0], h.params[kAngles]};
    params.insert(params.end(), h.params.begin() + 2 * kAngles, h.params.end());
    for (const RowTile& tile : TheSetup().tiles) {
      if (tile.angle == 0) tiles.push_back(tile);
    }
  }
  double points() const {
    double n = 0.0;
    for (const RowTile& tile : tiles) n += tile.count;
    return n;
  }
};

const HeterodyneOneAngle& TheHeterodyneOneAngle() {
  static const HeterodyneOneAngle setup;
  return setup;
}

// Shares of the points on the separable paths: the phase, and the half decays (over the
// points × {h_r, h_s}: factorised, or the clip's constant).
void HeterodyneSeparableCounters(benchmark::State& state,
                                 const homodyne::model::HeterodyneKernel& kernel,
                                 const std::vector<double>& params, double points) {
  state.counters["separable_phase_fraction"] =
      static_cast<double>(kernel.CountSeparable(params)) / points;
  const auto decay = kernel.CountSeparableDecay(params);
  state.counters["separable_decay_fraction"] =
      static_cast<double>(decay.factorised + decay.clipped) / (2.0 * points);
}

template <typename Pass>
void TimeHeterodynePass(benchmark::State& state, double flops_per_point, Pass pass,
                        homodyne::model::KernelOptions options = {}, const Setup& s = TheSetup()) {
  // TheSetup's tiles (row i < column j) and data unless a setup is given.
  const HeterodyneSetup& h = TheHeterodyneSetup();
  options.threads = static_cast<int>(state.range(0));
  const PinnedThreads pin(options);
  const homodyne::model::HeterodyneKernel kernel(h.grid, s.tiles, options);
  TheCeilings();
  for (auto _ : state) benchmark::DoNotOptimize(pass(kernel, h.params));
  state.counters["pinned"] = pin.pinned() ? 1.0 : 0.0;
  state.counters["points_per_s"] = benchmark::Counter(
      s.points() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["threads"] = static_cast<double>(state.range(0));
  HeterodyneSeparableCounters(state, kernel, h.params, s.points());
  RooflineCounters(state, s.points(), static_cast<int>(state.range(0)), flops_per_point);
}

// One angle: points per second and the separable shares only (the flop counts above are per
// point of 23 angles).
template <typename Pass>
void TimeHeterodyneOneAnglePass(benchmark::State& state, Pass pass) {
  const HeterodyneOneAngle& h = TheHeterodyneOneAngle();
  homodyne::model::KernelOptions options{.threads = static_cast<int>(state.range(0))};
  const PinnedThreads pin(options);
  const homodyne::model::HeterodyneKernel kernel(h.grid, h.tiles, options);
  for (auto _ : state) benchmark::DoNotOptimize(pass(kernel, h.params));
  state.counters["pinned"] = pin.pinned() ? 1.0 : 0.0;
  state.counters["points_per_s"] = benchmark::Counter(
      h.points() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["threads"] = static_cast<double>(state.range(0));
  HeterodyneSeparableCounters(state, kernel, h.params, h.points());
}

void BM_HeterodyneKernelChi2(benchmark::State& state) {
  TimeHeterodynePass(state, kHetChi2FlopsPerPoint,
                     [](const homodyne::model::HeterodyneKernel& k, const auto& params) {
                       return k.Chi2(params);
                     });
}
BENCHMARK(BM_HeterodyneKernelChi2)
    ->ArgNames({"threads"})
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The two-component model at TheHeterodyneSetup's parameters plus noise, for the two-component
// passes under a robust loss.
Setup HeterodyneModelPlusNoiseSetup(Noise noise) {
  Setup s;
  const HeterodyneSetup& h = TheHeterodyneSetup();
  const homodyne::model::HeterodyneKernel kernel(h.grid, s.tiles,
                                                 homodyne::model::KernelOptions{.threads = 1});
  std::vector<double> model(s.data.size());
  kernel.EvaluateModel(h.params, model);
  SetDataToModelPlusNoise(model, s.data, noise);
  return s;
}
const Setup& TheHeterodyneFitSetup() {
  static const Setup setup = HeterodyneModelPlusNoiseSetup(Noise::kQuiet);
  return setup;
}

void BM_HeterodyneKernelNormalEquations(benchmark::State& state) {
  TimeHeterodynePass(state, kHetNormalFlopsPerPoint,
                     [](const homodyne::model::HeterodyneKernel& k, const auto& params) {
                       return k.Accumulate(params).chi2;
                     });
}
BENCHMARK(BM_HeterodyneKernelNormalEquations)
    ->ArgNames({"threads"})
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The two-component passes under a robust loss, as BM_Kernel*Loss: range(1) the LossKind,
// range(2) f_scale in units of σ = 0.01, one thread, on TheHeterodyneFitSetup's data.
void BM_HeterodyneKernelChi2Loss(benchmark::State& state) {
  TimeHeterodynePass(
      state, kHetChi2FlopsPerPoint,
      [](const homodyne::model::HeterodyneKernel& k, const auto& params) { return k.Chi2(params); },
      LossOptions(state), TheHeterodyneFitSetup());
}
BENCHMARK(BM_HeterodyneKernelChi2Loss)->Apply(LossArgs);
void BM_HeterodyneKernelNormalEquationsLoss(benchmark::State& state) {
  TimeHeterodynePass(
      state, kHetNormalFlopsPerPoint,
      [](const homodyne::model::HeterodyneKernel& k, const auto& params) {
        return k.Accumulate(params).chi2;
      },
      LossOptions(state), TheHeterodyneFitSetup());
}
BENCHMARK(BM_HeterodyneKernelNormalEquationsLoss)->Apply(LossArgs);

void BM_HeterodyneKernelOneAngleChi2(benchmark::State& state) {
  TimeHeterodyneOneAnglePass(state, [](const homodyne::model::HeterodyneKernel& k,
                                       const auto& params) { return k.Chi2(params); });
}
BENCHMARK(BM_HeterodyneKernelOneAngleChi2)
    ->ArgNames({"threads"})
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_HeterodyneKernelOneAngleNormalEquations(benchmark::State& state) {
  TimeHeterodyneOneAnglePass(state, [](const homodyne::model::HeterodyneKernel& k,
                                       const auto& params) { return k.Accumulate(params).chi2; });
}
BENCHMARK(BM_HeterodyneKernelOneAngleNormalEquations)
    ->ArgNames({"threads"})
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One χ² pass split over the MPI ranks: rank r takes a contiguous share of the tiles with
// ≈ 1/size of the points (one thread per rank) and the χ² are summed with MPI_Allreduce.
// A fixed iteration count keeps the ranks in step (every rank runs the same loop).
void BM_KernelChi2Ranks(benchmark::State& state) {
  const Setup& s = TheSetup();
  const homodyne::Comm& world = homodyne::bench::BenchEnvironment().world();
  const double share = s.points() / world.size();
  std::vector<RowTile> mine;
  double before = 0.0;
  for (const RowTile& tile : s.tiles) {
    const int owner =
        std::min(world.size() - 1, static_cast<int>((before + 0.5 * tile.count) / share));
    if (owner == world.rank()) mine.push_back(tile);
    before += tile.count;
  }
  ModelKernel kernel(AnalysisMode::kLaminarFlow, s.geometry, s.t, s.phi, mine, {.threads = 1});
  world.Barrier();
  for (auto _ : state) {
    double local = kernel.Chi2(s.params), total = 0.0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, world.get());
    benchmark::DoNotOptimize(total);
  }
  state.counters["points_per_s"] = benchmark::Counter(
      s.points() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ranks"] = world.size();
}
BENCHMARK(BM_KernelChi2Ranks)->Iterations(30)->Unit(benchmark::kMillisecond)->UseRealTime();

// One tile block of 128 separable columns evaluated over and over (in L1): the point loop
// alone, without the per-column setup, the direct columns near the diagonal and the memory
// traffic of a whole pass. range(0) = 0: χ² block, 1: normal-equation block.
void BM_PointBlock(benchmark::State& state) {
  namespace d = homodyne::model::detail;
  // The kernel's block widths (kernel_impl.h): the normal pass's and the χ² pass's.
  const int n = state.range(0) != 0 ? homodyne::model::kernel_internal::kBlock
                                    : homodyne::model::kernel_internal::kWideBlock;
  std::vector<double> g1d(n, 0.5), shift(n, 1e-12), inv_ig(n), g1d_inv_ig2(n), ig(n), ts(n), tc(n),
      data(n, 1.1), s(n, 0.0), ds(n, 0.0), fac(n, 0.1), e(3 * n, 0.3), f(3 * n, 0.2),
      sums(9 * n, 0.0);
  for (int c = 0; c < n; ++c) {
    ig[static_cast<size_t>(c)] = 10.0 + c;
    inv_ig[static_cast<size_t>(c)] = 1.0 / (10.0 + c);
    g1d_inv_ig2[static_cast<size_t>(c)] = 0.5 / ((10.0 + c) * (10.0 + c));
    ts[static_cast<size_t>(c)] = std::sin(0.1 * c);
    tc[static_cast<size_t>(c)] = std::cos(0.1 * c);
  }
  d::PointBlock in;
  in.n = n;
  in.g1d = g1d.data();
  in.fac = fac.data();
  in.ig = ig.data();
  for (int q = 0; q < 3; ++q) {
    in.e[q] = e.data() + q * n;
    in.f[q] = f.data() + q * n;
  }
  in.s = s.data();
  in.ds = ds.data();
  in.sep_lo = 0;
  in.sep_hi = n;
  in.sep = d::SeparableRow{ts.data(),     tc.data(),         0.3, 0.95, 100.0, 0.01, shift.data(),
                           inv_ig.data(), g1d_inv_ig2.data()};
  in.data = data.data();
  in.uniform_weight =
      1.0;  // the kernel passes 1 for its tiles of weight 2 (ModelKernel::Impl::weight_scale)
  in.contrast = 0.2;
  in.offset = 1.0;
  in.inv_sigma = 1.0;
  in.a = 3.0;
  in.b = 0.1;
  double* col[9];
  for (int k = 0; k < 9; ++k) col[k] = sums.data() + k * n;
  in.saa = col[0];
  in.sab = col[1];
  in.sbb = col[2];
  in.sag = col[3];
  in.sbg = col[4];
  in.sgg = col[5];
  in.sar = col[6];
  in.sbr = col[7];
  in.sgr = col[8];
  const bool normal = state.range(0) != 0;
  for (auto _ : state) {
    double out[d::kNumTileSums] = {};
    if (normal) {
      d::NormalLaminarBlock(in, out);
    } else {
      out[0] = d::Chi2Block(in);
    }
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["avx512_copy"] = d::HasAvx512() ? 1.0 : 0.0;
}
BENCHMARK(BM_PointBlock)->ArgName("normal")->Arg(0)->Arg(1);

// ---- Bounds per pass (bench/run_kernel_bounds.sh, docs/performance.md "Kernels: bounds") ----
//
// Cycles per point measured by the thread's CPU time (not the wall clock: on a loaded host a
// descheduled thread would count) times the core clock, the minimum over the benchmark's
// iterations. The clock is measured the same way, by a chain of dependent integer adds (one per
// cycle).

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Cycles per CPU second: the best of 5 runs of 8·10⁷ dependent adds.
double MeasureClockHz() {
  constexpr long kSteps = 10'000'000;  // 8 adds each
  double best = 0.0;
  for (int run = 0; run < 5; ++run) {
    std::uint64_t x = 0;
    const double t0 = ThreadCpuSeconds();
    for (long i = 0; i < kSteps; ++i) {
      __asm__ volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    }
    const double t1 = ThreadCpuSeconds();
    benchmark::DoNotOptimize(x);
    best = std::max(best, 8.0 * static_cast<double>(kSteps) / (t1 - t0));
  }
  return best;
}
double TheClockHz() {
  static const double hz = MeasureClockHz();
  return hz;
}

void BM_CeilingClock(benchmark::State& state) {
  double hz = 0.0;
  for (auto _ : state) hz = MeasureClockHz();
  state.counters["clock_hz"] = hz;
}
BENCHMARK(BM_CeilingClock)->Iterations(1)->Unit(benchmark::kMillisecond);

// Times `calls` calls of f per benchmark iteration and sets the bound counters for `points`
// points per call: the minimum and median CPU time per point, in ns and in cycles.
template <typename F>
void TimeCpu(benchmark::State& state, double points, int calls, F&& f) {
  std::vector<double> per_call;
  for (auto _ : state) {
    const double t0 = ThreadCpuSeconds();
    for (int i = 0; i < calls; ++i) f();
    per_call.push_back((ThreadCpuSeconds() - t0) / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  const double hz = TheClockHz();
  const double best = per_call.front(), median = per_call[per_call.size() / 2];
  state.counters["points_per_call"] = points;
  state.counters["clock_hz"] = hz;
  state.counters["cpu_ns_per_point_min"] = 1e9 * best / points;
  state.counters["cpu_ns_per_point_median"] = 1e9 * median / points;
  state.counters["cycles_per_point_min"] = best * hz / points;
  state.counters["cycles_per_point_median"] = median * hz / points;
#ifdef HOMODYNE_BENCH_STANDINS
  state.SetLabel("standins");
#endif
}

// range(0): 0 static, 1 laminar; range(1): 0 χ² pass, 1 normal-equation pass. One thread,
// pinned; the laminar set-up of the other benchmarks (static: its first 2·23 + 3 parameters).
void BM_BoundPass(benchmark::State& state) {
  const Setup& s = TheSetup();
  const bool laminar = state.range(0) != 0, normal = state.range(1) != 0;
  homodyne::model::KernelOptions options{.threads = 1};
  const PinnedThreads pin(options);
  const ModelKernel kernel(laminar ? AnalysisMode::kLaminarFlow : AnalysisMode::kStatic, s.geometry,
                           s.t, s.phi, s.tiles, options);
  std::vector<double> params = s.params;
  if (!laminar) params.resize(2 * kAngles + 3);
  TimeCpu(state, s.points(), 1, [&] {
    benchmark::DoNotOptimize(normal ? kernel.Accumulate(params).chi2 : kernel.Chi2(params));
  });
  state.counters["pinned"] = pin.pinned() ? 1.0 : 0.0;
}
BENCHMARK(BM_BoundPass)
    ->ArgNames({"laminar", "normal"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Iterations(15)
    ->Unit(benchmark::kMillisecond);

// The point loop alone on one cache-resident block, as BM_PointBlock: range(0) 0 static,
// 1 laminar (every column separable); range(1) 0 χ², 1 normal equations. 2000 calls per
// iteration (a block takes well under a microsecond).
void BM_BoundPointBlock(benchmark::State& state) {
  namespace d = homodyne::model::detail;
  const bool laminar = state.range(0) != 0, normal = state.range(1) != 0;
  const int n = normal ? homodyne::model::kernel_internal::kBlock
                       : homodyne::model::kernel_internal::kWideBlock;
  std::vector<double> g1d(n, 0.5), shift(n, 1e-12), inv_ig(n), g1d_inv_ig2(n), ig(n), ts(n), tc(n),
      data(n, 1.1), sfac(n, 0.8), dsfac(n, -0.1), fac(n, 0.1), e(3 * n, 0.3), f(3 * n, 0.2),
      sums(9 * n, 0.0);
  for (int c = 0; c < n; ++c) {
    const auto u = static_cast<size_t>(c);
    ig[u] = 10.0 + c;
    inv_ig[u] = 1.0 / (10.0 + c);
    g1d_inv_ig2[u] = 0.5 / ((10.0 + c) * (10.0 + c));
    ts[u] = std::sin(0.1 * c);
    tc[u] = std::cos(0.1 * c);
  }
  d::PointBlock in;
  in.n = n;
  in.g1d = g1d.data();
  in.fac = fac.data();
  in.ig = ig.data();
  for (int q = 0; q < 3; ++q) {
    in.e[q] = e.data() + q * n;
    in.f[q] = f.data() + q * n;
  }
  if (laminar) {
    in.s = sfac.data();
    in.ds = dsfac.data();
    in.sep_lo = 0;
    in.sep_hi = n;
    in.sep = d::SeparableRow{ts.data(),     tc.data(),         0.3, 0.95, 100.0, 0.01, shift.data(),
                             inv_ig.data(), g1d_inv_ig2.data()};
  }
  in.data = data.data();
  in.uniform_weight = 1.0;  // the unit-weight loops, as the kernel's tiles of weight 2 take
  in.contrast = 0.2;
  in.offset = 1.0;
  in.inv_sigma = 1.0;
  in.a = 3.0;
  in.b = 0.1;
  double* col[9];
  for (int k = 0; k < 9; ++k) col[k] = sums.data() + k * n;
  in.saa = col[0];
  in.sab = col[1];
  in.sbb = col[2];
  in.sag = col[3];
  in.sbg = col[4];
  in.sgg = col[5];
  in.sar = col[6];
  in.sbr = col[7];
  in.sgr = col[8];
  TimeCpu(state, n, 2000, [&] {
    double out[d::kNumTileSums] = {};
    if (normal) {
      laminar ? d::NormalLaminarBlock(in, out) : d::NormalStaticBlock(in, out);
    } else {
      out[0] = d::Chi2Block(in);
    }
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  });
  state.counters["avx512_copy"] = d::HasAvx512() ? 1.0 : 0.0;
}
BENCHMARK(BM_BoundPointBlock)
    ->ArgNames({"laminar", "normal"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Iterations(30)
    ->Unit(benchmark::kMicrosecond);

// The static model at TheSetup's first 2·23 + 3 parameters plus noise, for the paired robust-loss
// benchmark below.
const Setup& TheStaticFitSetup() {
  static const Setup setup = ModelPlusNoiseSetup(AnalysisMode::kStatic, 2 * kAngles + 3);
  return setup;
}

// The paired benchmark's data: `model` 0 static, 1 laminar_flow, 2 two_component, with the
// quiet or the noisy noise (built once each, on first use).
const Setup& PairedSetup(int model, Noise noise) {
  if (noise == Noise::kQuiet) {
    return model == 0 ? TheStaticFitSetup() : model == 1 ? TheFitSetup() : TheHeterodyneFitSetup();
  }
  // Each built on its own first use: a run of one model does not pay for the others' data.
  if (model == 0) {
    static const Setup noisy = ModelPlusNoiseSetup(AnalysisMode::kStatic, 2 * kAngles + 3, noise);
    return noisy;
  }
  if (model == 1) {
    static const Setup noisy =
        ModelPlusNoiseSetup(AnalysisMode::kLaminarFlow, 2 * kAngles + 7, noise);
    return noisy;
  }
  static const Setup noisy = HeterodyneModelPlusNoiseSetup(noise);
  return noisy;
}

// The pairs' per-pass CPU seconds → the benchmark's counters.
void PairedCounters(benchmark::State& state, std::vector<double> linear,
                    std::vector<double> robust) {
  std::vector<double> ratio(linear.size());
  for (size_t i = 0; i < ratio.size(); ++i) ratio[i] = robust[i] / linear[i];
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  state.counters["pairs"] = static_cast<double>(ratio.size());
  state.counters["linear_ms_median"] = 1e3 * quantile(linear, 0.5);
  state.counters["robust_ms_median"] = 1e3 * quantile(robust, 0.5);
  state.counters["linear_ms_min"] = 1e3 * quantile(linear, 0.0);
  state.counters["robust_ms_min"] = 1e3 * quantile(robust, 0.0);
  state.counters["ratio_median"] = quantile(ratio, 0.5);
  state.counters["ratio_q25"] = quantile(ratio, 0.25);
  state.counters["ratio_q75"] = quantile(ratio, 0.75);
  state.counters["avx512_copy"] = homodyne::model::detail::HasAvx512() ? 1.0 : 0.0;
}

// Runs the pairs: `pass(robust)` returns a callable pass over the linear (false) or robust
// (true) kernel.
template <typename Pass>
void TimePairs(benchmark::State& state, Pass pass) {
  std::vector<double> linear, robust;
  bool robust_first = false;
  for (auto _ : state) {
    double seconds[2] = {0.0, 0.0};
    for (int k = 0; k < 2; ++k) {
      const bool is_robust = robust_first == (k == 0);
      const double t0 = ThreadCpuSeconds();
      benchmark::DoNotOptimize(pass(is_robust));
      seconds[is_robust ? 1 : 0] = ThreadCpuSeconds() - t0;
    }
    linear.push_back(seconds[0]);
    robust.push_back(seconds[1]);
    state.SetIterationTime(seconds[1]);
    robust_first = !robust_first;
  }
  PairedCounters(state, std::move(linear), std::move(robust));
}

// A robust loss against the linear loss, paired (issue: the robust pass's extra cost ≤ 10 % of
// a normal pass). Two kernels over the same data, one with the linear loss and one with the
// robust loss of range(1) at f_scale range(2)·σ (as LossArgs), take turns: each iteration runs
// both passes once, in alternating order, and times each by the thread's CPU clock. A pair's
// two passes are a few hundred milliseconds apart, so what moves this host's speed between runs
// and processes (±20 %, bimodal process times) falls on both alike; the counters are the median
// and quartiles of the pairs' ratios, and each side's median time. range(3): 0 static, 1
// laminar_flow, 2 two_component; range(0): 0 χ² pass, 1 normal-equation pass; range(4): 0 the
// linear kernel built first, 1 the robust one (where each kernel's buffers land moves a pass's
// time from process to process, so the script runs several processes and both orders);
// range(5): 0 the quiet data (every soft_l1 residual inside its series at f_scale 1), 1 the
// noisy data (Gaussian noise of 0.01: a vector of 8 points holds one beyond it more often than
// not). One thread, pinned.
void BM_RobustOverLinearPaired(benchmark::State& state) {
  const bool normal = state.range(0) != 0;
  const int model = static_cast<int>(state.range(3));
  homodyne::model::KernelOptions linear_options{.threads = 1};
  const PinnedThreads pin(linear_options);
  homodyne::model::KernelOptions robust_options = linear_options;
  robust_options.loss.kind = static_cast<homodyne::model::LossKind>(state.range(1));
  robust_options.loss.f_scale = static_cast<double>(state.range(2));
  const bool robust_built_first = state.range(4) != 0;
  const Noise noise = state.range(5) != 0 ? Noise::kNoisy : Noise::kQuiet;
  // The two kernels, built in the order asked: pair = {linear, robust}.
  auto build = [&](auto make) {
    auto first = make(robust_built_first ? robust_options : linear_options);
    auto second = make(robust_built_first ? linear_options : robust_options);
    if (robust_built_first) std::swap(first, second);
    return std::pair{std::move(first), std::move(second)};
  };
  if (model == 2) {
    const HeterodyneSetup& h = TheHeterodyneSetup();
    const Setup& s = PairedSetup(model, noise);
    const auto [lin, rob] = build([&](const homodyne::model::KernelOptions& o) {
      return std::make_unique<homodyne::model::HeterodyneKernel>(h.grid, s.tiles, o);
    });
    TimePairs(state, [&](bool is_robust) {
      const auto& k = *(is_robust ? rob : lin);
      return normal ? k.Accumulate(h.params).chi2 : k.Chi2(h.params);
    });
  } else {
    const bool laminar = model == 1;
    const Setup& s = PairedSetup(model, noise);
    const AnalysisMode mode = laminar ? AnalysisMode::kLaminarFlow : AnalysisMode::kStatic;
    const auto [lin, rob] = build([&](const homodyne::model::KernelOptions& o) {
      return std::make_unique<ModelKernel>(mode, s.geometry, s.t, s.phi, s.tiles, o);
    });
    TimePairs(state, [&](bool is_robust) {
      const auto& k = *(is_robust ? rob : lin);
      return normal ? k.Accumulate(s.params).chi2 : k.Chi2(s.params);
    });
  }
  state.counters["pinned"] = pin.pinned() ? 1.0 : 0.0;
}
BENCHMARK(BM_RobustOverLinearPaired)
    ->ArgNames({"normal", "loss", "f_scale_sigma", "model", "robust_built_first", "noisy"})
    ->ArgsProduct({{1, 0}, {1}, {100}, {0, 1, 2}, {0, 1}, {0, 1}})
    ->ArgsProduct({{1}, {2, 3, 4}, {1}, {0, 1, 2}, {0}, {0}})
    ->Iterations(24)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Naive χ²: every point of every angle recomputes sqrt, exp and sin (no sharing across
// angles, no per-column reuse), single thread.
void BM_NaiveChi2(benchmark::State& state) {
  const Setup& s = TheSetup();
  const double* p = s.params.data() + 2 * kAngles;
  std::vector<double> ts(s.t), cd(kFrames, 0.0), cg(kFrames, 0.0);
  for (int m = 1; m < kFrames; ++m) {
    auto d = [&](int r) { return std::max(p[0] * std::pow(ts[r], p[1]) + p[2], 1e-10); };
    auto g = [&](int r) { return std::max(p[3] * std::pow(ts[r], p[4]) + p[5], 1e-10); };
    cd[m] = cd[m - 1] + 0.5 * (d(m - 1) + d(m));
    cg[m] = cg[m - 1] + 0.5 * (g(m - 1) + g(m));
  }
  const double wq = s.geometry.DiffusionPrefactor(), sp = s.geometry.SincPrefactor();
  for (auto _ : state) {
    double chi2 = 0.0;
    for (const RowTile& tile : s.tiles) {
      const double cosk = std::cos(std::numbers::pi / 180.0 * (p[6] - s.phi[tile.angle]));
      for (int c = 0; c < tile.count; ++c) {
        const int j = tile.col_begin + c;
        const double dd = cd[tile.row] - cd[j], dg = cg[tile.row] - cg[j];
        const double g1d = std::exp(std::max(-wq * std::sqrt(dd * dd + 1e-12), -700.0));
        const double x = sp * cosk * std::sqrt(dg * dg + 1e-12);
        const double sinc = std::abs(x) < 1e-4 ? 1.0 - x * x / 6.0 : std::sin(x) / x;
        const double g1 = std::max(g1d * sinc * sinc, 1e-10);
        const double r =
            (tile.data[c] - (s.params[kAngles + tile.angle] + s.params[tile.angle] * g1 * g1)) /
            0.01;
        chi2 += tile.uniform_weight * r * r;
      }
    }
    benchmark::DoNotOptimize(chi2);
  }
  state.counters["points_per_s"] = benchmark::Counter(
      s.points() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NaiveChi2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
