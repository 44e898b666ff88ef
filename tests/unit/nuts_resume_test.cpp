// Checkpoint/resume: a chain stopped at any iteration and restored from its saved
// state must produce bit-identical subsequent draws.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/errors.h"
#include "nuts/log_density.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"

namespace homodyne::nuts {
namespace {

struct Record {
  std::vector<double> position;
  TransitionStats stats;
};

std::vector<Record> Advance(NutsChain& chain, int iterations) {
  std::vector<Record> records;
  for (int i = 0; i < iterations; ++i) {
    const IterationResult r = chain.Step();
    records.push_back({std::vector<double>(r.position.begin(), r.position.end()), r.stats});
  }
  return records;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

void ExpectBitIdentical(const std::vector<Record>& a, const std::vector<Record>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].position.size(), b[i].position.size());
    for (std::size_t k = 0; k < a[i].position.size(); ++k) {
      ASSERT_TRUE(SameBits(a[i].position[k], b[i].position[k])) << "draw " << i << " coord " << k;
    }
    EXPECT_TRUE(SameBits(a[i].stats.accept_stat, b[i].stats.accept_stat)) << i;
    EXPECT_TRUE(SameBits(a[i].stats.energy, b[i].stats.energy)) << i;
    EXPECT_TRUE(SameBits(a[i].stats.potential, b[i].stats.potential)) << i;
    EXPECT_TRUE(SameBits(a[i].stats.step_size, b[i].stats.step_size)) << i;
    EXPECT_EQ(a[i].stats.n_leapfrog, b[i].stats.n_leapfrog) << i;
    EXPECT_EQ(a[i].stats.tree_depth, b[i].stats.tree_depth) << i;
    EXPECT_EQ(a[i].stats.divergent, b[i].stats.divergent) << i;
  }
}

GaussianDensity Target() {
  return GaussianDensity({1.0, -2.0, 0.5}, {2.0, 0.8, 0.1,  //
                                            0.8, 1.0, 0.3,  //
                                            0.1, 0.3, 0.5});
}

// 300 iterations (200 warmup + 100 draws) straight vs 137 + save/restore + 163. The
// break at 137 falls inside the second slow window (75..99 | 100..149), so the restored
// chain must carry a half-filled Welford estimator across the update at 149, then the
// end of warmup and into sampling.
void CheckResume(MetricKind kind, int stop_at) {
  const GaussianDensity density = Target();
  NutsOptions options;
  options.num_warmup = 200;
  options.num_samples = 100;
  options.metric = kind;
  options.seed = 42;
  options.jitter = 0.1;  // exercise the jitter draw too
  const std::vector<double> init{0.3, -0.3, 0.1};

  NutsChain straight(density, options, init, 3, 5);
  const std::vector<Record> reference = Advance(straight, 300);
  EXPECT_TRUE(straight.Done());

  NutsChain first(density, options, init, 3, 5);
  std::vector<Record> resumed = Advance(first, stop_at);
  const NutsChainState saved = first.SaveState();
  EXPECT_EQ(saved.iteration, stop_at);
  NutsChain second = NutsChain::Restore(density, options, saved);
  const std::vector<Record> rest = Advance(second, 300 - stop_at);
  resumed.insert(resumed.end(), rest.begin(), rest.end());
  ExpectBitIdentical(reference, resumed);
  EXPECT_TRUE(second.Done());
}

TEST(NutsResume, DiagAcrossWindowBoundary) { CheckResume(MetricKind::kDiag, 137); }
TEST(NutsResume, DenseAcrossWindowBoundary) { CheckResume(MetricKind::kDense, 137); }
TEST(NutsResume, DiagDuringSampling) { CheckResume(MetricKind::kDiag, 250); }
TEST(NutsResume, DenseAtStartAndLastWarmupIteration) {
  CheckResume(MetricKind::kDense, 0);
  CheckResume(MetricKind::kDense, 199);
}

TEST(NutsResume, SavedStateHoldsAdaptationState) {
  const GaussianDensity density = Target();
  NutsOptions options;
  options.num_warmup = 200;
  options.num_samples = 10;
  options.metric = MetricKind::kDense;
  NutsChain chain(density, options, std::vector<double>{0.0, 0.0, 0.0}, 0, 0);
  Advance(chain, 137);
  const NutsChainState state = chain.SaveState();
  EXPECT_EQ(state.dimension, 3);
  EXPECT_EQ(state.inverse_metric.size(), 9u);
  EXPECT_EQ(state.window_counter, 137);
  EXPECT_EQ(state.window_next_end, 149);
  EXPECT_EQ(state.welford_count, 137 - 100);  // draws 100..136 of the second window
  EXPECT_GT(state.da_counter, 0.0);
  EXPECT_EQ(state.rng.stream_a, 0u);
  EXPECT_GT(state.rng.position, 0u);
}

TEST(NutsResume, RejectsMismatchedState) {
  const GaussianDensity density = Target();
  NutsOptions options;
  options.num_warmup = 50;
  options.num_samples = 10;
  NutsChain chain(density, options, std::vector<double>{0.0, 0.0, 0.0}, 0, 0);
  NutsChainState state = chain.SaveState();
  options.metric = MetricKind::kDense;
  EXPECT_THROW(NutsChain::Restore(density, options, state), Error);
  options.metric = MetricKind::kDiag;
  state.position.pop_back();
  EXPECT_THROW(NutsChain::Restore(density, options, state), Error);
}

TEST(NutsResume, RunChainStopsOnCallbackAndResumes) {
  const GaussianDensity density = Target();
  NutsOptions options;
  options.num_warmup = 60;
  options.num_samples = 40;
  NutsChain straight(density, options, std::vector<double>{0.0, 0.0, 0.0}, 1, 2);
  const ChainRun full = RunChain(straight);

  NutsChain chain(density, options, std::vector<double>{0.0, 0.0, 0.0}, 1, 2);
  const ChainRun part = RunChain(
      chain, [](const NutsChain& c, const IterationResult&) { return c.iteration() < 75; });
  EXPECT_TRUE(part.summary.stopped_early);
  EXPECT_EQ(part.summary.num_warmup, 60);
  EXPECT_EQ(part.summary.num_draws, 15);
  EXPECT_EQ(part.stats.size(), 15u);
  EXPECT_GT(part.summary.num_gradient_evaluations, 75);
  EXPECT_NE(part.summary.BriefReport().find("stopped early"), std::string::npos);
  EXPECT_FALSE(full.summary.stopped_early);
  EXPECT_GT(full.summary.step_size, 0.0);
  NutsChain restored = NutsChain::Restore(density, options, chain.SaveState());
  const ChainRun rest = RunChain(restored);
  std::vector<double> joined = part.draws;
  joined.insert(joined.end(), rest.draws.begin(), rest.draws.end());
  ASSERT_EQ(joined.size(), full.draws.size());
  EXPECT_EQ(std::memcmp(joined.data(), full.draws.data(), joined.size() * sizeof(double)), 0);
}

}  // namespace
}  // namespace homodyne::nuts
