// Plain reference accumulation of χ², JᵀWJ and JᵀWr over row tiles: c2 from the literal
// reference model, derivatives from ReferenceGradient, a dense Jacobian row per point.
// Slow; the oracle for ModelKernel.
#pragma once

#include <span>
#include <vector>

#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/normal_equations.h"
#include "model/robust_loss.h"
#include "model/row_tile.h"

namespace homodyne::model::reference {

// Model c2 at every tile point (tiles in order).
std::vector<double> ModelAtTiles(AnalysisMode mode, const Geometry& geometry,
                                 const std::vector<double>& t, const std::vector<double>& phi_deg,
                                 std::span<const RowTile> tiles, std::span<const double> params);

// χ² = Σ w·r², JᵀWJ, JᵀWr; with a robust `loss` the objective C²·Σ w·ρ(z) and its
// Gauss–Newton form (robust_loss.h), point by point with SciPy's row scaling.
NormalEquations AccumulateNormalEquations(AnalysisMode mode, const Geometry& geometry,
                                          const std::vector<double>& t,
                                          const std::vector<double>& phi_deg,
                                          std::span<const RowTile> tiles,
                                          std::span<const double> params, double sigma,
                                          const RobustLoss& loss = {});

}  // namespace homodyne::model::reference
