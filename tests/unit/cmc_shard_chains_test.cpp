// Parallel chains of a CMC shard: the draws are bit-identical whatever the thread count
// (chains keyed by (seed, shard, chain), kernel sums independent of its threads), equal to
// a chain run on its own, and the placement hook sees the planned slots.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <set>

#include "cmc/shard_chains.h"
#include "core/errors.h"
#include "core/random.h"
#include "model/reference_model.h"
#include "nuts/nuts_chain.h"

namespace homodyne::cmc {
namespace {

// A static 2-angle shard (24 times, noise 0.01) and its posterior setup.
struct Shard {
  std::vector<double> t, phi{0.0, 90.0}, values;
  ShardPosteriorSetup setup;
};

Shard MakeShard(int n) {
  Shard s;
  for (int m = 1; m <= n; ++m) s.t.push_back(0.1 * m);
  const model::Geometry geometry{0.0054, 2e6, 0.1};
  model::reference::ModelInput in{model::AnalysisMode::kStatic, geometry,   s.t,       s.phi,
                                  {30000.0, -0.6, 20.0},        {0.3, 0.3}, {1.0, 1.0}};
  const auto ref = model::reference::Evaluate(in);
  CounterRng rng(9, 0, 0);
  s.values.reserve(static_cast<std::size_t>(2 * n * n));
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) s.values.push_back(ref.C2(k, i, j) + 0.01 * rng.Normal());
    }
  }
  std::size_t offset = 0;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i + 1 < n; ++i) {
      s.setup.tiles.push_back({k, i, i + 1, n - i - 1, s.values.data() + offset, nullptr, 1.0});
      offset += static_cast<std::size_t>(n - i - 1);
    }
  }
  s.setup.mode = model::AnalysisMode::kStatic;
  s.setup.geometry = geometry;
  s.setup.t = s.t;
  s.setup.phi_deg = s.phi;
  s.setup.lower = {0.0, 0.5, 100.0, -2.0, -1000.0};
  s.setup.upper = {1.0, 1.5, 1e5, 2.0, 1000.0};
  s.setup.priors = {{PriorType::kUniform, 0, 1, 0.0, 1.0},
                    {PriorType::kUniform, 0, 1, 0.5, 1.5},
                    {PriorType::kTruncatedNormal, 30000, 20000, 100.0, 1e5},
                    {PriorType::kTruncatedNormal, 0.0, 1.0, -2.0, 2.0},
                    {PriorType::kTruncatedNormal, 0.0, 300.0, -1000.0, 1000.0}};
  s.setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 0.05};
  return s;
}

TEST(ShardChains, ConcurrencyPlan) {
  EXPECT_EQ(PlanChainConcurrency(4, 2).concurrent, 2);
  EXPECT_EQ(PlanChainConcurrency(4, 2).kernel_threads, 1);
  EXPECT_EQ(PlanChainConcurrency(2, 6).concurrent, 2);
  EXPECT_EQ(PlanChainConcurrency(2, 6).kernel_threads, 3);
  EXPECT_EQ(PlanChainConcurrency(1, 4).concurrent, 1);
  EXPECT_EQ(PlanChainConcurrency(1, 4).kernel_threads, 4);
  EXPECT_EQ(PlanChainConcurrency(3, 1).kernel_threads, 1);
}

TEST(ShardChains, DrawsAreBitIdenticalForEveryThreadCount) {
  const Shard s = MakeShard(24);
  const auto layout = model::ParameterLayout::Averaged(model::AnalysisMode::kStatic, 2);
  nuts::NutsOptions no;
  no.num_warmup = 60;
  no.num_samples = 40;
  no.metric = nuts::MetricKind::kDense;
  no.seed = 5;
  const std::vector<double> theta0{0.28, 1.0, 25000.0, -0.5, 0.0};
  std::vector<std::vector<nuts::ChainRun>> results;
  for (int threads : {1, 2, 3, 5, 6}) {  // 6: 3 chains × 2 kernel threads
    ShardChainOptions o;
    o.num_chains = 3;
    o.threads = threads;
    std::mutex m;
    std::set<int> slots;
    o.worker_start = [&](int slot) {
      std::lock_guard<std::mutex> lock(m);
      slots.insert(slot);
    };
    results.push_back(RunShardChains(s.setup, layout, no, theta0, 0.02, /*shard=*/4, o));
    // Spawned threads sit on slots 1..threads−1 (chains on ⌊T/W⌋-spaced slots, their
    // kernels' workers after them): at most threads − 1 distinct slots, all below threads.
    EXPECT_LE(static_cast<int>(slots.size()), threads - 1);
    for (int slot : slots) {
      EXPECT_GE(slot, 1);
      EXPECT_LT(slot, threads);
    }
    if (threads == 6) {
      EXPECT_EQ(slots, (std::set<int>{1, 2, 3, 4, 5}));
    }
    if (threads == 2) {
      EXPECT_EQ(slots, (std::set<int>{1}));
    }
  }
  for (std::size_t r = 1; r < results.size(); ++r) {
    ASSERT_EQ(results[r].size(), 3u);
    for (std::size_t c = 0; c < 3; ++c) {
      const auto& a = results[0][c].draws;
      const auto& b = results[r][c].draws;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0)
          << "chain " << c << ", run " << r;
    }
  }
  // The chains differ from each other and chain 2 equals a chain run on its own.
  EXPECT_NE(results[0][0].draws, results[0][1].draws);
  ShardPosteriorSetup alone = s.setup;
  const ShardPosterior post(std::move(alone), layout);
  nuts::NutsChain chain(post, no, post.ToUnconstrained(theta0, 0.02), 4, 2);
  EXPECT_EQ(nuts::RunChain(chain).draws, results[2][2].draws);
}

TEST(ShardChains, AFailingChainIsReportedAfterAllStop) {
  const Shard s = MakeShard(12);
  const auto layout = model::ParameterLayout::Averaged(model::AnalysisMode::kStatic, 2);
  nuts::NutsOptions no;
  no.num_warmup = 5;
  no.num_samples = 5;
  ShardChainOptions o;
  o.num_chains = 2;
  o.threads = 2;
  const std::vector<double> theta0{0.28, 1.0, 25000.0, -0.5, 0.0};
  const ChainRunner fails_on_1 = [&](const ShardPosterior& post, int chain,
                                     std::span<const double> q0) {
    if (chain == 1) ThrowInternal("chain 1 fails");
    nuts::NutsChain c(post, no, q0, 0, static_cast<std::uint64_t>(chain));
    return nuts::RunChain(c);
  };
  EXPECT_THROW(RunShardChains(s.setup, layout, no, theta0, 0.02, 0, o, fails_on_1), Error);
}

}  // namespace
}  // namespace homodyne::cmc
