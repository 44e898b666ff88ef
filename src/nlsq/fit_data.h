// The data side of an NLSQ fit: the memory plan (in-core or streaming) and the rank's
// share of the points, either loaded (in-core) or as a BlockStream over the file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/config.h"
#include "core/log.h"
#include "io/distributed_loader.h"
#include "nlsq/block_stream.h"
#include "nlsq/memory_plan.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

struct FitMemoryOptions {
  FitStrategy strategy = FitStrategy::kAuto;  // --strategy
  std::uint64_t limit_bytes = 0;              // --memory-limit (per rank), 0: from config
  int threads = 1;                            // compute threads per rank
  int ranks_on_node = 0;  // > 0: ranks sharing this node's budget (counted on the whole job
                          // by the CLI); 0: counted on the fit's communicator
  std::int64_t window_points = 0;  // > 0: streaming window size instead of the
                                   // budget's (tests, benchmarks)
  // Runs first on each streaming read-ahead thread (block_stream.h); empty: none.
  std::function<void()> read_ahead_start;
};

// Collective. The plan of this rank for the data layout `layout` (LoadDistributedLayout).
// Ranks agree on the strategy: if any rank must stream, all do (each with its own window).
MemoryPlan PlanFitMemory(const Comm& comm, const config::Config& cfg,
                         const FitMemoryOptions& options, const io::LocalData& layout);

// One line per rank (rank 0 gets all, in rank order; others get their own): rank, points,
// blocks, rows, estimate, budget, strategy, window. Collective.
std::vector<std::string> DescribeMemoryPlans(const Comm& comm, const MemoryPlan& plan,
                                             const io::LocalData& layout);

struct FitData {
  io::LocalData local;  // streaming: values empty
  MemoryPlan plan;
  std::unique_ptr<BlockStream> stream;  // streaming only
};

// Collective: reads the layout, plans, then loads (in-core) or opens the stream. Logs the
// choice and the budget numbers at info level.
FitData LoadFitData(const Comm& comm, const config::Config& cfg, const io::LoadOptions& load,
                    const FitMemoryOptions& options, const Logger& logger);

}  // namespace homodyne::nlsq
