#include "model/kernel_factory.h"

#include <utility>

#include "model/heterodyne_kernel.h"

namespace homodyne::model {

std::vector<double> TwoComponentTimes(std::vector<double> t, double dt) {
  for (double& v : t) v += dt;
  return t;
}

std::unique_ptr<PassKernel> MakePassKernel(AnalysisMode mode, const Geometry& geometry,
                                           std::vector<double> t, std::vector<double> phi_deg,
                                           std::vector<RowTile> tiles, KernelOptions options) {
  if (mode == AnalysisMode::kTwoComponent) {
    geometry.Validate();
    HeterodyneGrid grid;
    grid.t = TwoComponentTimes(std::move(t), geometry.dt);
    grid.dt = geometry.dt;
    grid.q = geometry.q;
    grid.phi_deg = std::move(phi_deg);
    return std::make_unique<HeterodyneKernel>(std::move(grid), std::move(tiles),
                                              std::move(options));
  }
  return std::make_unique<ModelKernel>(mode, geometry, std::move(t), std::move(phi_deg),
                                       std::move(tiles), std::move(options));
}

}  // namespace homodyne::model
