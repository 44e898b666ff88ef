// The NUTS chains of one CMC shard, run in parallel on the rank's threads.
//
// With C chains and T threads, W = min(C, T) chains run at a time, each on its own thread
// with its own ShardPosterior (own kernel, ⌊T/W⌋ kernel threads; 1 when C ≥ T). Chain c
// runs on worker c mod W. Every chain's RNG stream is keyed by (seed, shard, chain) and the
// kernel's sums do not depend on its thread count, so the draws are bit-identical for every
// T (and every rank count). Threads are placed through `worker_start`: worker w runs on
// compute slot w·⌊T/W⌋ and its kernel's threads on the slots after it; the calling thread
// is worker 0 and keeps its placement.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "cmc/shard_posterior.h"
#include "nuts/nuts_chain.h"
#include "nuts/nuts_options.h"
#include "nuts/run_sampler.h"

namespace homodyne::cmc {

struct ShardChainOptions {
  int num_chains = 1;
  int threads = 1;  // compute threads of the rank (slots 0..threads−1)
  // Optional: places the calling thread's sibling with slot index i (1..threads−1), e.g. a
  // hwloc pin; runs in that thread before it works.
  std::function<void(int slot)> worker_start;
  void Validate() const;  // num_chains ≥ 1, threads ≥ 1
};

struct ChainConcurrency {
  int concurrent = 1;      // chains at a time (W)
  int kernel_threads = 1;  // threads inside each chain's kernel
};
ChainConcurrency PlanChainConcurrency(int num_chains, int threads);

// Runs one chain of `posterior` from `q0` (unconstrained). The default makes a fresh
// NutsChain(posterior, options, q0, shard, chain) and runs it to the end; a caller may
// substitute one that restores or checkpoints chains. Called concurrently for different
// chains (each with its own posterior).
using ChainRunner = std::function<nuts::ChainRun(const ShardPosterior& posterior, int chain,
                                                 std::span<const double> q0)>;

// Runs the chains of shard `shard` from θ0 (constrained model parameters) and σ0; the
// result has one ChainRun per chain, in chain order. An exception in any chain is rethrown
// (the first one) after all workers have stopped.
std::vector<nuts::ChainRun> RunShardChains(const ShardPosteriorSetup& setup,
                                           const model::ParameterLayout& layout,
                                           const nuts::NutsOptions& nuts_options,
                                           std::span<const double> theta0, double sigma0,
                                           std::uint64_t shard, const ShardChainOptions& options,
                                           const ChainRunner& runner = {});

// The same chains advanced in rounds, for checkpointing: `start` makes (or restores) chain c
// on its worker's posterior (null: the chain is already complete), `advance` runs it to the
// end of its next batch; both run on the worker threads, concurrently for different chains.
// After every round `round_end` runs on the calling thread while no chain runs (a
// collective safe point), until every chain is complete. Batching does not change the draws.
struct ChainRounds {
  std::function<std::unique_ptr<nuts::NutsChain>(const ShardPosterior& posterior, int chain,
                                                 std::span<const double> q0)>
      start;
  std::function<void(int chain, nuts::NutsChain& ch)> advance;
  std::function<void()> round_end;
};
void RunShardChainsInRounds(const ShardPosteriorSetup& setup, const model::ParameterLayout& layout,
                            std::span<const double> theta0, double sigma0,
                            const ShardChainOptions& options, const ChainRounds& rounds);

}  // namespace homodyne::cmc
