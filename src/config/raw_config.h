// Internal: the validated YAML tree and typed access to it by key path.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace homodyne::config {

struct RawConfig {
  YAML::Node root;
  std::string source;
};

namespace detail {

// The node at a dotted path (no wildcards or indices); an undefined node if absent.
YAML::Node FindNode(const YAML::Node& root, std::string_view path);

// The scalar text of map[key], or nullopt if absent, null or not a scalar. (Indexing a
// const yaml-cpp node with a missing key yields an invalid node whose type queries throw.)
std::optional<std::string> ScalarField(const YAML::Node& map, const char* key);

// " (line N)" for a node with a position, else "".
std::string LineSuffix(const YAML::Node& node);

// Typed access: value in the file if given and not null, else the table default.
class ValueReader {
 public:
  explicit ValueReader(YAML::Node root) : root_(std::move(root)) {}

  YAML::Node Find(std::string_view path) const { return FindNode(root_, path); }
  bool Has(std::string_view path) const;  // given and not null
  std::string Line(std::string_view path) const { return LineSuffix(Find(path)); }

  double Number(std::string_view path) const;
  long long Integer(std::string_view path) const;
  int Int(std::string_view path) const;
  bool Bool(std::string_view path) const;
  std::string String(std::string_view path) const;  // "" when null and no default
  std::optional<double> OptNumber(std::string_view path) const;
  std::optional<long long> OptInteger(std::string_view path) const;
  // "auto" → nullopt, else the integer.
  std::optional<long long> IntOrAuto(std::string_view path) const;
  // "auto", "true" or "false".
  std::string BoolOrAuto(std::string_view path) const;
  std::optional<std::vector<double>> OptNumberList(std::string_view path) const;
  std::optional<std::vector<std::string>> OptStringList(std::string_view path) const;

 private:
  // The file value or the parsed default; undefined/null if neither.
  YAML::Node Effective(std::string_view path) const;
  YAML::Node root_;
};

// Scalar classification used by validation and typed access.
bool IsQuoted(const YAML::Node& scalar);
// A finite number (YAML float syntax; .inf, .nan and overflowing values are not numbers).
std::optional<double> ParseNumber(const std::string& text);
std::optional<long long> ParseInteger(const std::string& text);
std::optional<bool> ParseBool(const std::string& text);

}  // namespace detail
}  // namespace homodyne::config
