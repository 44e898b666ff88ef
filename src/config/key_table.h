// The configuration key table: the single source of truth for every YAML key that
// homodyne-hpc knows (homodyne's config layout, spec §3).
//
// Each entry gives the dotted key path, its type, its default (YAML text), a validation
// rule, its status, a one-line description and, for a key with a typed field of Config,
// that field (key_binding.h). The same table drives validation (the reader rejects unknown
// keys, wrong types and rule violations), the reading of every bound field and the defaults
// of Config (DefaultConfig), the effective-config echo and the Markdown reference in
// docs/configuration.md.
//
// Path syntax:
//   a.b.c        nested mapping keys
//   a.b.*        any key directly under mapping a.b (free-form names, e.g. logging.modules)
//   a.b[].c      key c of every element of the list of mappings a.b
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace homodyne::config {

struct Config;
struct KeySpec;
namespace detail {
class ValueReader;
}  // namespace detail

enum class KeyType {
  kBool,
  kInt,
  kFloat,        // integers are accepted as floats
  kString,       // any scalar (plain or quoted)
  kBoolOrAuto,   // true/false or the string "auto"
  kIntOrAuto,    // an integer or the string "auto"
  kFloatList,    // sequence of numbers
  kStringList,   // sequence of scalars
  kMapping,      // mapping with declared children (see KeySpec::open)
  kAnyMapping,   // free-form mapping: any content accepted, not inspected
  kMappingList,  // sequence of mappings whose keys are declared as path[].key
  kAny,          // any YAML value (scalar, list or mapping)
};

enum class KeyStatus {
  kUsed,      // honoured with homodyne's meaning
  kAccepted,  // documented by homodyne but not used by homodyne-hpc: accepted, listed at -v
};

// A per-value validation rule. Cross-key rules (end_frame vs start_frame, bound min < max,
// list lengths) are checked by the reader; their text is still given here for the docs.
struct Rule {
  enum class Kind { kNone, kRange, kEnum, kCustom };
  Kind kind = Kind::kNone;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  bool max_exclusive = false;
  std::vector<std::string> choices;
  bool case_insensitive = false;
  std::string text;  // human-readable form, e.g. "> 0" or "one of: auto, constant"
};

// Rule constructors.
Rule NoRule();
Rule Positive();                       // > 0
Rule NonNegative();                    // >= 0
Rule AtLeast(double min);              // >= min
Rule InRange(double min, double max);  // min <= x <= max
Rule Fraction();                       // 0 < x <= 1
Rule OpenUnit();                       // 0 < x < 1
Rule OneOf(std::vector<std::string> choices, bool case_insensitive = false);
Rule CustomRule(std::string text);  // checked by the reader (cross-key)

// Returns an empty string when `value` satisfies a range rule, else a description of the
// violation ("must be > 0"). Non-range rules always pass here.
std::string CheckNumber(const Rule& rule, double value);
// Same for enum rules on strings.
std::string CheckString(const Rule& rule, std::string_view value);

enum KeyFlags : unsigned {
  kNoFlags = 0,
  kNullable = 1u << 0,  // `null` (or an empty value) is accepted and means "not set"
  kRequired = 1u << 1,  // must be present (used for elements of lists of mappings)
  kOpen = 1u << 2,      // mapping: undeclared children are accepted and not inspected
};

// The typed field of Config that a key fills (key_binding.h makes these from a member).
struct FieldBinding {
  // Stores the key's value (from the file, else the table default) in the field.
  std::function<void(const detail::ValueReader&, const KeySpec&, Config&)> read;
  // The field's value as YAML text ("null" for an unset optional), for checks and messages.
  std::function<std::string(const Config&)> text;
  explicit operator bool() const { return static_cast<bool>(read); }
};

struct KeySpec {
  std::string path;
  KeyType type = KeyType::kString;
  std::string default_yaml;  // default as YAML text; empty = no default
  Rule rule;
  KeyStatus status = KeyStatus::kUsed;
  std::string description;
  unsigned flags = kNoFlags;
  FieldBinding field;  // empty for keys without a typed field (cross-key logic, lookups)

  // A key without a default may also be written as null ("not set"), except required ones.
  bool nullable() const {
    return (flags & kNullable) != 0 || (default_yaml.empty() && (flags & kRequired) == 0);
  }
  bool required() const { return (flags & kRequired) != 0; }
  bool open() const { return (flags & kOpen) != 0; }
};

// The whole table, in documentation order (parents before children).
const std::vector<KeySpec>& ConfigKeyTable();

// Exact lookup of a table path (pattern syntax as in the table). nullptr if absent.
const KeySpec* FindKeySpec(std::string_view pattern_path);

// Lookup of a concrete key path such as "parameter_space.bounds[2].min" or
// "logging.modules.homodyne.core": list indices become [] and undeclared names under a
// wildcard mapping match the `*` entry. nullptr if the path is not a known key.
const KeySpec* ResolveKeySpec(std::string_view concrete_path);

// The key part of docs/migrating.md: every key of the table and every earlier key or
// section (earlier_keys.cpp) with what happens to it, as Markdown table rows
// (`homodyne-config --migration-keys`).
std::string RenderMigrationKeyTableMarkdown();

// Readable type name for messages and docs ("a number", "an integer", ...).
std::string_view DescribeType(KeyType type);

// Renders the table as the Markdown configuration reference (docs/configuration.md).
std::string RenderConfigReferenceMarkdown();

namespace detail {
// Table sections (one file each); ConfigKeyTable() concatenates them in this order.
void AddCoreKeys(std::vector<KeySpec>& table);          // metadata .. parameter_space
void AddNlsqKeys(std::vector<KeySpec>& table);          // optimization.nlsq
void AddOptimizationKeys(std::vector<KeySpec>& table);  // streaming .. mcmc
void AddCmcKeys(std::vector<KeySpec>& table);           // optimization.cmc
void AddAuxiliaryKeys(std::vector<KeySpec>& table);     // logging, plotting, output, ...

// xpcsjax's flat optimization.nlsq keys that have a nested equivalent here, as (flat path,
// nested path) pairs; a flat key given in the file wins over its nested key.
const std::vector<std::pair<std::string, std::string>>& FlatNlsqKeys();
}  // namespace detail

}  // namespace homodyne::config
