// Parameter names, aliases and built-in default bounds (spec §1.8), for the config module.
// The analysis mode, the physical parameter names and their aliases are the model's
// (model/analysis_mode.h), named here too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/analysis_mode.h"

namespace homodyne::config {

using model::AnalysisMode;
using model::CanonicalParameterName;
using model::PhysicalParameterNames;
using model::ToString;
using model::TryParseAnalysisMode;

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
  double nlsq_start = 0.0;  // homodyne's NLSQ start when the config gives no value
};

// Built-in bounds (homodyne's ParameterManager defaults) for a canonical name, including
// contrast [0, 1] and offset [0.5, 1.5]; nullopt for unknown names.
std::optional<ParameterBoundsDefault> DefaultParameterBounds(std::string_view canonical_name);

struct EffectiveParameter;

// Where the NLSQ fit starts a physical parameter whose initial value the config does not
// give: homodyne's default (D0 1e4, alpha −1.5, D_offset 0, gamma_dot_t0 1e-3, beta 0,
// gamma_dot_t_offset 0, phi0 0) when it lies inside the parameter's bounds, else the bounds'
// midpoint. (CMC starts such a parameter at the midpoint.)
double NlsqDefaultStart(const EffectiveParameter& p);

// All names accepted in bounds/priors: the 7 physical names, then contrast and offset.
std::vector<std::string> AllParameterNames();

}  // namespace homodyne::config
