// The kernel of an analysis mode over row tiles.
#pragma once

#include <memory>
#include <vector>

#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/kernel.h"
#include "model/pass_kernel.h"
#include "model/row_tile.h"

namespace homodyne::model {

// `t` is the homodyne time grid of the frames the tiles index (frame m at m·dt, as the
// loader labels them). static and laminar_flow: the homodyne ModelKernel on it. two_component:
// the HeterodyneKernel on xpcsjax's labels of the same frames, t + dt (frame m at (m+1)·dt),
// with geometry.q and geometry.dt (the gap does not enter that model).
std::unique_ptr<PassKernel> MakePassKernel(AnalysisMode mode, const Geometry& geometry,
                                           std::vector<double> t, std::vector<double> phi_deg,
                                           std::vector<RowTile> tiles, KernelOptions options = {});

// The two-component model's labels of frames whose homodyne times are `t`: t + dt.
std::vector<double> TwoComponentTimes(std::vector<double> t, double dt);

}  // namespace homodyne::model
