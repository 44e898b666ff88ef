#include "key_binding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace homodyne::config::detail {

void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view, bool& out) {
  out = r.Bool(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view, int& out) {
  out = r.Int(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view, long long& out) {
  out = r.Integer(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view, double& out) {
  out = r.Number(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view, std::string& out) {
  out = r.String(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view,
               std::optional<int>& out) {
  // No int range check: the table bounds these keys from below only.
  const auto v =
      spec.type == KeyType::kIntOrAuto ? r.IntOrAuto(spec.path) : r.OptInteger(spec.path);
  out = v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view,
               std::optional<double>& out) {
  out = r.OptNumber(spec.path);
}
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view,
               std::optional<std::vector<double>>& out) {
  out = r.OptNumberList(spec.path);
}
void ThrowUnknownChoice(const KeySpec& spec, std::string_view text, std::string_view source) {
  ThrowBadInput(fmt::format("'{}' is not one of {}", text, fmt::join(spec.rule.choices, ", ")),
                std::string(source), spec.path);
}

std::string FieldText(bool v) { return v ? "true" : "false"; }
std::string FieldText(int v) { return fmt::format("{}", v); }
std::string FieldText(long long v) { return fmt::format("{}", v); }
std::string FieldText(double v) { return fmt::format("{}", v); }
std::string FieldText(const std::string& v) { return v; }
std::string FieldText(const std::optional<int>& v) { return v ? FieldText(*v) : "null"; }
std::string FieldText(const std::optional<double>& v) { return v ? FieldText(*v) : "null"; }
std::string FieldText(const std::optional<std::vector<double>>& v) {
  return v ? fmt::format("[{}]", fmt::join(*v, ", ")) : "null";
}

void ReadBoundFields(const ValueReader& r, Config& config) {
  for (const KeySpec& spec : ConfigKeyTable()) {
    if (spec.field) spec.field.read(r, spec, config);
  }
}

}  // namespace homodyne::config::detail
