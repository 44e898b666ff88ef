// Small helper to write the key table sections compactly (internal to src/config).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/key_table.h"
#include "core/errors.h"
#include "key_binding.h"

namespace homodyne::config::detail {

// Adds entries under a path prefix: KeyAdder nlsq(table, "optimization.nlsq");
// nlsq.Used("max_iterations", KeyType::kInt, "1000", AtLeast(1), "..."). A key with a typed
// field of Config names it last but one (key_binding.h): ..., "...", f(&S::member), flags).
class KeyAdder {
 public:
  KeyAdder(std::vector<KeySpec>& table, std::string prefix)
      : table_(table), prefix_(std::move(prefix)) {}

  // A nested adder; `name` may be empty (same prefix).
  KeyAdder Sub(const std::string& name) const { return KeyAdder(table_, Join(name)); }

  // Declares a mapping section (the prefix itself when `name` is empty).
  void Section(const std::string& name, KeyStatus status, std::string description,
               unsigned flags = kNoFlags) const {
    Add(name, KeyType::kMapping, "", NoRule(), status, std::move(description), flags, {});
  }
  void Used(const std::string& name, KeyType type, std::string default_yaml, Rule rule,
            std::string description, unsigned flags = kNoFlags) const {
    Add(name, type, std::move(default_yaml), std::move(rule), KeyStatus::kUsed,
        std::move(description), flags, {});
  }
  void Used(const std::string& name, KeyType type, std::string default_yaml, Rule rule,
            std::string description, FieldRef field, unsigned flags = kNoFlags) const {
    Add(name, type, std::move(default_yaml), std::move(rule), KeyStatus::kUsed,
        std::move(description), flags, std::move(field));
  }
  void Acc(const std::string& name, KeyType type, std::string default_yaml, Rule rule,
           std::string description, unsigned flags = kNoFlags) const {
    Add(name, type, std::move(default_yaml), std::move(rule), KeyStatus::kAccepted,
        std::move(description), flags, {});
  }
  // An accepted key whose value still lands in a field (kept for homodyne's meaning).
  void Acc(const std::string& name, KeyType type, std::string default_yaml, Rule rule,
           std::string description, FieldRef field, unsigned flags = kNoFlags) const {
    Add(name, type, std::move(default_yaml), std::move(rule), KeyStatus::kAccepted,
        std::move(description), flags, std::move(field));
  }

 private:
  std::string Join(const std::string& name) const {
    if (name.empty()) return prefix_;
    if (prefix_.empty()) return name;
    if (name.front() == '[') return prefix_ + name;  // "[].key" for list elements
    return prefix_ + "." + name;
  }
  void Add(const std::string& name, KeyType type, std::string default_yaml, Rule rule,
           KeyStatus status, std::string description, unsigned flags, FieldRef field) const {
    if (field.accepts != nullptr && !field.accepts(type)) {
      ThrowInternal("key table: the field bound to " + Join(name) + " cannot hold " +
                    std::string(DescribeType(type)));
    }
    KeySpec spec;
    spec.path = Join(name);
    spec.type = type;
    spec.default_yaml = std::move(default_yaml);
    spec.rule = std::move(rule);
    spec.status = status;
    spec.description = std::move(description);
    spec.flags = flags;
    spec.field = std::move(field.binding);
    table_.push_back(std::move(spec));
  }

  std::vector<KeySpec>& table_;
  std::string prefix_;
};

}  // namespace homodyne::config::detail
