#include "config/key_table.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "schema_check.h"

namespace homodyne::config {
namespace {

std::string FormatNumber(double v) { return fmt::format("{:g}", v); }

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Rule MakeRange(double min, double max, bool min_excl, bool max_excl, std::string text) {
  Rule r;
  r.kind = Rule::Kind::kRange;
  r.min = min;
  r.max = max;
  r.min_exclusive = min_excl;
  r.max_exclusive = max_excl;
  r.text = std::move(text);
  return r;
}

struct TableIndex {
  std::vector<KeySpec> table;
  std::unordered_map<std::string, std::size_t> by_path;
};

const TableIndex& Index() {
  static const TableIndex index = [] {
    TableIndex idx;
    detail::AddCoreKeys(idx.table);
    detail::AddNlsqKeys(idx.table);
    detail::AddOptimizationKeys(idx.table);
    detail::AddCmcKeys(idx.table);
    detail::AddAuxiliaryKeys(idx.table);
    for (std::size_t i = 0; i < idx.table.size(); ++i) idx.by_path.emplace(idx.table[i].path, i);
    return idx;
  }();
  return index;
}

std::string EscapeCell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Rule NoRule() { return Rule{}; }
Rule Positive() { return MakeRange(0, Rule{}.max, true, false, "> 0"); }
Rule NonNegative() { return MakeRange(0, Rule{}.max, false, false, ">= 0"); }
Rule AtLeast(double min) {
  return MakeRange(min, Rule{}.max, false, false, ">= " + FormatNumber(min));
}
Rule InRange(double min, double max) {
  return MakeRange(min, max, false, false,
                   fmt::format("in [{}, {}]", FormatNumber(min), FormatNumber(max)));
}
Rule Fraction() { return MakeRange(0, 1, true, false, "in (0, 1]"); }
Rule OpenUnit() { return MakeRange(0, 1, true, true, "in (0, 1)"); }

Rule OneOf(std::vector<std::string> choices, bool case_insensitive) {
  Rule r;
  r.kind = Rule::Kind::kEnum;
  r.text = fmt::format("one of: {}{}", fmt::join(choices, ", "),
                       case_insensitive ? " (case-insensitive)" : "");
  r.choices = std::move(choices);
  r.case_insensitive = case_insensitive;
  return r;
}

Rule CustomRule(std::string text) {
  Rule r;
  r.kind = Rule::Kind::kCustom;
  r.text = std::move(text);
  return r;
}

std::string CheckNumber(const Rule& rule, double value) {
  if (rule.kind != Rule::Kind::kRange) return {};
  const bool low_ok = rule.min_exclusive ? value > rule.min : value >= rule.min;
  const bool high_ok = rule.max_exclusive ? value < rule.max : value <= rule.max;
  if (low_ok && high_ok) return {};
  return "must be " + rule.text;
}

std::string CheckString(const Rule& rule, std::string_view value) {
  if (rule.kind != Rule::Kind::kEnum) return {};
  const std::string v = rule.case_insensitive ? Lower(value) : std::string(value);
  for (const auto& choice : rule.choices) {
    if ((rule.case_insensitive ? Lower(choice) : choice) == v) return {};
  }
  return "must be " + rule.text;
}

const std::vector<KeySpec>& ConfigKeyTable() { return Index().table; }

const KeySpec* FindKeySpec(std::string_view pattern_path) {
  const auto& idx = Index();
  auto it = idx.by_path.find(std::string(pattern_path));
  return it == idx.by_path.end() ? nullptr : &idx.table[it->second];
}

const KeySpec* ResolveKeySpec(std::string_view concrete_path) {
  // Walk segment by segment, keeping the matching pattern path.
  std::string pattern;
  std::size_t pos = 0;
  while (pos < concrete_path.size()) {
    std::size_t end = concrete_path.find_first_of(".[", pos);
    if (end == std::string_view::npos) end = concrete_path.size();
    const std::string name(concrete_path.substr(pos, end - pos));
    const std::string exact = pattern.empty() ? name : pattern + "." + name;
    if (FindKeySpec(exact) != nullptr) {
      pattern = exact;
    } else {
      const std::string wild = pattern.empty() ? "*" : pattern + ".*";
      if (FindKeySpec(wild) == nullptr) return nullptr;
      pattern = wild;
    }
    pos = end;
    while (pos < concrete_path.size() && concrete_path[pos] == '[') {
      const std::size_t close = concrete_path.find(']', pos);
      if (close == std::string_view::npos) return nullptr;
      pattern += "[]";
      pos = close + 1;
    }
    if (pos < concrete_path.size() && concrete_path[pos] == '.') ++pos;
  }
  return FindKeySpec(pattern);
}

std::string_view DescribeType(KeyType type) {
  switch (type) {
    case KeyType::kBool:
      return "true/false";
    case KeyType::kInt:
      return "an integer";
    case KeyType::kFloat:
      return "a number";
    case KeyType::kString:
      return "a string";
    case KeyType::kBoolOrAuto:
      return "true/false or \"auto\"";
    case KeyType::kIntOrAuto:
      return "an integer or \"auto\"";
    case KeyType::kFloatList:
      return "a list of numbers";
    case KeyType::kStringList:
      return "a list of strings";
    case KeyType::kMapping:
      return "a mapping";
    case KeyType::kAnyMapping:
      return "a mapping (free-form)";
    case KeyType::kMappingList:
      return "a list of mappings";
    case KeyType::kAny:
      return "any value";
  }
  return "a value";
}

std::string RenderConfigReferenceMarkdown() {
  std::string out;
  out +=
      "# Configuration reference\n\n"
      "<!-- Generated by homodyne::config::RenderConfigReferenceMarkdown() from the key table\n"
      "     in src/config/key_table_*.cpp. Regenerate with\n"
      "     `homodyne-config --reference-doc > docs/configuration.md`; do not edit by hand. -->\n\n"
      "homodyne-hpc reads homodyne's YAML configuration files as they are. Every key below is\n"
      "known to the reader; any other key is, as in homodyne and xpcsjax, ignored with\n"
      "everything below it and listed in one warning with the nearest valid key as a\n"
      "suggestion (`--strict`, also `homodyne-config --validate --strict`, refuses it\n"
      "instead). `~` and `$VAR`/`${VAR}` in path keys are expanded. Status **used** means\n"
      "the key is honoured with homodyne's meaning;\n"
      "**accepted** means homodyne documents the key but homodyne-hpc does not use it: it is\n"
      "accepted, validated and listed by `homodyne-config --validate FILE --verbose`. xpcsjax's\n"
      "configuration files are read as they are too (its grouped `parameters`, `scaling` and\n"
      "flat `optimization.nlsq` keys; docs/migrating.md, \"Reading xpcsjax configs\").\n\n"
      "Path syntax: `a.b` nested keys, `a.*` any key name under `a`, `a[].b` key `b` of each\n"
      "element of the list `a`. Flags: *nullable* (`null` means not set), *required*, *open*\n"
      "(mapping that also accepts undeclared keys). Defaults are the values used when a key\n"
      "is absent (homodyne's code defaults where they differ from its templates).\n\n"
      "A flat legacy file (`data_file`, `dt`, `start_frame`, `end_frame`, `output_directory` at\n"
      "the top level) is converted to the nested layout before validation.\n";
  std::string current_section;
  for (const auto& spec : ConfigKeyTable()) {
    const std::string top = spec.path.substr(0, spec.path.find_first_of(".["));
    if (top != current_section) {
      current_section = top;
      out += fmt::format("\n## `{}`\n\n", top);
      out += "| key | type | default | rule | status | description |\n";
      out += "|---|---|---|---|---|---|\n";
    }
    std::string flags;
    if (spec.nullable()) flags += ", nullable";
    if (spec.required()) flags += ", required";
    if (spec.open()) flags += ", open";
    out += fmt::format(
        "| `{}` | {}{} | {} | {} | {} | {} |\n", EscapeCell(spec.path), DescribeType(spec.type),
        flags,
        spec.default_yaml.empty() ? std::string()
                                  : fmt::format("`{}`", EscapeCell(spec.default_yaml)),
        EscapeCell(spec.rule.text), spec.status == KeyStatus::kUsed ? "used" : "accepted",
        EscapeCell(spec.description));
  }
  return out;
}

std::string RenderMigrationKeyTableMarkdown() {
  std::string out =
      "| key | what happens here |\n"
      "|---|---|\n";
  for (const auto& spec : ConfigKeyTable()) {
    out +=
        fmt::format("| `{}` | {}{} |\n", EscapeCell(spec.path),
                    spec.status == KeyStatus::kUsed ? "read" : "accepted, no effect",
                    spec.description.empty() ? std::string() : ": " + EscapeCell(spec.description));
  }
  for (const auto& m : detail::EarlierKeyMoves()) {
    out +=
        fmt::format("| `{}` ({}) | read as `{}`, one note; when that key is given too, it wins |\n",
                    EscapeCell(m.before), EscapeCell(m.origin), EscapeCell(m.now));
  }
  out +=
      "| any other key | ignored with everything below it, named in one warning with the "
      "nearest known key beside it; `--strict` refuses it (exit 2) |\n";
  return out;
}

}  // namespace homodyne::config
