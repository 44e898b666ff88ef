#include "homodyne/cmc/shard_chains.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "homodyne/error.h"
#include "homodyne/model/thread_pool.h"
#include "homodyne/nuts/nuts_chain.h"

namespace homodyne::cmc {

void ShardChainOptions::Validate() const {
  if (num_chains < 1) {
    ThrowBadInput(fmt::format("CMC needs at least 1 chain per shard, found {}", num_chains), {},
                  "num_chains");
  }
  if (threads < 1) {
    ThrowBadInput(fmt::format("threads must be >= 1, found {}", threads), {}, "threads");
  }
}

ChainConcurrency PlanChainConcurrency(int num_chains, int threads) {
  ChainConcurrency c;
  c.concurrent = std::max(1, std::min(num_chains, threads));
  c.kernel_threads = std::max(1, threads / c.concurrent);
  return c;
}

std::vector<nuts::ChainRun> RunShardChains(const ShardPosteriorSetup& setup,
                                           const model::ParameterLayout& layout,
                                           const nuts::NutsOptions& nuts_options,
                                           std::span<const double> theta0, double sigma0,
                                           std::uint64_t shard, const ShardChainOptions& options,
                                           const ChainRunner& runner) {
  options.Validate();
  const ChainConcurrency plan = PlanChainConcurrency(options.num_chains, options.threads);
  const ChainRunner run =
      runner
          ? runner
          : ChainRunner([&](const ShardPosterior& post, int chain, std::span<const double> q0) {
              nuts::NutsChain c(post, nuts_options, q0, shard, static_cast<std::uint64_t>(chain));
              return nuts::RunChain(c);
            });
  const std::vector<double> theta(theta0.begin(), theta0.end());
  std::vector<nuts::ChainRun> runs(static_cast<std::size_t>(options.num_chains));
  // Worker w: its own posterior (built on its own thread: its kernel's memory and threads
  // start there), chains w, w + W, ….
  auto worker = [&](int w) {
    ShardPosteriorSetup mine = setup;
    mine.threads = plan.kernel_threads;
    const int base = w * plan.kernel_threads;
    if (options.worker_start) {
      mine.worker_start = [base, hook = options.worker_start](int j) { hook(base + j); };
    }
    const ShardPosterior post(std::move(mine), layout);
    const std::vector<double> q0 = post.ToUnconstrained(theta, sigma0);
    for (int c = w; c < options.num_chains; c += plan.concurrent) {
      runs[static_cast<std::size_t>(c)] = run(post, c, q0);
    }
  };
  if (plan.concurrent == 1) {
    worker(0);
    return runs;
  }
  std::optional<model::ThreadPool> pool;
  if (options.worker_start) {
    pool.emplace(plan.concurrent, [&](int w) { options.worker_start(w * plan.kernel_threads); });
  } else {
    pool.emplace(plan.concurrent);
  }
  pool->OnEachThread(worker);
  return runs;
}

}  // namespace homodyne::cmc
