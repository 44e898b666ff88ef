// Analysis modes of the homodyne model and the names of its physical parameters.
//
// static        → [D0, alpha, D_offset]
// laminar_flow  → [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
// two_component → the 14 parameters of heterodyne_reference.h (D0_ref … phi0_het)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "homodyne/model.h"

namespace homodyne::model {

// The public enum (homodyne/model.h), under the model's own namespace.
using ::homodyne::AnalysisMode;

// Parses a mode string, case-insensitively: "static", "static_isotropic" and
// "static_anisotropic" give kStatic, "laminar_flow" gives kLaminarFlow, "two_component"
// (xpcsjax's name) and its synonyms "heterodyne" and "two-component" give kTwoComponent;
// nullopt for anything else.
std::optional<AnalysisMode> TryParseAnalysisMode(std::string_view text);

// TryParseAnalysisMode, and for anything else a bad-input Error naming `key` (the config
// key the string came from).
AnalysisMode ParseAnalysisMode(std::string_view text, std::string_view key = "analysis_mode");

// "static", "laminar_flow" or "two_component".
std::string_view ToString(AnalysisMode mode);

// 3 for static, 7 for laminar_flow, 14 for two_component.
int NumPhysicalParameters(AnalysisMode mode);

// Physical parameter names in optimiser order.
const std::vector<std::string>& PhysicalParameterNames(AnalysisMode mode);

// Maps the accepted aliases to canonical names (gamma_dot_0 → gamma_dot_t0,
// gamma_dot_offset → gamma_dot_t_offset, phi_0 → phi0); other names are returned unchanged.
std::string CanonicalParameterName(std::string_view name);
// The same for a name of `mode`'s configs: two_component maps its own aliases (beta →
// v_beta, phi0 → phi0_het, xpcsjax's kernel names) and takes no homodyne alias.
std::string CanonicalParameterName(AnalysisMode mode, std::string_view name);

// Index of a (possibly aliased) physical parameter name, or -1 if the mode has no such
// parameter. two_component's own aliases: beta → v_beta, phi0 → phi0_het.
int PhysicalParameterIndex(AnalysisMode mode, std::string_view name);

// Indices of the physical parameters in the physics block.
namespace param {
inline constexpr int kD0 = 0;
inline constexpr int kAlpha = 1;
inline constexpr int kDOffset = 2;
inline constexpr int kGammaDot0 = 3;
inline constexpr int kBeta = 4;
inline constexpr int kGammaDotOffset = 5;
inline constexpr int kPhi0 = 6;
}  // namespace param

}  // namespace homodyne::model
