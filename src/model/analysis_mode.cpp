#include "model/analysis_mode.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/error.h"

namespace homodyne::model {
namespace {
std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::optional<AnalysisMode> TryParseAnalysisMode(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower == "static" || lower == "static_isotropic" || lower == "static_anisotropic") {
    return AnalysisMode::kStatic;
  }
  if (lower == "laminar_flow") return AnalysisMode::kLaminarFlow;
  return std::nullopt;
}

AnalysisMode ParseAnalysisMode(std::string_view text, std::string_view key) {
  if (const auto mode = TryParseAnalysisMode(text)) return *mode;
  ThrowBadInput(fmt::format("unknown analysis mode '{}': expected one of static, "
                            "static_isotropic, static_anisotropic, laminar_flow",
                            text),
                {}, std::string(key));
}

std::string_view ToString(AnalysisMode mode) {
  return mode == AnalysisMode::kStatic ? "static" : "laminar_flow";
}

int NumPhysicalParameters(AnalysisMode mode) { return mode == AnalysisMode::kStatic ? 3 : 7; }

const std::vector<std::string>& PhysicalParameterNames(AnalysisMode mode) {
  static const std::vector<std::string> kStaticNames = {"D0", "alpha", "D_offset"};
  static const std::vector<std::string> kLaminarNames = {
      "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};
  return mode == AnalysisMode::kStatic ? kStaticNames : kLaminarNames;
}

std::string CanonicalParameterName(std::string_view name) {
  if (name == "gamma_dot_0") return "gamma_dot_t0";
  if (name == "gamma_dot_offset") return "gamma_dot_t_offset";
  if (name == "phi_0") return "phi0";
  return std::string(name);
}

int PhysicalParameterIndex(AnalysisMode mode, std::string_view name) {
  const std::string canonical = CanonicalParameterName(name);
  const auto& names = PhysicalParameterNames(mode);
  const auto it = std::find(names.begin(), names.end(), canonical);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace homodyne::model
