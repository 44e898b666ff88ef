// homodyne/model.h on the model layer's kernel.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "homodyne/model.h"
#include "io/selection.h"
#include "model/analysis_mode.h"
#include "model/expanded_parameters.h"
#include "model/geometry.h"
#include "model/heterodyne_reference.h"
#include "model/kernel_factory.h"
#include "model/reference_gradient.h"

namespace homodyne {

std::vector<std::string> ParameterNames(AnalysisMode mode) {
  return model::PhysicalParameterNames(mode);
}

std::string_view AnalysisModeName(AnalysisMode mode) { return model::ToString(mode); }

namespace {

// Throws homodyne::Error (kBadInput) naming the first field that does not fit the grid.
void CheckModelInput(const ModelGrid& grid, const ModelParameters& parameters) {
  const int n = grid.n_frames;
  const auto n_phi = grid.phi_deg.size();
  if (n < 2)
    ThrowBadInput(fmt::format("{} frame(s); the model needs at least 2", n), {}, "n_frames");
  if (n_phi == 0) ThrowBadInput("no angles", {}, "phi_deg");
  const auto n_phys = static_cast<std::size_t>(model::NumPhysicalParameters(grid.mode));
  if (parameters.physical.size() != n_phys) {
    ThrowBadInput(fmt::format("{} values for the {} physical parameters of {}",
                              parameters.physical.size(), n_phys, model::ToString(grid.mode)),
                  {}, "physical");
  }
  if (parameters.contrast.size() != n_phi || parameters.offset.size() != n_phi) {
    ThrowBadInput(fmt::format("{} contrast and {} offset values for {} angle(s)",
                              parameters.contrast.size(), parameters.offset.size(), n_phi),
                  {}, "contrast/offset");
  }
  const model::Geometry geometry{grid.q, grid.stator_rotor_gap, grid.dt};
  geometry.Validate();
}

// [contrast_k…, offset_k…, physical…]: the kernels' parameter order.
std::vector<double> Expanded(const ModelParameters& parameters) {
  std::vector<double> expanded = parameters.contrast;
  expanded.insert(expanded.end(), parameters.offset.begin(), parameters.offset.end());
  expanded.insert(expanded.end(), parameters.physical.begin(), parameters.physical.end());
  return expanded;
}

}  // namespace

std::vector<std::vector<double>> EvaluateC2(const ModelGrid& grid,
                                            const ModelParameters& parameters,
                                            const ModelOptions& options) {
  CheckModelInput(grid, parameters);
  const int n = grid.n_frames;
  const auto n_phi = grid.phi_deg.size();
  const model::Geometry geometry{grid.q, grid.stator_rotor_gap, grid.dt};
  if (options.threads < 1) ThrowBadInput("must be at least 1", {}, "threads");

  // Whole rows of every angle; the kernel reads no data for a model evaluation, but its
  // tiles must point at some.
  const std::vector<double> zeros(static_cast<std::size_t>(n), 0.0);
  std::vector<model::RowTile> tiles;
  for (int k = 0; k < static_cast<int>(n_phi); ++k) {
    for (int i = 0; i < n; ++i) tiles.push_back({k, i, 0, n, zeros.data(), nullptr, 2.0});
  }
  model::KernelOptions ko;
  ko.threads = options.threads;
  ko.exact_transcendentals = options.exact;
  const auto made = model::MakePassKernel(grid.mode, geometry, io::LoaderTimeGrid(grid.dt, n),
                                          grid.phi_deg, std::move(tiles), ko);
  const model::PassKernel& kernel = *made;
  const std::vector<double> expanded = Expanded(parameters);
  std::vector<double> all(static_cast<std::size_t>(kernel.num_points()));
  kernel.EvaluateModel(expanded, all);

  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<std::vector<double>> c2;
  for (std::size_t k = 0; k < n_phi; ++k) {
    c2.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(k * size),
                    all.begin() + static_cast<std::ptrdiff_t>((k + 1) * size));
  }
  return c2;
}

ModelJacobian EvaluateJacobian(const ModelGrid& grid, const ModelParameters& parameters) {
  CheckModelInput(grid, parameters);
  const int n = grid.n_frames;
  const int n_phi = static_cast<int>(grid.phi_deg.size());
  const model::Geometry geometry{grid.q, grid.stator_rotor_gap, grid.dt};
  const std::vector<double> expanded = Expanded(parameters);
  const std::vector<double> t = io::LoaderTimeGrid(grid.dt, n);
  ModelJacobian out;
  out.names = model::ExpandedIndex(grid.mode, n_phi).Names(grid.mode);
  const std::size_t p = out.names.size();
  const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  // Both oracles fill one point's gradient at a time.
  auto fill = [&](const auto& oracle) {
    for (int k = 0; k < n_phi; ++k) {
      std::vector<double> jac(nn * p);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const std::size_t at = (static_cast<std::size_t>(i) * static_cast<std::size_t>(n) +
                                  static_cast<std::size_t>(j)) *
                                 p;
          oracle.C2(k, i, j, std::span<double>(jac.data() + at, p));
        }
      }
      out.jacobian.push_back(std::move(jac));
    }
  };
  if (grid.mode == AnalysisMode::kTwoComponent) {
    // The kernel labels the same frames dt·[1, …, N] in this mode (kernel_factory.cpp).
    model::heterodyne::HeterodyneInput input;
    input.t = t;
    for (double& v : input.t) v += grid.dt;
    input.dt = grid.dt;
    input.q = grid.q;
    input.phi_deg = grid.phi_deg;
    input.physical = parameters.physical;
    input.contrast = parameters.contrast;
    input.offset = parameters.offset;
    fill(model::heterodyne::HeterodyneGradient(input, expanded));
  } else {
    fill(model::reference::ReferenceGradient(grid.mode, geometry, t, grid.phi_deg, expanded));
  }
  return out;
}

}  // namespace homodyne
