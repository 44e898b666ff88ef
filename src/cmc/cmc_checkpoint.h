// CMC with checkpoints: every rank runs its own shards' chains in batches of
// `frequency` iterations; between batches all ranks meet at a safe point (one
// allreduce of the stop flags) where, when checkpoints are on, they write one file
// collectively: for every chain its draws and transition statistics so far, and for an
// unfinished chain its complete NutsChainState (each rank owns its chains' datasets).
// Resume restores finished chains from the file and continues unfinished ones from
// their state, so the draws are bit-identical to an uninterrupted run, on any rank count
// (shard s runs on rank s mod P; every rank reads the whole file).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "core/log.h"
#include "nuts/log_density.h"
#include "nuts/nuts_chain.h"
#include "nuts/nuts_chain_state.h"
#include "nuts/nuts_options.h"
#include "nuts/run_sampler.h"
#include "parallel/comm.h"

namespace homodyne::checkpoint {

struct CmcCheckpointSettings {
  bool enabled = false;  // write checkpoints at the safe points
  bool resume = false;
  std::filesystem::path dir = "./checkpoints";
  int frequency = 100;  // iterations per chain between safe points
  int keep_last = 3;
  bool stop_on_signal = true;
  bool fatal_write_errors = false;  // a failed periodic checkpoint ends the run
  std::string config_description;
};

// Thrown by the safe points on ranks whose sampling went well when another rank's failed
// (that rank's own error is the one agreed afterwards).
struct SamplingAborted {};

class CmcChainRunner {
 public:
  // Collective over `world`. `meta` (shards, chains, warmup, samples, dimension) must
  // match a resumed checkpoint. Loads the newest valid checkpoint when resuming.
  CmcChainRunner(const Comm& world, CmcCheckpointSettings settings,
                 const std::string& data_description, std::vector<std::int64_t> meta,
                 const Logger& logger);
  ~CmcChainRunner();

  // Runs chain `chain` of `shard` (a shard of this rank: shard mod P == rank), or
  // completes it from its saved state, or returns it from the checkpoint. Between
  // batches it joins the collective safe points; call Finish() after the last Run.
  // A stop request writes a checkpoint and throws the agreed kCheckpointed Error.
  nuts::ChainRun Run(int shard, int chain, const nuts::LogDensity& density,
                     const nuts::NutsOptions& options, std::span<const double> q0);

  // Collective: joins the safe points until every rank has finished its chains (then
  // writes a final checkpoint when checkpoints are on).
  void Finish();

  // Round-based use, for a shard's chains advanced concurrently on the rank's threads:
  // PrepareShard on the calling thread before its chains start; Start and Advance may run
  // concurrently for different chains of that shard; RoundEnd (collective safe point) on the
  // calling thread between rounds, while no chain runs. Segmenting a chain into batches does
  // not change its draws.
  // Chains first_chain … first_chain + num_chains − 1 (a shard's rerun uses its own chain
  // indices, so its RNG streams and checkpoint datasets are its own).
  void PrepareShard(int shard, int num_chains, int first_chain = 0);
  // The chain to advance (restored from the checkpoint or fresh); null when it is complete.
  std::unique_ptr<nuts::NutsChain> Start(int shard, int chain, const nuts::LogDensity& density,
                                         const nuts::NutsOptions& options,
                                         std::span<const double> q0);
  // Runs the chain to the end of its current batch and records the result.
  void Advance(int shard, int chain, nuts::NutsChain& ch);
  void RoundEnd() { SafePoint(false); }
  nuts::ChainRun Result(int shard, int chain) const;

  // This rank's sampling failed: tells the other ranks at the safe point they are waiting
  // in (they throw SamplingAborted, so the agreed error is this rank's). No-op once every
  // rank has finished.
  void Fail();

  int writes() const;
  double write_seconds() const;

 private:
  struct Progress {
    bool done = false;
    std::vector<double> draws;          // iterations × dimension (sampling only)
    std::vector<double> stats;          // iterations × kStatFields
    std::int64_t warmup_gradients = 0;  // leapfrog steps of the warmup iterations
    std::optional<nuts::NutsChainState> state;
  };
  void SafePoint(bool finished, bool failed = false);
  CheckpointRecord Record() const;

  const Comm& world_;
  CmcCheckpointSettings settings_;
  std::vector<std::int64_t> meta_;
  const Logger& logger_;
  std::unique_ptr<CheckpointStore> store_;
  std::map<std::pair<int, int>, Progress> progress_;  // this rank's chains
  bool all_done_ = false;
  std::atomic<std::int64_t> iterations_run_{0};  // by this process, for the test hooks
};

// NutsChainState ↔ record datasets under `prefix` (exact round trip).
void StoreChainState(CheckpointRecord& r, const std::string& prefix, const nuts::NutsChainState& s,
                     int owner);
nuts::NutsChainState LoadChainState(const CheckpointRecord& r, const std::string& prefix);

}  // namespace homodyne::checkpoint
