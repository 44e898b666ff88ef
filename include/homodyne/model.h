// The homodyne model of two-time correlations (He et al., PNAS 2024), evaluated on arrays
// in memory:
//
//   c2_k(t1, t2) = offset_k + contrast_k · [g1_diff(t1, t2) · g1_shear,k(t1, t2)]²
//
// static        physical parameters [D0, alpha, D_offset]
// laminar_flow  [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
// two_component xpcsjax's two-component ("heterodyne") model (He et al., PNAS 2025): a
//               reference and a flowing sample population with a time-dependent sample
//               fraction, [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample,
//               D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]
//
// Units: q in 1/Å, dt in s, the stator-rotor gap in Å, angles in degrees, D0 in Å²/s,
// gamma_dot_t0 in 1/s. docs/model.md has the equations and every numerical guard.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "homodyne/export.h"

namespace homodyne {

enum class AnalysisMode { kStatic, kLaminarFlow, kTwoComponent };

// The physical parameter names of `mode`, in the order the model takes them.
HOMODYNE_API std::vector<std::string> ParameterNames(AnalysisMode mode);

// "static", "laminar_flow" or "two_component".
HOMODYNE_API std::string_view AnalysisModeName(AnalysisMode mode);

// What the model is evaluated on.
struct ModelGrid {
  AnalysisMode mode = AnalysisMode::kStatic;
  double q = 0.0;                   // scattering wavevector [1/Å], > 0
  double dt = 0.0;                  // frame interval [s], > 0
  double stator_rotor_gap = 2.0e6;  // L [Å], > 0 (enters laminar_flow only)
  // N: the times are dt·[0, 1, …, N−1]; two_component labels the same frames dt·[1, …, N]
  // (xpcsjax's grid).
  int n_frames = 0;
  std::vector<double> phi_deg;  // one c2 matrix per angle
};

struct ModelParameters {
  std::vector<double> physical;  // ParameterNames(mode).size() values
  std::vector<double> contrast;  // one per angle
  std::vector<double> offset;    // one per angle
};

struct ModelOptions {
  int threads = 1;  // threads of the calling process used for the evaluation (≥ 1)
  // false: the fast kernel (c2 within a few 1e-15 of the literal model); true: every point
  // with the literal model's expressions (slower, bit-identical to the reference oracle).
  bool exact = false;
};

// c2 of every angle: result[k] is the N×N matrix of angle k, row-major, symmetric.
// Serial (no MPI); bad shapes or values throw homodyne::Error (kBadInput) naming the field.
HOMODYNE_API std::vector<std::vector<double>> EvaluateC2(const ModelGrid& grid,
                                                         const ModelParameters& parameters,
                                                         const ModelOptions& options = {});

// The derivatives of c2 with respect to every parameter, in the order of `names`:
// [contrast_0 … contrast_{K−1}, offset_0 … offset_{K−1}, ParameterNames(mode)…].
struct ModelJacobian {
  std::vector<std::string> names;
  // jacobian[k] holds angle k's derivatives, row-major N×N×P (P = names.size()):
  // jacobian[k][(i·N + j)·P + p] = ∂c2_k(t_i, t_j)/∂names[p].
  std::vector<std::vector<double>> jacobian;
};

// The analytic Jacobian of EvaluateC2 (the literal model's chain rule, point by point, as
// the library's reference oracle computes it: where a floor or clip of the model is active
// the derivative is that of the selected branch). Serial; the same errors as EvaluateC2.
HOMODYNE_API ModelJacobian EvaluateJacobian(const ModelGrid& grid,
                                            const ModelParameters& parameters);

}  // namespace homodyne
