#include "nlsq/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::nlsq {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::uint64_t kMiB = 1024 * 1024;
// Bytes of bookkeeping per row tile: the loader's tile list, the kernel's copy, its
// offsets and groups, the setup's per-block lists.
constexpr std::uint64_t kTileBytes = 200;
constexpr std::uint64_t kThreadBytes = 2 * kMiB;  // stack touched + kernel scratch per thread
constexpr std::uint64_t kSolverBytes = 8 * kMiB;  // TAO/PETSc vectors, P×P systems
// The streamed file held open for the whole fit: HDF5's metadata and chunk caches, MPI-IO's
// handle (23 × 5000 frames, 2 ranks: rank 0's peak was 2.7 MiB above the estimate without it).
constexpr std::uint64_t kStreamFileBytes = 4 * kMiB;
// Streaming initial scaling: 2^11-bin histograms, per angle 3 sets × 2 digits in the first
// pass and their sum's copy, ≤ 4 order statistics after it.
constexpr std::uint64_t kHistogramBytesPerAngle = 16 * 2048 * 8;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::uint64_t PartialBytes(const FitShape& s) {
  const auto np = static_cast<std::uint64_t>(s.n_physical);
  const std::uint64_t width =
      1 + np * np + np + static_cast<std::uint64_t>(s.n_angles) * (5 + 2 * np);
  // The per-block partials plus the tree nodes and the gathered sums on rank 0.
  return 3 * static_cast<std::uint64_t>(std::max<std::int64_t>(s.local_blocks, 1)) * width * 8;
}

std::uint64_t FixedWorkspace(const FitShape& s) {
  return PartialBytes(s) + kThreadBytes * static_cast<std::uint64_t>(std::max(s.threads, 1)) +
         kSolverBytes;
}

// /sys/fs/cgroup/memory.max if this process runs in a memory-limited cgroup (v2).
std::uint64_t CgroupLimit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  return r.ec == std::errc() ? v : 0;
}

std::uint64_t StatusField(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream is(line.substr(key.size()));
      std::uint64_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace

std::string_view ToString(FitStrategy strategy) {
  switch (strategy) {
    case FitStrategy::kAuto:
      return "auto";
    case FitStrategy::kInCore:
      return "in-core";
    case FitStrategy::kStreaming:
      return "streaming";
  }
  return "auto";
}

FitStrategy ParseFitStrategy(std::string_view text, std::string_view option) {
  const std::string s = Lower(text);
  if (s == "auto") return FitStrategy::kAuto;
  if (s == "in-core" || s == "in_core" || s == "incore") return FitStrategy::kInCore;
  if (s == "streaming") return FitStrategy::kStreaming;
  ThrowBadInput(fmt::format("expected auto, in-core or streaming, found '{}'", text), {},
                std::string(option));
}

std::uint64_t ParseMemorySize(std::string_view text, std::string_view option) {
  const std::string s = Lower(text);
  auto fail = [&](std::string_view why) -> std::uint64_t {
    ThrowBadInput(fmt::format("expected a memory size such as 2G, 512M or 1.5GiB, found '{}' ({})",
                              text, why),
                  {}, std::string(option));
  };
  std::size_t pos = 0;
  while (pos < s.size() && (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.')) {
    ++pos;
  }
  if (pos == 0) return fail("no number");
  double value = 0.0;
  const auto r = std::from_chars(s.data(), s.data() + pos, value);
  if (r.ec != std::errc() || r.ptr != s.data() + pos) return fail("not a number");
  std::string unit = s.substr(pos);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double scale = 1.0;
  if (!unit.empty()) {
    const char u = unit.front();
    const std::string rest = unit.substr(1);
    if (rest != "" && rest != "b" && rest != "ib") return fail("unknown unit");
    switch (u) {
      case 'b':
        if (!rest.empty()) return fail("unknown unit");
        break;
      case 'k':
        scale = 1024.0;
        break;
      case 'm':
        scale = 1024.0 * 1024.0;
        break;
      case 'g':
        scale = kGiB;
        break;
      case 't':
        scale = kGiB * 1024.0;
        break;
      default:
        return fail("unknown unit");
    }
  }
  const double bytes = std::floor(value * scale);
  if (!(bytes >= 1.0)) return fail("must be positive");
  if (bytes > 1e18) return fail("too large");
  return static_cast<std::uint64_t>(bytes);
}

std::string FormatBytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= kGiB) return fmt::format("{:.2f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:.1f} MiB", b / static_cast<double>(kMiB));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

NodeMemory QueryNodeMemory(const Comm& comm) {
  NodeMemory node;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) {
    node.total_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
  if (const std::uint64_t cg = CgroupLimit(); cg > 0 && cg < node.total_bytes) {
    node.total_bytes = cg;
  }
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &shared);
  MPI_Comm_size(shared, &node.ranks_on_node);
  MPI_Comm_free(&shared);
  return node;
}

