#include "cmc/shard_chains.h"

#include <algorithm>
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "core/errors.h"
#include "model/thread_pool.h"
#include "nuts/nuts_chain.h"

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

namespace {

// Worker w's posterior: ⌊T/W⌋ kernel threads on the slots after the worker's own (built on
// the worker's thread, so its kernel's memory and threads start there).
std::unique_ptr<ShardPosterior> WorkerPosterior(const ShardPosteriorSetup& setup,
                                                const model::ParameterLayout& layout,
                                                const ChainConcurrency& plan,
                                                const ShardChainOptions& options, int w) {
  ShardPosteriorSetup mine = setup;
  mine.threads = plan.kernel_threads;
  const int base = w * plan.kernel_threads;
  if (options.worker_start) {
    mine.worker_start = [base, hook = options.worker_start](int j) { hook(base + j); };
  }
  return std::make_unique<ShardPosterior>(std::move(mine), layout);
}

// Starts the W chain workers in `pool` (none when W = 1: the calling thread is the only
// worker). The pool is not movable, hence the out-parameter.
void StartWorkerPool(std::optional<model::ThreadPool>& pool, const ChainConcurrency& plan,
                     const ShardChainOptions& options) {
  if (plan.concurrent == 1) return;
  if (options.worker_start) {
    pool.emplace(plan.concurrent,
                 [&options, plan](int w) { options.worker_start(w * plan.kernel_threads); });
  } else {
    pool.emplace(plan.concurrent);
  }
}

}  // namespace

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
    const auto post = WorkerPosterior(setup, layout, plan, options, w);
    const std::vector<double> q0 = post->ToUnconstrained(theta, sigma0);
    for (int c = w; c < options.num_chains; c += plan.concurrent) {
      runs[static_cast<std::size_t>(c)] = run(*post, c, q0);
    }
  };
  std::optional<model::ThreadPool> pool;
  StartWorkerPool(pool, plan, options);
  if (pool) {
    pool->OnEachThread(worker);
  } else {
    worker(0);
  }
  return runs;
}

void RunShardChainsInRounds(const ShardPosteriorSetup& setup, const model::ParameterLayout& layout,
                            std::span<const double> theta0, double sigma0,
                            const ShardChainOptions& options, const ChainRounds& rounds) {
  options.Validate();
  const ChainConcurrency plan = PlanChainConcurrency(options.num_chains, options.threads);
  const std::vector<double> theta(theta0.begin(), theta0.end());
  // Per worker: its posterior (built on its own thread), per chain: the running chain.
  std::vector<std::unique_ptr<ShardPosterior>> posts(static_cast<std::size_t>(plan.concurrent));
  std::vector<std::unique_ptr<nuts::NutsChain>> chains(
      static_cast<std::size_t>(options.num_chains));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(plan.concurrent));
  auto setup_worker = [&](int w) {
    auto post = WorkerPosterior(setup, layout, plan, options, w);
    const std::vector<double> q0 = post->ToUnconstrained(theta, sigma0);
    for (int c = w; c < options.num_chains; c += plan.concurrent) {
      chains[static_cast<std::size_t>(c)] = rounds.start(*post, c, q0);
    }
    posts[static_cast<std::size_t>(w)] = std::move(post);
  };
  auto advance_worker = [&](int w) {
    for (int c = w; c < options.num_chains; c += plan.concurrent) {
      auto& ch = chains[static_cast<std::size_t>(c)];
      if (ch && !ch->Done()) rounds.advance(c, *ch);
    }
  };
  // Exceptions are kept per worker and the first rethrown on the calling thread.
  auto guarded = [&](const std::function<void(int)>& fn) {
    return [&errors, fn](int w) {
      try {
        fn(w);
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    };
  };
  auto rethrow = [&] {
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  };
  std::optional<model::ThreadPool> pool;
  StartWorkerPool(pool, plan, options);
  auto on_workers = [&](const std::function<void(int)>& fn) {
    const auto g = guarded(fn);
    if (pool) {
      pool->OnEachThread(g);
    } else {
      g(0);
    }
    rethrow();
  };
  on_workers(setup_worker);
  const auto pending = [&] {
    for (const auto& ch : chains) {
      if (ch && !ch->Done()) return true;
    }
    return false;
  };
  while (pending()) {
    on_workers(advance_worker);
    rounds.round_end();
  }
  // Chains and posteriors go before the pool (the kernels' threads belong to the workers).
  chains.clear();
  posts.clear();
}

}  // namespace homodyne::cmc
