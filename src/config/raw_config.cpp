#include "raw_config.h"

#include <cmath>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "config/key_table.h"
#include "core/errors.h"

namespace homodyne::config::detail {

YAML::Node FindNode(const YAML::Node& root, std::string_view path) {
  YAML::Node current = root;  // shares identity; only read below
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t end = path.find('.', pos);
    if (end == std::string_view::npos) end = path.size();
    const std::string name(path.substr(pos, end - pos));
    if (!current.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node next;
    bool found = false;
    for (const auto& kv : current) {
      if (kv.first.IsScalar() && kv.first.Scalar() == name) {
        next.reset(kv.second);
        found = true;
        break;
      }
    }
    if (!found) return YAML::Node(YAML::NodeType::Undefined);
    current.reset(next);
    pos = end + 1;
  }
  return current;
}

std::optional<std::string> ScalarField(const YAML::Node& map, const char* key) {
  if (!map.IsDefined() || !map.IsMap()) return std::nullopt;
  const YAML::Node value = map[key];
  if (!value.IsDefined() || !value.IsScalar()) return std::nullopt;
  return value.Scalar();
}

std::string LineSuffix(const YAML::Node& node) {
  if (!node.IsDefined()) return {};
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {};
  return fmt::format(" (line {})", mark.line + 1);
}

bool IsQuoted(const YAML::Node& scalar) { return scalar.Tag() == "!"; }

std::optional<double> ParseNumber(const std::string& text) {
  // Finite numbers only: YAML's .inf and .nan are not numbers here (a NaN initial value or an
  // infinite bound would only fail inside the solver).
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (!std::regex_match(text, kFloat)) return std::nullopt;
  try {
    const double v = std::stod(text);
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;  // out of range (e.g. 1e999)
  }
}

std::optional<long long> ParseInteger(const std::string& text) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  if (!std::regex_match(text, kInt)) return std::nullopt;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<bool> ParseBool(const std::string& text) {
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
    if (text == t) return true;
  }
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
    if (text == f) return false;
  }
  return std::nullopt;
}

bool ValueReader::Has(std::string_view path) const {
  const YAML::Node node = Find(path);
  return node.IsDefined() && !node.IsNull();
}

YAML::Node ValueReader::Effective(std::string_view path) const {
  YAML::Node node = Find(path);
  if (node.IsDefined() && !node.IsNull()) return node;
  const KeySpec* spec = FindKeySpec(path);
  if (spec == nullptr) ThrowInternal(fmt::format("config key '{}' is not in the key table", path));
  if (spec->default_yaml.empty()) return YAML::Node(YAML::NodeType::Null);
  return YAML::Load(spec->default_yaml);
}

namespace {
[[noreturn]] void WrongType(std::string_view path, const YAML::Node& node, std::string_view what) {
  ThrowBadInput(fmt::format("expected {}{}", what, LineSuffix(node)), {}, std::string(path));
}
}  // namespace

std::optional<double> ValueReader::OptNumber(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull()) return std::nullopt;
  auto v = node.IsScalar() ? ParseNumber(node.Scalar()) : std::nullopt;
  if (!v) WrongType(path, node, "a number");
  return v;
}

std::optional<long long> ValueReader::OptInteger(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull()) return std::nullopt;
  auto v = node.IsScalar() ? ParseInteger(node.Scalar()) : std::nullopt;
  if (!v) WrongType(path, node, "an integer");
  return v;
}

double ValueReader::Number(std::string_view path) const {
  auto v = OptNumber(path);
  if (!v) ThrowInternal(fmt::format("config key '{}' has no value and no default", path));
  return *v;
}

long long ValueReader::Integer(std::string_view path) const {
  auto v = OptInteger(path);
  if (!v) ThrowInternal(fmt::format("config key '{}' has no value and no default", path));
  return *v;
}

int ValueReader::Int(std::string_view path) const {
  const long long v = Integer(path);
  if (v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min()) {
    ThrowBadInput(fmt::format("value {} is out of the integer range{}", v, Line(path)), {},
                  std::string(path));
  }
  return static_cast<int>(v);
}

bool ValueReader::Bool(std::string_view path) const {
  const YAML::Node node = Effective(path);
  auto v = node.IsScalar() ? ParseBool(node.Scalar()) : std::nullopt;
  if (!v) WrongType(path, node, "true/false");
  return *v;
}

std::string ValueReader::String(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull()) return {};
  if (!node.IsScalar()) WrongType(path, node, "a string");
  return node.Scalar();
}

std::optional<long long> ValueReader::IntOrAuto(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull() || (node.IsScalar() && node.Scalar() == "auto")) return std::nullopt;
  return OptInteger(path);
}

std::string ValueReader::BoolOrAuto(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull() || (node.IsScalar() && node.Scalar() == "auto")) return "auto";
  return Bool(path) ? "true" : "false";
}

std::optional<std::vector<double>> ValueReader::OptNumberList(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull()) return std::nullopt;
  if (!node.IsSequence()) WrongType(path, node, "a list of numbers");
  std::vector<double> out;
  for (const auto& item : node) {
    auto v = item.IsScalar() ? ParseNumber(item.Scalar()) : std::nullopt;
    if (!v) WrongType(path, item, "a list of numbers");
    out.push_back(*v);
  }
  return out;
}

std::optional<std::vector<std::string>> ValueReader::OptStringList(std::string_view path) const {
  const YAML::Node node = Effective(path);
  if (node.IsNull()) return std::nullopt;
  if (!node.IsSequence()) WrongType(path, node, "a list of strings");
  std::vector<std::string> out;
  for (const auto& item : node) {
    if (!item.IsScalar()) WrongType(path, item, "a list of strings");
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace homodyne::config::detail
