#include "config/parameters.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "config/config.h"

namespace homodyne::config {
namespace {

// ParameterManager defaults (spec §1.8, "bounds (effective default)") and the start of
// homodyne's NLSQ for a parameter the config gives no value (contrast and offset: from the
// data).
// two_component (xpcsjax's parameter registry): its bounds, and its defaults as the start
// (not the bounds' midpoints).
const std::array<ParameterBoundsDefault, 23>& DefaultTable() {
  static const std::array<ParameterBoundsDefault, 23> table = {{
      {"D0", 1e2, 1e5, "A^2/s", 1e4},
      {"alpha", -2.0, 2.0, "dimensionless", -1.5},
      {"D_offset", -1e5, 1e5, "A^2/s", 0.0},
      {"gamma_dot_t0", 1e-6, 0.5, "1/s", 1e-3},
      {"beta", -2.0, 2.0, "dimensionless", 0.0},
      {"gamma_dot_t_offset", -0.1, 0.1, "1/s", 0.0},
      {"phi0", -10.0, 10.0, "degrees", 0.0},
      {"D0_ref", 0.0, 1e6, "A^2/s^(1+alpha)", 1e4},
      {"alpha_ref", -2.0, 2.0, "dimensionless", 0.0},
      {"D_offset_ref", -1e4, 1e4, "A^2/s", 0.0},
      {"D0_sample", 0.0, 1e6, "A^2/s^(1+alpha)", 1e4},
      {"alpha_sample", -2.0, 2.0, "dimensionless", 0.0},
      {"D_offset_sample", -1e4, 1e4, "A^2/s", 0.0},
      {"v0", 0.0, 1e6, "A/s^(1+v_beta)", 1e3},
      {"v_beta", 0.0, 2.0, "dimensionless", 1.0},
      {"v_offset", -100.0, 100.0, "A/s", 0.0},
      {"f0", 0.0, 1.0, "dimensionless", 0.5},
      {"f1", -1.0, 1.0, "1/s", 0.0},
      {"f2", -1.0, 1.0, "s", 0.0},
      {"f3", -1.0, 1.0, "dimensionless", 0.0},
      {"phi0_het", -10.0, 10.0, "degrees", 0.0},
      {"contrast", 0.0, 1.0, "dimensionless", 0.5},
      {"offset", 0.5, 1.5, "dimensionless", 1.0},
  }};
  return table;
}

}  // namespace

std::string BaseParameterName(std::string_view name) {
  for (std::string_view base : {std::string_view("contrast"), std::string_view("offset")}) {
    if (name.size() > base.size() + 1 && name.substr(0, base.size()) == base &&
        name[base.size()] == '_' &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(base.size()) + 1, name.end(),
                    [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return std::string(base);
    }
  }
  return CanonicalParameterName(name);
}

bool IsKnownParameter(std::string_view canonical_name) {
  return DefaultParameterBounds(canonical_name).has_value();
}

std::optional<ParameterBoundsDefault> DefaultParameterBounds(std::string_view canonical_name) {
  for (const auto& entry : DefaultTable()) {
    if (entry.name == canonical_name) return entry;
  }
  return std::nullopt;
}

double NlsqDefaultStart(const EffectiveParameter& p) {
  const auto def = DefaultParameterBounds(p.name);
  if (def && def->nlsq_start >= p.min && def->nlsq_start <= p.max) return def->nlsq_start;
  return 0.5 * (p.min + p.max);
}

std::vector<std::string> AllParameterNames() {
  std::vector<std::string> names;
  for (const auto& entry : DefaultTable()) names.push_back(entry.name);
  return names;
}

}  // namespace homodyne::config
