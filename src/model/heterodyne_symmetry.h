// The two-component model's label symmetry: c2 is unchanged when the reference and the
// sample populations swap roles and the sample fraction f_s(t) becomes 1 − f_s(t) (the cross
// term's cosine is even and the normalisation is symmetric). The fraction's form
// f0·exp(f1·(t − f2)) + f3 with f0 ≥ 0 cannot always express 1 − f_s, so the mirror of a
// parameter vector is approximate: transport parameters swapped, and the representable
// fraction closest to 1 − f_s on the fit's time grid.
//
// A fit from a start that is symmetric between the populations (the registry defaults:
// equal transport, f0 = 0.5) falls into either the true basin or this mirror's; a local fit
// from the mirror of the answer is how the fit checks which one it is in.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "model/heterodyne_reference.h"

namespace homodyne::model::heterodyne {

struct MirrorFraction {
  double f0 = 0.0, f1 = 0.0, f2 = 0.0, f3 = 0.0;
  double rms = 0.0;  // RMS of (fraction − (1 − f_s)) over the grid: 0 when exact
};

// The fraction (f2 kept at its value: f0 and f2 enter only as f0·exp(−f1·f2)) closest in least
// squares to 1 − f_s(t) of `physical` on `times`, with f0 ∈ [f0_lo, f0_hi], f1 on a grid of
// its bounds [f1_lo, f1_hi] and f3 ∈ [f3_lo, f3_hi]. Deterministic.
MirrorFraction MirrorSampleFraction(std::span<const double> physical, std::span<const double> times,
                                    std::array<double, 2> f0_bounds,
                                    std::array<double, 2> f1_bounds,
                                    std::array<double, 2> f3_bounds);

// The mirror of a 14-vector: (D0, alpha, D_offset) of reference and sample swapped, the
// fraction from MirrorSampleFraction, velocity and phi0_het unchanged.
std::vector<double> MirrorParameters(std::span<const double> physical,
                                     const MirrorFraction& fraction);

}  // namespace homodyne::model::heterodyne