std::uint64_t CurrentRss() { return StatusField("VmRSS"); }
std::uint64_t PeakRss() { return StatusField("VmHWM"); }

MemoryBudget ResolveBudget(const MemoryBudgetOptions& options, const NodeMemory& node) {
  MemoryBudget b;
  const int ranks = std::max(node.ranks_on_node, 1);
  if (options.limit_bytes > 0) {
    b.bytes = options.limit_bytes;
    b.source = fmt::format("--memory-limit {} per rank", FormatBytes(b.bytes));
    return b;
  }
  if (options.memory_threshold_gb) {
    const double node_bytes = *options.memory_threshold_gb * kGiB;
    b.bytes = static_cast<std::uint64_t>(node_bytes / ranks);
    b.source = fmt::format("memory_threshold_gb {} GiB per node / {} rank(s) on the node",
                           *options.memory_threshold_gb, ranks);
    return b;
  }
  double fraction = options.memory_fraction;
  std::string from = "memory_fraction";
  if (const char* env = std::getenv("NLSQ_MEMORY_FRACTION")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(v)) {
      fraction = v;
      from = "NLSQ_MEMORY_FRACTION";
    }
  }
  fraction = std::clamp(fraction, 0.1, 0.9);
  if (node.total_bytes == 0) {
    b.bytes = static_cast<std::uint64_t>(16.0 * kGiB / ranks);
    b.source = fmt::format("16 GiB (node RAM unknown) / {} rank(s) on the node", ranks);
    return b;
  }
  b.bytes = static_cast<std::uint64_t>(fraction * static_cast<double>(node.total_bytes) / ranks);
  b.source = fmt::format("{} {:.2f} of {} node RAM / {} rank(s) on the node", from, fraction,
                         FormatBytes(node.total_bytes), ranks);
  return b;
}

MemoryEstimate EstimateInCore(const FitShape& s) {
  MemoryEstimate e;
  const auto points = static_cast<std::uint64_t>(s.local_points);
  const auto n = static_cast<std::uint64_t>(s.n_frames);
  e.data = 8 * points;
  // The loader's two blocks (its own bound), the diagonals of every angle.
  const std::uint64_t block =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(kLoaderMaxBlockValues),
                              (static_cast<std::uint64_t>(s.local_tiles) + 1) * n);
  e.read_buffers = 2 * block * 8 + 2 * static_cast<std::uint64_t>(s.n_angles) * n * 8;
  // The initial-scaling selections hold ≈ two sorted copies of one angle's points.
  const std::uint64_t selection = 2 * 8 * points / static_cast<std::uint64_t>(s.n_angles);
  e.workspace =
      kTileBytes * static_cast<std::uint64_t>(s.local_tiles) + selection + FixedWorkspace(s);
  e.baseline = s.baseline_bytes;
  return e;
}

std::int64_t StreamingReadValues(const FitShape& s, std::int64_t window_points) {
  return std::clamp<std::int64_t>(window_points / 2, std::max<std::int64_t>(s.n_frames, 1),
                                  kLoaderMaxBlockValues);
}

