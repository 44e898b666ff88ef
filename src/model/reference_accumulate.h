// Plain reference accumulation of χ², JᵀWJ and JᵀWr over row tiles: c2 from the literal
// reference model, derivatives from ReferenceGradient, a dense Jacobian row per point.
// Slow; the oracle for ModelKernel.
#pragma once

#include <span>
#include <vector>

#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/normal_equations.h"
#include "model/row_tile.h"

namespace homodyne::model::reference {

// Model c2 at every tile point (tiles in order).
std::vector<double> ModelAtTiles(AnalysisMode mode, const Geometry& geometry,
                                 const std::vector<double>& t, const std::vector<double>& phi_deg,
                                 std::span<const RowTile> tiles, std::span<const double> params);

NormalEquations AccumulateNormalEquations(AnalysisMode mode, const Geometry& geometry,
                                          const std::vector<double>& t,
                                          const std::vector<double>& phi_deg,
                                          std::span<const RowTile> tiles,
                                          std::span<const double> params, double sigma);

}  // namespace homodyne::model::reference
