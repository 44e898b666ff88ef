#include "schema_check.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "config/key_table.h"
#include "raw_config.h"

namespace homodyne::config::detail {
namespace {

std::string NodeKindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return IsQuoted(node) ? fmt::format("the string \"{}\"", node.Scalar())
                            : fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

class Walker {
 public:
  Walker(ProblemList& problems, std::vector<std::string>& accepted,
         std::vector<std::string>* ignored)
      : problems_(problems), accepted_(accepted), ignored_(ignored) {}

  void WalkMapping(const YAML::Node& node, const std::string& path, const std::string& pattern,
                   bool open) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        Add(path.empty() ? "<top level>" : path,
            fmt::format("keys must be plain names{}", LineSuffix(kv.first)));
        continue;
      }
      const std::string name = kv.first.Scalar();
      const std::string child = path.empty() ? name : path + "." + name;
      if (!seen.insert(name).second) {
        Add(child, fmt::format("duplicate key{}", LineSuffix(kv.first)));
        continue;
      }
      const std::string exact = pattern.empty() ? name : pattern + "." + name;
      const std::string wild = pattern.empty() ? "*" : pattern + ".*";
      const KeySpec* spec = FindKeySpec(exact);
      std::string child_pattern = exact;
      if (spec == nullptr) {
        spec = FindKeySpec(wild);
        child_pattern = wild;
      }
      if (spec == nullptr) {
        if (open) {
          accepted_.push_back(child);
          continue;
        }
        std::string message = fmt::format("unknown key{}", LineSuffix(kv.first));
        const std::string suggestion = SuggestKey(path, pattern, name);
        if (!suggestion.empty()) message += fmt::format("; did you mean {}?", suggestion);
        // Lenient reading (homodyne's and xpcsjax's): the key and everything below it are
        // ignored, and the caller warns with the whole list.
        if (ignored_ != nullptr) {
          ignored_->push_back(fmt::format("{} ({})", child, message));
        } else {
          Add(child, message);
        }
        continue;
      }
      if (spec->status == KeyStatus::kAccepted && spec->type != KeyType::kMapping) {
        accepted_.push_back(child);
      }
      WalkValue(kv.second, child, child_pattern, *spec);
    }
  }

 private:
  void Add(std::string key, std::string message) {
    problems_.Add(std::move(key), std::move(message));
  }

  void Expected(const std::string& path, const KeySpec& spec, const YAML::Node& node) {
    Add(path, fmt::format("expected {}, found {}{}", DescribeType(spec.type), NodeKindName(node),
                          LineSuffix(node)));
  }

  void CheckRequired(const YAML::Node& element, const std::string& path,
                     const std::string& pattern) {
    const std::string prefix = pattern + ".";
    for (const auto& spec : ConfigKeyTable()) {
      if (!spec.required() || spec.path.rfind(prefix, 0) != 0) continue;
      const std::string leaf = spec.path.substr(prefix.size());
      if (leaf.find_first_of(".[") != std::string::npos) continue;
      const YAML::Node value = element[leaf];
      if (!value.IsDefined() || value.IsNull()) {
        Add(path + "." + leaf, fmt::format("required key is missing{}", LineSuffix(element)));
      }
    }
  }

  void WalkValue(const YAML::Node& node, const std::string& path, const std::string& pattern,
                 const KeySpec& spec) {
    if (node.IsNull()) {
      const bool ok = spec.nullable() || spec.type == KeyType::kMapping ||
                      spec.type == KeyType::kAnyMapping || spec.type == KeyType::kAny;
      if (!ok) Expected(path, spec, node);
      return;
    }
    switch (spec.type) {
      case KeyType::kMapping:
        if (!node.IsMap()) return Expected(path, spec, node);
        return WalkMapping(node, path, pattern, spec.open());
      case KeyType::kAnyMapping:
        if (!node.IsMap()) Expected(path, spec, node);
        return;
      case KeyType::kAny:
        return;
      case KeyType::kMappingList: {
        if (!node.IsSequence()) return Expected(path, spec, node);
        std::size_t index = 0;
        for (const auto& element : node) {
          const std::string element_path = fmt::format("{}[{}]", path, index++);
          if (!element.IsMap()) {
            Add(element_path, fmt::format("expected a mapping, found {}{}", NodeKindName(element),
                                          LineSuffix(element)));
            continue;
          }
          WalkMapping(element, element_path, pattern + "[]", false);
          CheckRequired(element, element_path, pattern + "[]");
        }
        return;
      }
      case KeyType::kFloatList:
      case KeyType::kStringList: {
        if (!node.IsSequence()) return Expected(path, spec, node);
        std::size_t index = 0;
        for (const auto& item : node) {
          const std::string item_path = fmt::format("{}[{}]", path, index++);
          const bool ok = item.IsScalar() && (spec.type == KeyType::kStringList ||
                                              (!IsQuoted(item) && ParseNumber(item.Scalar())));
          if (!ok) {
            Add(item_path, fmt::format("expected {}, found {}{}",
                                       spec.type == KeyType::kFloatList ? "a number" : "a string",
                                       NodeKindName(item), LineSuffix(item)));
          }
        }
        return;
      }
      default:
        return CheckScalar(node, path, spec);
    }
  }

  void CheckScalar(const YAML::Node& node, const std::string& path, const KeySpec& spec) {
    if (!node.IsScalar()) return Expected(path, spec, node);
    const std::string& text = node.Scalar();
    const bool quoted = IsQuoted(node);
    std::string violation;
    switch (spec.type) {
      case KeyType::kBool:
        if (quoted || !ParseBool(text)) return Expected(path, spec, node);
        break;
      case KeyType::kBoolOrAuto:
        if (text != "auto" && (quoted || !ParseBool(text))) return Expected(path, spec, node);
        break;
      case KeyType::kInt:
      case KeyType::kIntOrAuto: {
        if (spec.type == KeyType::kIntOrAuto && text == "auto") break;
        const auto v = quoted ? std::nullopt : ParseInteger(text);
        if (!v) return Expected(path, spec, node);
        violation = CheckNumber(spec.rule, static_cast<double>(*v));
        break;
      }
      case KeyType::kFloat: {
        const auto v = quoted ? std::nullopt : ParseNumber(text);
        if (!v) return Expected(path, spec, node);
        violation = CheckNumber(spec.rule, *v);
        break;
      }
      case KeyType::kString:
        violation = CheckString(spec.rule, text);
        break;
      default:
        return Expected(path, spec, node);
    }
    if (!violation.empty()) {
      Add(path, fmt::format("{}, found {}{}", violation, NodeKindName(node), LineSuffix(node)));
    }
  }

  ProblemList& problems_;
  std::vector<std::string>& accepted_;
  std::vector<std::string>* ignored_;  // null: unknown keys are problems
};

}  // namespace

void CheckAgainstKeyTable(const YAML::Node& root, ProblemList& problems,
                          std::vector<std::string>& accepted_present,
                          std::vector<std::string>* ignored) {
  Walker walker(problems, accepted_present, ignored);
  walker.WalkMapping(root, "", "", false);
}

}  // namespace homodyne::config::detail
