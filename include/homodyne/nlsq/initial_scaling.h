// Initial per-angle contrast/offset from the data: homodyne's quantile estimator
// (physics spec §1.9) over each angle's points of the fit grid (t = 0 excluded,
// diagonal included, every off-diagonal pair counted twice as in the full matrix).
#pragma once

#include <vector>

#include "homodyne/io/distributed_loader.h"
#include "homodyne/model/scaling_estimator.h"
#include "homodyne/parallel/comm.h"

namespace homodyne::nlsq {

// Collective. The samples of every angle are gathered on rank 0 (percentiles are not
// decomposable), estimated there and broadcast, so every rank gets the same values.
std::vector<model::ScalingEstimate> EstimateInitialScaling(const Comm& comm,
                                                           const io::LocalData& local,
                                                           const model::ScalingBounds& bounds);

}  // namespace homodyne::nlsq
