// The compact layout in which the model kernels (kernel.h, heterodyne_kernel.h) sum a pass,
// chunk by chunk, and its conversion to the normal equations. With P physical parameters and
// n angles, u = ∂c2/∂θ / σ of a point and r its residual (J = −u):
//   normal pass:   [χ², Σw·u_p·u_q (P×P, upper triangle used), Σw·u_p·r (P),
//                   per angle k: Σw·(u_c², u_c·u_o, u_o², u_c·r, u_o·r), Σw·u_c·u_p (P), Σw·u_o·u_p
//                   (P)]
//   gradient pass: [χ², Σw·u_p·r (P), per angle k: Σw·u_c·r, Σw·u_o·r]
//   χ² pass:       [χ²]
// Partials of this layout add element-wise, so chunks and ranks combine them by addition.
#pragma once

#include <cstddef>
#include <span>

#include "model/expanded_parameters.h"
#include "model/normal_equations.h"

namespace homodyne::model {

std::size_t CompactNormalSize(const ExpandedIndex& index);
std::size_t CompactGradientSize(const ExpandedIndex& index);

// JᵀWJ, JᵀWr and χ² in the expanded space from a (summed) normal-pass partial.
NormalEquations NormalEquationsFromCompact(const ExpandedIndex& index,
                                           std::span<const double> total);
// JᵀWr (into `jtr`, index.size() entries: callers check it before the pass) from a
// gradient-pass partial; returns χ².
double GradientFromCompact(const ExpandedIndex& index, std::span<const double> total,
                           std::span<double> jtr);

}  // namespace homodyne::model
