// The initial per-angle contrast/offset of a streaming fit: the same estimator as
// EstimateInitialScaling (homodyne's quantiles over each angle's fit-grid points, every
// pair counted twice, the diagonal once), with the data read window by window. The
// percentiles come from RadixSelect (six passes over the data, a few KiB per angle), so
// the estimates equal the in-core ones bit for bit. The first pass also checks that every
// fitted value is finite (the in-core loader's check and message).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "io/distributed_loader.h"
#include "model/scaling_estimator.h"
#include "nlsq/block_stream.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

// Visits one window of the rank's data: its tiles (offsets into `values`) and values.
using ScalingWindowVisit =
    std::function<void(std::span<const io::LocalTile>, std::span<const double>)>;

// Collective. The estimator over data read window by window: `windows(visit)` calls `visit`
// for every window of the rank's data, in the same order each time (it is called once per
// RadixSelect pass). `layout` gives the time grid, the angles and rank 0's diagonal.
// `rule` is the estimator's variant (model::ScalingQuantiles); under kQ95 an angle with
// fewer than model::kMinScalingPoints points is a bad-input Error, thrown on every rank
// (the counts are global) and naming the angle and the data file.
std::vector<model::ScalingEstimate> EstimateInitialScalingOverWindows(
    const Comm& comm, const io::LocalData& layout,
    const std::function<void(const ScalingWindowVisit&)>& windows,
    const model::ScalingBounds& bounds,
    model::ScalingQuantiles rule = model::ScalingQuantiles::kQ90);

// Collective. `layout` is the rank's LoadDistributedLayout, `stream` its blocks.
std::vector<model::ScalingEstimate> EstimateInitialScalingStreaming(
    const Comm& comm, const io::LocalData& layout, BlockStream& stream,
    const model::ScalingBounds& bounds,
    model::ScalingQuantiles rule = model::ScalingQuantiles::kQ90);

}  // namespace homodyne::nlsq
