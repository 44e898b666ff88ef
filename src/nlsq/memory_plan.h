// Memory budget of an NLSQ fit and the choice between the in-core and the streaming
// (out-of-core) data path.
//
// The budget is per rank: optimization.nlsq.memory_fraction (or memory_threshold_gb) of
// the node's RAM, shared equally among the ranks on the node, or --memory-limit SIZE per
// rank. The in-core fit keeps every fitted point of the rank in memory; its estimate adds
// the model workspace (kernel tiles, per-block partial sums), the loader's read buffers,
// the initial-scaling selection and the process's resident size when the plan is made
// (MPI, PETSc, HDF5, ...). If that exceeds the budget (or --strategy streaming), the fit
// streams: a rank keeps a window of whole partition blocks whose size the budget allows
// and re-reads its rows from the file on every pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/comm.h"

namespace homodyne::nlsq {

enum class FitStrategy { kAuto, kInCore, kStreaming };

std::string_view ToString(FitStrategy strategy);  // auto | in-core | streaming
// "auto", "in-core" (or "in_core", "incore"), "streaming"; bad-input Error naming `option`.
FitStrategy ParseFitStrategy(std::string_view text, std::string_view option);

// "2G", "512M", "1.5GiB", "64k", "1000000" (bytes); suffixes K/M/G/T (binary, optional
// "B"/"iB"). Bad-input Error naming `option` for anything else, or a size of zero.
std::uint64_t ParseMemorySize(std::string_view text, std::string_view option);

// "1.50 GiB" style.
std::string FormatBytes(std::uint64_t bytes);

struct MemoryBudgetOptions {
  double memory_fraction = 0.75;              // of the node's RAM, clamped to [0.1, 0.9]
  std::optional<double> memory_threshold_gb;  // per node (GiB), overrides the fraction
  std::uint64_t limit_bytes = 0;              // --memory-limit, per rank; overrides both
  FitStrategy strategy = FitStrategy::kAuto;  // --strategy
};

struct NodeMemory {
  std::uint64_t total_bytes = 0;  // physical RAM of this node (0: unknown)
  int ranks_on_node = 1;          // ranks of the communicator sharing this node
};

// Collective: RAM of this node and the ranks of `comm` on it (MPI_COMM_TYPE_SHARED).
NodeMemory QueryNodeMemory(const Comm& comm);

// Resident set size of this process now / its peak so far (bytes, /proc/self/status;
// 0 if unavailable).
std::uint64_t CurrentRss();
std::uint64_t PeakRss();

struct MemoryBudget {
  std::uint64_t bytes = 0;  // per rank
  std::string source;       // how it was derived, for the log
};

MemoryBudget ResolveBudget(const MemoryBudgetOptions& options, const NodeMemory& node);

// The sizes of one rank's share of the fit that the estimate needs.
struct FitShape {
  int n_angles = 1;
  std::int64_t n_frames = 0;          // matrix side after frame selection
  std::int64_t local_points = 0;      // fitted points of this rank
  std::int64_t local_tiles = 0;       // row tiles of this rank
  std::int64_t local_blocks = 0;      // partition blocks of this rank
  std::int64_t max_block_points = 0;  // largest block of this rank
  int n_physical = 3;                 // physical parameters of the mode (3, 7 or 14)
  int threads = 1;
  std::uint64_t baseline_bytes = 0;  // resident size before the data are read
  // Points of the row subsets the global stages screen on (row_subsets.h), which a streamed
  // fit keeps in memory once read (XpcsProblem::OnRows): at most this rank's points per subset.
  std::int64_t row_subset_points = 0;
};

struct MemoryEstimate {
  std::uint64_t data = 0;          // fitted values held at once
  std::uint64_t read_buffers = 0;  // HDF5 row/column blocks while reading
  std::uint64_t workspace = 0;     // kernel tiles, partial sums, scaling selection, threads
  std::uint64_t baseline = 0;      // process before loading
  std::uint64_t total() const { return data + read_buffers + workspace + baseline; }
};

// Largest HDF5 read block of the in-core loader (doubles), see io/distributed_loader.cpp.
inline constexpr std::int64_t kLoaderMaxBlockValues = std::int64_t{1} << 24;

MemoryEstimate EstimateInCore(const FitShape& shape);
// A streaming fit that holds at most `window_points` fitted values at once.
MemoryEstimate EstimateStreaming(const FitShape& shape, std::int64_t window_points);
// HDF5 read-block limit (doubles) the streaming reader uses for that window.
std::int64_t StreamingReadValues(const FitShape& shape, std::int64_t window_points);

struct MemoryPlan {
  FitStrategy strategy = FitStrategy::kInCore;  // resolved: in-core or streaming
  MemoryBudget budget;
  MemoryEstimate in_core;
  MemoryEstimate streaming;        // for window_points (streaming only)
  std::int64_t window_points = 0;  // streaming: most fitted values held at once
  std::string reason;              // one line for the log
  MemoryEstimate chosen() const {
    return strategy == FitStrategy::kStreaming ? streaming : in_core;
  }
};

MemoryPlan PlanMemory(FitStrategy requested, const MemoryBudget& budget, const FitShape& shape);

// Windows of a rank's blocks: window w holds local blocks [starts[w], starts[w+1]) (the
// last to `block_points.size()`); each window has at most `window_points` points unless a
// single block is larger.
std::vector<int> WindowStarts(const std::vector<std::int64_t>& block_points,
                              std::int64_t window_points);

}  // namespace homodyne::nlsq
