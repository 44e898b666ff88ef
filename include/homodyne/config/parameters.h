// Parameter names, aliases and built-in default bounds (spec §1.8).
//
// Defined locally in the config module; the model module keeps its own list and the two
// are to be unified later.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne::config {

enum class AnalysisMode { kStatic, kLaminarFlow };

// "static" or "laminar_flow".
std::string_view ToString(AnalysisMode mode);
// Accepts static, static_isotropic, static_anisotropic (all → kStatic) and laminar_flow,
// case-insensitively. nullopt for anything else.
std::optional<AnalysisMode> ParseAnalysisMode(std::string_view text);

// Physical parameters in fit order: static [D0, alpha, D_offset]; laminar_flow adds
// [gamma_dot_t0, beta, gamma_dot_t_offset, phi0].
const std::vector<std::string>& PhysicalParameterNames(AnalysisMode mode);

// Applies the aliases gamma_dot_0 → gamma_dot_t0, gamma_dot_offset → gamma_dot_t_offset,
// phi_0 → phi0; other names are returned unchanged.
std::string CanonicalParameterName(std::string_view name);

// Canonical base name for bounds/prior matching: aliases applied and a per-angle suffix
// dropped ("contrast_3" → "contrast", "offset_0" → "offset").
std::string BaseParameterName(std::string_view name);

// True for the 7 physical names and "contrast"/"offset" (canonical names only).
bool IsKnownParameter(std::string_view canonical_name);

struct ParameterBoundsDefault {
  std::string name;
  double min = 0.0;
  double max = 0.0;
  std::string unit;
};

// Built-in bounds (homodyne's ParameterManager defaults) for a canonical name, including
// contrast [0, 1] and offset [0.5, 1.5]; nullopt for unknown names.
std::optional<ParameterBoundsDefault> DefaultParameterBounds(std::string_view canonical_name);

// All names accepted in bounds/priors: the 7 physical names, then contrast and offset.
std::vector<std::string> AllParameterNames();

}  // namespace homodyne::config
