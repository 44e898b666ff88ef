// CMC sharding (algorithms spec §2.3–2.4): how many shards, and which points each gets.
//
// The unit of assignment is a row segment — up to `segment` consecutive columns of one
// row of one angle's fit grid — so that a shard's likelihood runs on the vectorised
// kernel (single scattered points would not). Strategies:
//   random      segments of each angle shuffled (seeded) and dealt round-robin over the
//               shards: every shard holds every angle in the global proportion
//               (homodyne's angle-balanced sharding), so shards are exchangeable;
//   stratified  whole angles per shard (only for single-angle data in homodyne; here an
//               explicit choice, with a warning in the caller);
//   contiguous  consecutive runs of segments (angle-major, row order).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "model/analysis_mode.h"
#include "parallel/partition.h"

namespace homodyne::cmc {

// How row segments are dealt to shards: shuffled within each angle (random, homodyne's
// angle-balanced default), whole angles per shard (stratified), or in order (contiguous).
using ShardStrategy = config::ShardStrategy;

struct ShardingOptions {
  ShardStrategy strategy = ShardStrategy::kRandom;
  int num_shards = 0;                     // > 0: fixed; 0: automatic (max_points_per_shard)
  std::int64_t max_points_per_shard = 0;  // > 0: fixed; 0: homodyne's automatic size
  std::uint64_t seed = 0;
  int segment = 32;  // columns per row segment
  void Validate() const;
};

// homodyne's automatic shard size for N points (§2.3 steps 1–6).
std::int64_t AutoShardSize(model::AnalysisMode mode, std::int64_t n_points, int n_phi,
                           int num_warmup, int num_samples);

// The shard count: num_shards if given, else ceil(N / size), capped at 1000 (laminar) /
// 500 (static) as homodyne does; at least 1.
int NumShards(const ShardingOptions& options, model::AnalysisMode mode, std::int64_t n_points,
              int n_phi, int num_warmup, int num_samples);

struct ShardPlan {
  std::vector<std::vector<RowTile>> shards;  // segments of each shard (loader indices)
  std::int64_t Points(int shard) const;
};

// Deterministic for the options; every fitted point (first ≤ i < j ≤ last) of every angle
// lands in exactly one shard.
ShardPlan BuildShardPlan(int n_angles, std::int64_t first, std::int64_t last, int num_shards,
                         const ShardingOptions& options);

}  // namespace homodyne::cmc
