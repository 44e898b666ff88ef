#include "nlsq/fit_data.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "nlsq/row_subsets.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {
namespace {

// The points this rank may hold of the row subsets the global stages screen on (a streamed
// fit keeps them): one subset per distinct stride of the scans' grids (kScanMaxPoints), the
// CMA-ES search (cmaes.search_max_points), the restarts' screen (recovery.screen_max_points)
// and two_component's start screen (kMinRowSubsetRows rows per angle), each at most the
// rank's points.
std::int64_t RowSubsetPointsOf(const config::Config& cfg, std::int64_t total_points,
                               const FitShape& s) {
  const auto& nlsq = cfg.optimization.nlsq;
  std::set<int> strides;
  for (const std::int64_t max_points :
       {kScanMaxPoints, static_cast<std::int64_t>(nlsq.cmaes.search_max_points),
        static_cast<std::int64_t>(nlsq.recovery.screen_max_points)}) {
    strides.insert(RowSubsetStride(total_points, s.n_frames, max_points));
  }
  if (cfg.analysis_mode == model::AnalysisMode::kTwoComponent) {
    strides.insert(static_cast<int>(std::max<std::int64_t>(1, s.n_frames / kMinRowSubsetRows)));
  }
  std::int64_t points = 0;
  for (const int k : strides) {
    if (k > 1) points += std::min(s.local_points, RowSubsetPoints(s.n_angles, s.n_frames, k));
  }
  return points;
}

FitShape ShapeOf(const config::Config& cfg, const FitMemoryOptions& options,
                 const io::LocalData& layout, int rank) {
  FitShape s;
  const PartitionPlan& plan = layout.plan;
  s.n_angles = std::max(static_cast<int>(layout.meta.n_angles()), 1);
  s.n_frames = layout.meta.n_frames;
  s.local_points = plan.points(rank);
  s.local_tiles = static_cast<std::int64_t>(layout.tiles.size());
  s.local_blocks = plan.end_block(rank) - plan.first_block(rank);
  for (int b = plan.first_block(rank); b < plan.end_block(rank); ++b) {
    s.max_block_points = std::max(s.max_block_points, plan.block_points(b));
  }
  s.n_physical = model::NumPhysicalParameters(cfg.analysis_mode);
  s.threads = std::max(options.threads, 1);
  s.baseline_bytes = CurrentRss();
  s.row_subset_points = RowSubsetPointsOf(cfg, plan.total_points(), s);
  return s;
}

}  // namespace

MemoryPlan PlanFitMemory(const Comm& comm, const config::Config& cfg,
                         const FitMemoryOptions& options, const io::LocalData& layout) {
  MemoryBudgetOptions bo;
  bo.memory_fraction = cfg.optimization.nlsq.memory_fraction;
  bo.memory_threshold_gb = cfg.optimization.nlsq.memory_threshold_gb;
  bo.limit_bytes = options.limit_bytes;
  bo.strategy = options.strategy;
  NodeMemory node = QueryNodeMemory(comm);
  if (options.ranks_on_node > 0) node.ranks_on_node = options.ranks_on_node;
  const MemoryBudget budget = ResolveBudget(bo, node);
  const FitShape shape = ShapeOf(cfg, options, layout, comm.rank());
  MemoryPlan plan = PlanMemory(options.strategy, budget, shape);
  if (plan.strategy == FitStrategy::kStreaming && options.window_points > 0) {
    plan.window_points = std::max(options.window_points, shape.max_block_points);
    plan.streaming = EstimateStreaming(shape, plan.window_points);
    plan.reason += fmt::format(" (window set to {} points)", plan.window_points);
  }
  int stream = plan.strategy == FitStrategy::kStreaming ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &stream, 1, MPI_INT, MPI_MAX, comm.get());
  if (stream == 1 && plan.strategy != FitStrategy::kStreaming) {
    // Another rank must stream: this one streams too, with all of its points in one window
    // if they fit.
    plan = PlanMemory(FitStrategy::kStreaming, budget, shape);
    plan.reason += " (another rank needs streaming)";
    if (options.window_points > 0) {
      plan.window_points = std::max(options.window_points, shape.max_block_points);
      plan.streaming = EstimateStreaming(shape, plan.window_points);
    }
  }
  return plan;
}

