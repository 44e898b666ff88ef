// The initial per-angle contrast/offset of a streaming fit: the same estimator as
// EstimateInitialScaling (the quantiles over each angle's pooled points, ScalingPool), with
// the data read window by window. The percentiles come from RadixSelect (at most six passes,
// a few KiB per angle), so the estimates equal the in-core ones bit for bit; the first pass
// fixes two digits of the values around 1 (c2's baseline), and the last passes replay the few
// values the queries still want, kept in memory, instead of reading the data again (two reads
// of the data instead of six). The first pass also checks that every fitted value is finite
// (the in-core loader's check and message).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "io/distributed_loader.h"
#include "model/scaling_estimator.h"
#include "nlsq/block_stream.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

// The points of each angle that the estimator pools.
enum class ScalingPool {
  // homodyne's (physics spec §1.9): the fit grid, frames 1..N−1, every off-diagonal pair
  // twice and the corrected diagonal once, (N−1)² points; lags on the loader's time grid.
  kFitGrid,
  // xpcsjax's for two_component (heterodyne spec §3): the full N×N matrix, N² points, i.e.
  // also frame 0's row and column (LocalData::first_row, each pair twice) and C[0, 0]; lags
  // on model::TwoComponentLagTimes.
  kFullMatrix,
};

// Visits one window of the rank's data: its tiles (offsets into `values`) and values.
using ScalingWindowVisit =
    std::function<void(std::span<const io::LocalTile>, std::span<const double>)>;

// Collective. The estimator over data read window by window: `windows(visit)` calls `visit`
// for every window of the rank's data, in the same order each time (it is called once per
// RadixSelect pass). `layout` gives the time grid, the angles, rank 0's diagonal and, for
// kFullMatrix, the first rows (loaded with LoadOptions::first_row).
// `rule` is the estimator's variant (model::ScalingQuantiles); under kQ95 an angle with
// fewer than model::kMinScalingPoints points is a bad-input Error, thrown on every rank
// (the counts are global) and naming the angle and the data file.
std::vector<model::ScalingEstimate> EstimateInitialScalingOverWindows(
    const Comm& comm, const io::LocalData& layout,
    const std::function<void(const ScalingWindowVisit&)>& windows,
    const model::ScalingBounds& bounds,
    model::ScalingQuantiles rule = model::ScalingQuantiles::kQ90,
    ScalingPool pool = ScalingPool::kFitGrid);

// Collective. `layout` is the rank's LoadDistributedLayout, `stream` its blocks.
std::vector<model::ScalingEstimate> EstimateInitialScalingStreaming(
    const Comm& comm, const io::LocalData& layout, BlockStream& stream,
    const model::ScalingBounds& bounds,
    model::ScalingQuantiles rule = model::ScalingQuantiles::kQ90,
    ScalingPool pool = ScalingPool::kFitGrid);

}  // namespace homodyne::nlsq
