#include "model/analysis_mode.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/errors.h"
#include "model/heterodyne_reference.h"

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
  if (lower == "two_component" || lower == "heterodyne" || lower == "two-component") {
    return AnalysisMode::kTwoComponent;
  }
  return std::nullopt;
}

AnalysisMode ParseAnalysisMode(std::string_view text, std::string_view key) {
  if (const auto mode = TryParseAnalysisMode(text)) return *mode;
  ThrowBadInput(fmt::format("unknown analysis mode '{}': expected one of static, "
                            "static_isotropic, static_anisotropic, laminar_flow, two_component",
                            text),
                {}, std::string(key));
}

std::string_view ToString(AnalysisMode mode) {
  switch (mode) {
    case AnalysisMode::kStatic:
      return "static";
    case AnalysisMode::kLaminarFlow:
      return "laminar_flow";
    case AnalysisMode::kTwoComponent:
      return "two_component";
  }
  return "static";
}

int NumPhysicalParameters(AnalysisMode mode) {
  return static_cast<int>(PhysicalParameterNames(mode).size());
}

const std::vector<std::string>& PhysicalParameterNames(AnalysisMode mode) {
  static const std::vector<std::string> kStaticNames = {"D0", "alpha", "D_offset"};
  static const std::vector<std::string> kLaminarNames = {
      "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};
  static const std::vector<std::string> kTwoComponentNames(heterodyne::ParameterNames().begin(),
                                                           heterodyne::ParameterNames().end());
  switch (mode) {
    case AnalysisMode::kStatic:
      return kStaticNames;
    case AnalysisMode::kLaminarFlow:
      return kLaminarNames;
    case AnalysisMode::kTwoComponent:
      return kTwoComponentNames;
  }
  return kStaticNames;
}

std::string CanonicalParameterName(std::string_view name) {
  if (name == "gamma_dot_0") return "gamma_dot_t0";
  if (name == "gamma_dot_offset") return "gamma_dot_t_offset";
  if (name == "phi_0") return "phi0";
  return std::string(name);
}

std::string CanonicalParameterName(AnalysisMode mode, std::string_view name) {
  if (mode != AnalysisMode::kTwoComponent) return CanonicalParameterName(name);
  const int index = heterodyne::ParameterIndex(name);
  return index < 0 ? std::string(name)
                   : heterodyne::ParameterNames()[static_cast<std::size_t>(index)];
}

int PhysicalParameterIndex(AnalysisMode mode, std::string_view name) {
  if (mode == AnalysisMode::kTwoComponent) return heterodyne::ParameterIndex(name);
  const std::string canonical = CanonicalParameterName(name);
  const auto& names = PhysicalParameterNames(mode);
  const auto it = std::find(names.begin(), names.end(), canonical);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace homodyne::model
