// One adaptive NUTS chain advanced one iteration at a time (Stan's adapt_*_e_nuts plus
// the iteration bookkeeping of run_adaptive_sampler).
//
// Iteration k < num_warmup is warmup: the transition is followed by a dual-averaging
// update of ε and a windowed metric update; after a metric update ε is re-initialised
// by the heuristic, μ = log(10ε) and dual averaging restarts. Iteration 0 first runs the
// heuristic from the user's ε₀. After the last warmup iteration ε = exp(x̄) is frozen.
// Iterations num_warmup .. num_warmup + num_samples − 1 are draws.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nuts/nuts_chain_state.h"
#include "nuts/nuts_options.h"
#include "nuts/nuts_transition.h"

namespace homodyne::nuts {

class LogDensity;

struct IterationResult {
  std::int64_t iteration = 0;  // 0-based over warmup + sampling
  bool warmup = false;
  bool metric_updated = false;  // a metric window ended at this warmup iteration
  TransitionStats stats;
  std::span<const double> position;  // the draw (valid until the next Step)
};

class NutsChain {
 public:
  // A fresh chain at `initial_position`, with RNG stream (options.seed, shard, chain)
  // and a unit metric. Validates the options (kBadInput) and the initial point
  // (kNumerical if the log density is not finite there). Does NOT take ownership of
  // `density`, which must outlive the chain.
  NutsChain(const LogDensity& density, const NutsOptions& options,
            std::span<const double> initial_position, std::uint64_t shard, std::uint64_t chain);
  // A chain continued from a saved state (checked against options and density).
  static NutsChain Restore(const LogDensity& density, const NutsOptions& options,
                           const NutsChainState& state);

  NutsChain(NutsChain&&) noexcept;
  NutsChain& operator=(NutsChain&&) noexcept;
  ~NutsChain();

  // Runs one iteration. Requires !Done().
  IterationResult Step();

  bool Done() const;
  std::int64_t iteration() const;
  bool InWarmup() const;
  double step_size() const;
  std::span<const double> position() const;
  std::vector<double> inverse_metric() const;
  const NutsOptions& options() const;

  NutsChainState SaveState() const;

  // Every later Step adds 1 to *counter (relaxed; null: none), so a caller's other thread can
  // watch the chains' progress. Counting never touches the chain's state or draws.
  void CountIterationsIn(std::atomic<std::int64_t>* counter) { counter_ = counter; }

  class Impl;

 private:
  explicit NutsChain(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<std::int64_t>* counter_ = nullptr;
};

}  // namespace homodyne::nuts