std::vector<std::string> DescribeMemoryPlans(const Comm& comm, const MemoryPlan& plan,
                                             const io::LocalData& layout) {
  const PartitionPlan& p = layout.plan;
  const int r = comm.rank();
  const MemoryEstimate e = plan.chosen();
  std::string rows = "-";
  if (p.end_block(r) > p.first_block(r)) {
    rows = fmt::format("{}..{}", p.block_row_begin(p.first_block(r)),
                       p.block_row_end(p.end_block(r) - 1) - 1);
  }
  const std::string line = fmt::format(
      "rank {}: points {} blocks {} rows {} | strategy {} | estimate {} (data {}, read "
      "buffers {}, workspace {}, baseline {}) | in-core estimate {} | budget {} ({}){}",
      r, p.points(r), p.end_block(r) - p.first_block(r), rows, ToString(plan.strategy),
      FormatBytes(e.total()), FormatBytes(e.data), FormatBytes(e.read_buffers),
      FormatBytes(e.workspace), FormatBytes(e.baseline), FormatBytes(plan.in_core.total()),
      FormatBytes(plan.budget.bytes), plan.budget.source,
      plan.strategy == FitStrategy::kStreaming
          ? fmt::format(" | window {} points", plan.window_points)
          : std::string());
  // Gather the lines on rank 0 (variable length).
  const int len = static_cast<int>(line.size());
  std::vector<int> lens(static_cast<std::size_t>(comm.size()), 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm.get());
  std::vector<int> displs(lens.size(), 0);
  int total = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    displs[i] = total;
    total += lens[i];
  }
  std::string all(static_cast<std::size_t>(comm.is_root() ? total : 0), '\0');
  MPI_Gatherv(line.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              comm.get());
  if (!comm.is_root()) return {line};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    out.push_back(
        all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(lens[i])));
  }
  return out;
}

FitData LoadFitData(const Comm& comm, const config::Config& cfg, const io::LoadOptions& load,
                    const FitMemoryOptions& options, const Logger& logger) {
  FitData out;
  out.local = io::LoadDistributedLayout(comm, load, logger);
  out.plan = PlanFitMemory(comm, cfg, options, out.local);
  const MemoryPlan& plan = out.plan;
  logger.Info("memory: budget {} per rank ({}); in-core estimate {} on rank 0 -> {}",
              FormatBytes(plan.budget.bytes), plan.budget.source, FormatBytes(plan.in_core.total()),
              plan.reason);
  for (const auto& line : DescribeMemoryPlans(comm, plan, out.local)) {
    logger.Debug("memory plan {}", line);
  }
  if (plan.strategy == FitStrategy::kInCore) {
    // The layout read above has logged the file, selection and partition lines once already.
    out.local = io::LoadDistributed(comm, load, Logger::Silent());
    return out;
  }
  FitShape shape;
  shape.n_frames = out.local.meta.n_frames;
  const std::int64_t read_values = StreamingReadValues(shape, plan.window_points);
  out.stream = RunCollectively(comm, [&] {
    return std::make_unique<BlockStream>(comm, out.local, plan.window_points, read_values,
                                         options.read_ahead_start);
  });
  int windows = out.stream->num_windows();
  MPI_Allreduce(MPI_IN_PLACE, &windows, 1, MPI_INT, MPI_MAX, comm.get());
  logger.Info("streaming: up to {} window(s) per rank of at most {} points, re-read on every pass",
              windows, plan.window_points);
  return out;
}

}  // namespace homodyne::nlsq