MemoryEstimate EstimateStreaming(const FitShape& s, std::int64_t window_points) {
  MemoryEstimate e;
  const auto n = static_cast<std::uint64_t>(s.n_frames);
  e.data = 8 * static_cast<std::uint64_t>(window_points);
  e.read_buffers = 2 * 8 * static_cast<std::uint64_t>(StreamingReadValues(s, window_points)) +
                   2 * static_cast<std::uint64_t>(s.n_angles) * n * 8;
  // The rank's tile list (≈ 40 B per tile) plus the window kernel's tiles.
  const double tiles_per_point =
      s.local_points > 0 ? static_cast<double>(s.local_tiles) / static_cast<double>(s.local_points)
                         : 0.0;
  const auto window_tiles =
      static_cast<std::uint64_t>(tiles_per_point * static_cast<double>(window_points)) + 1;
  // The row subsets' values, kept once read, and their tiles (≈ one per row and angle).
  const auto row_subsets = static_cast<std::uint64_t>(s.row_subset_points);
  const auto row_tiles =
      static_cast<std::uint64_t>(static_cast<double>(s.row_subset_points) /
                                 std::max<double>(1.0, static_cast<double>(s.n_frames) / 2.0));
  // The read-ahead (block_stream.h) swaps the read blocks for a second window, and adds the
  // next window's tile list and its thread; the open file's HDF5 caches come on top.
  e.workspace = 40 * static_cast<std::uint64_t>(s.local_tiles) + 2 * kTileBytes * window_tiles +
                kHistogramBytesPerAngle * static_cast<std::uint64_t>(s.n_angles) +
                FixedWorkspace(s) + kThreadBytes + kStreamFileBytes + 8 * row_subsets +
                kTileBytes * (row_tiles + 1);
  e.baseline = s.baseline_bytes;
  return e;
}

MemoryPlan PlanMemory(FitStrategy requested, const MemoryBudget& budget, const FitShape& s) {
  MemoryPlan plan;
  plan.budget = budget;
  plan.in_core = EstimateInCore(s);
  const std::uint64_t need = plan.in_core.total();
  if (requested == FitStrategy::kInCore ||
      (requested == FitStrategy::kAuto && need <= budget.bytes)) {
    plan.strategy = FitStrategy::kInCore;
    plan.window_points = s.local_points;
    plan.reason = requested == FitStrategy::kInCore
                      ? fmt::format("in-core (--strategy in-core): estimate {} {} budget {}",
                                    FormatBytes(need), need <= budget.bytes ? "<=" : "EXCEEDS",
                                    FormatBytes(budget.bytes))
                      : fmt::format("in-core: estimate {} <= budget {}", FormatBytes(need),
                                    FormatBytes(budget.bytes));
    return plan;
  }
  plan.strategy = FitStrategy::kStreaming;
  // Largest window whose estimate stays within the budget (bisection; the estimate grows
  // with the window), at least one block, at most all of the rank's points.
  const std::int64_t min_window = std::max<std::int64_t>(s.max_block_points, 1);
  const std::int64_t max_window = std::max(s.local_points, min_window);
  std::int64_t lo = min_window;
  std::int64_t hi = max_window;
  if (EstimateStreaming(s, lo).total() > budget.bytes) {
    hi = lo;
  } else {
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (EstimateStreaming(s, mid).total() <= budget.bytes) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  plan.window_points = lo;
  plan.streaming = EstimateStreaming(s, plan.window_points);
  const std::string why = requested == FitStrategy::kStreaming
                              ? std::string("--strategy streaming")
                              : fmt::format("in-core estimate {} > budget {}", FormatBytes(need),
                                            FormatBytes(budget.bytes));
  plan.reason = fmt::format(
      "streaming ({}): window of {} points, estimate {}{}", why, plan.window_points,
      FormatBytes(plan.streaming.total()),
      plan.streaming.total() > budget.bytes
          ? " (over budget: the smallest streaming window, one partition block, does not fit)"
          : "");
  return plan;
}

std::vector<int> WindowStarts(const std::vector<std::int64_t>& block_points,
                              std::int64_t window_points) {
  std::vector<int> starts;
  std::int64_t in_window = 0;
  for (std::size_t b = 0; b < block_points.size(); ++b) {
    if (starts.empty() || in_window + block_points[b] > window_points) {
      starts.push_back(static_cast<int>(b));
      in_window = 0;
    }
    in_window += block_points[b];
  }
  return starts;
}

}  // namespace homodyne::nlsq
