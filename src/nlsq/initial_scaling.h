// Initial per-angle contrast/offset from the data: the quantile estimator
// (model::EstimateScaling; homodyne's Q90 by default) over each angle's pooled points
// (ScalingPool: homodyne's fit grid, or two_component's full matrix).
#pragma once

#include <vector>

#include "io/distributed_loader.h"
#include "model/scaling_estimator.h"
#include "nlsq/streaming_scaling.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

// Collective. Exact, without gathering the data: every percentile is found by distributed
// radix selection (parallel/radix_select.h, as the streaming estimator), so the result
// equals the serial estimator's bit for bit and rank 0 holds no more than its own share.
// kQ95's too-few-points error as EstimateInitialScalingOverWindows.
std::vector<model::ScalingEstimate> EstimateInitialScaling(
    const Comm& comm, const io::LocalData& local, const model::ScalingBounds& bounds,
    model::ScalingQuantiles rule = model::ScalingQuantiles::kQ90,
    ScalingPool pool = ScalingPool::kFitGrid);

}  // namespace homodyne::nlsq
