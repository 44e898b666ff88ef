#include "cmc/sharding.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config/key_paths.h"
#include "core/errors.h"
#include "core/random.h"

namespace homodyne::cmc {

void ShardingOptions::Validate() const {
  const auto key = [](std::string_view leaf) {
    return config::keys::Key(config::keys::kCmcSharding, leaf);
  };
  if (num_shards < 0) ThrowBadInput("num_shards must be ≥ 1 (or auto)", {}, key("num_shards"));
  if (max_points_per_shard < 0) {
    ThrowBadInput("max_points_per_shard must be ≥ 1 (or auto)", {}, key("max_points_per_shard"));
  }
  if (segment < 1)
    ThrowBadInput("segment must be ≥ 1", {}, std::string(config::keys::kCmcSharding));
}

std::int64_t AutoShardSize(model::AnalysisMode mode, std::int64_t n, int n_phi, int num_warmup,
                           int num_samples) {
  const bool laminar = mode == model::AnalysisMode::kLaminarFlow;
  double base = 0;
  if (laminar) {
    base = n < 2'000'000 ? 8000 : n < 100'000'000 ? 5000 : n < 1'000'000'000 ? 8000 : 10000;
  } else {
    base = n < 50'000'000 ? 10000 : n < 100'000'000 ? 15000 : 20000;
  }
  const double factor = n_phi <= 3 ? 0.6 : n_phi <= 5 ? 0.7 : n_phi <= 10 ? 0.85 : 1.0;
  const double floor_size = laminar ? 3000 : 5000;
  double size = std::max(std::floor(base * factor), floor_size);
  const double iterations = std::max(1, num_warmup + num_samples);
  size = std::max(std::floor(size * std::clamp(2000.0 / iterations, 0.25, 2.0)), floor_size);
  const double max_shards = n < 10'000'000      ? 2000
                            : n < 100'000'000   ? 10000
                            : n < 1'000'000'000 ? 50000
                                                : 100000;
  if (static_cast<double>(n) / size > max_shards) {
    size = std::ceil(static_cast<double>(n) / max_shards);
    if (laminar) size = std::min(size, 100000.0);
  }
  if (laminar) size = std::min(size, 3'000'000.0);
  return static_cast<std::int64_t>(size);
}

int NumShards(const ShardingOptions& options, model::AnalysisMode mode, std::int64_t n_points,
              int n_phi, int num_warmup, int num_samples) {
  options.Validate();
  if (options.num_shards > 0) return options.num_shards;
  const std::int64_t size = options.max_points_per_shard > 0
                                ? options.max_points_per_shard
                                : AutoShardSize(mode, n_points, n_phi, num_warmup, num_samples);
  const std::int64_t k = (n_points + size - 1) / size;
  const std::int64_t cap = mode == model::AnalysisMode::kLaminarFlow ? 1000 : 500;
  return static_cast<int>(std::clamp<std::int64_t>(k, 1, cap));
}

std::int64_t ShardPlan::Points(int shard) const {
  std::int64_t n = 0;
  for (const auto& t : shards.at(static_cast<std::size_t>(shard))) n += t.count;
  return n;
}

ShardPlan BuildShardPlan(int n_angles, std::int64_t first, std::int64_t last, int num_shards,
                         const ShardingOptions& options) {
  options.Validate();
  if (num_shards < 1)
    ThrowBadInput("at least one shard is needed", {}, std::string(config::keys::kCmcSharding));
  // Segments per angle, in row order.
  std::vector<std::vector<RowTile>> per_angle(static_cast<std::size_t>(n_angles));
  for (std::int32_t k = 0; k < n_angles; ++k) {
    for (std::int64_t i = first; i < last; ++i) {
      for (std::int64_t j = i + 1; j <= last; j += options.segment) {
        per_angle[static_cast<std::size_t>(k)].push_back(
            {k, i, j, std::min<std::int64_t>(options.segment, last - j + 1)});
      }
    }
  }
  ShardPlan plan;
  plan.shards.resize(static_cast<std::size_t>(num_shards));
  const auto ns = static_cast<std::size_t>(num_shards);
  if (options.strategy == ShardStrategy::kContiguous) {
    std::vector<RowTile> all;
    for (auto& a : per_angle) all.insert(all.end(), a.begin(), a.end());
    for (std::size_t s = 0; s < ns; ++s) {
      const std::size_t b = all.size() * s / ns, e = all.size() * (s + 1) / ns;
      plan.shards[s].assign(all.begin() + static_cast<std::ptrdiff_t>(b),
                            all.begin() + static_cast<std::ptrdiff_t>(e));
    }
  } else if (options.strategy == ShardStrategy::kStratified) {
    // Angles dealt to shards; each angle's segments split over the shards it owns.
    for (std::size_t k = 0; k < per_angle.size(); ++k) {
      const std::size_t s = k % ns;
      plan.shards[s].insert(plan.shards[s].end(), per_angle[k].begin(), per_angle[k].end());
    }
  } else {  // random, angle-balanced
    std::size_t deal = 0;
    for (std::size_t k = 0; k < per_angle.size(); ++k) {
      auto& segs = per_angle[k];
      CounterRng rng(options.seed, /*stream_a=*/0x5348'4152'44ULL /* "SHARD" */, k);
      for (std::size_t i = segs.size(); i > 1; --i) {
        std::swap(segs[i - 1], segs[static_cast<std::size_t>(rng.NextU64() % i)]);
      }
      for (const auto& seg : segs) plan.shards[deal++ % ns].push_back(seg);
    }
    for (auto& shard : plan.shards) {  // row order inside a shard (kernel-friendly)
      std::sort(shard.begin(), shard.end(), [](const RowTile& a, const RowTile& b) {
        return std::tie(a.angle, a.row, a.col_begin) < std::tie(b.angle, b.row, b.col_begin);
      });
    }
  }
  return plan;
}

}  // namespace homodyne::cmc
