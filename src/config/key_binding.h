// Internal: binding a key table entry to its typed field of Config, so that the table
// alone says where a key's value goes and the reader fills every such field in one loop.
//
// In a table section:
//   const FieldsOf nlsq([](auto& c) -> auto& { return c.optimization.nlsq; });
//   n.Used("max_iterations", T::kInt, "1000", AtLeast(1), "...",
//          nlsq(&NlsqOptions::max_iterations));
// The conversion follows the field's C++ type and the key's KeyType; a pair that has no
// conversion (a kFloat key on an int field, ...) is refused when the table is built.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config/choices.h"
#include "config/config.h"
#include "config/key_table.h"
#include "raw_config.h"

namespace homodyne::config::detail {

// Conversions by field type. `source` names the file in messages of custom conversions.
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source, bool& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source, int& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source, long long& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source, double& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source,
               std::string& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source,
               std::optional<int>& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source,
               std::optional<double>& out);
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source,
               std::optional<std::vector<double>>& out);
// The bad-input Error of a name outside the key's choices (a rule that lists fewer or other
// names than the enum's table would reach it).
[[noreturn]] void ThrowUnknownChoice(const KeySpec& spec, std::string_view text,
                                     std::string_view source);
// A choice key: the rule (OneOf, from the same table) has already refused any other name.
// A true/false/auto key (kBoolOrAuto) reads YAML's booleans first.
template <ChoiceEnum E>
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source, E& out) {
  const std::string text =
      spec.type == KeyType::kBoolOrAuto ? r.BoolOrAuto(spec.path) : r.String(spec.path);
  const std::optional<E> value = FindChoice<E>(text, spec.rule.case_insensitive);
  if (!value) ThrowUnknownChoice(spec, text, source);
  out = *value;
}
// A nullable choice key: null or absent is nullopt.
template <ChoiceEnum E>
void ReadField(const ValueReader& r, const KeySpec& spec, std::string_view source,
               std::optional<E>& out) {
  if (!r.Has(spec.path)) {
    out = std::nullopt;
    return;
  }
  E value{};
  ReadField(r, spec, source, value);
  out = value;
}

template <class F>
struct IsOptionalChoice : std::false_type {};
template <ChoiceEnum E>
struct IsOptionalChoice<std::optional<E>> : std::true_type {};

// Which key types each field type can hold.
template <class F>
bool FieldAccepts(KeyType type) {
  if constexpr (std::is_same_v<F, bool>) {
    return type == KeyType::kBool;
  } else if constexpr (std::is_same_v<F, int> || std::is_same_v<F, long long>) {
    return type == KeyType::kInt;
  } else if constexpr (std::is_same_v<F, double> || std::is_same_v<F, std::optional<double>>) {
    return type == KeyType::kFloat;
  } else if constexpr (std::is_same_v<F, std::string>) {
    return type == KeyType::kString;  // a true/false/auto key is an AutoSwitch
  } else if constexpr (std::is_same_v<F, std::optional<int>>) {
    return type == KeyType::kInt || type == KeyType::kIntOrAuto;  // null or "auto" = nullopt
  } else if constexpr (std::is_same_v<F, std::optional<std::vector<double>>>) {
    return type == KeyType::kFloatList;
  } else if constexpr (std::is_same_v<F, AutoSwitch>) {
    return type == KeyType::kBoolOrAuto;
  } else if constexpr (ChoiceEnum<F> || IsOptionalChoice<F>::value) {
    return type == KeyType::kString;
  } else {
    static_assert(!sizeof(F), "no conversion from a config key to this field type");
  }
}

std::string FieldText(bool v);
std::string FieldText(int v);
std::string FieldText(long long v);
std::string FieldText(double v);
std::string FieldText(const std::string& v);
std::string FieldText(const std::optional<int>& v);
std::string FieldText(const std::optional<double>& v);
std::string FieldText(const std::optional<std::vector<double>>& v);
template <ChoiceEnum E>
std::string FieldText(E v) {
  return std::string(ChoiceName(v));
}
template <ChoiceEnum E>
std::string FieldText(const std::optional<E>& v) {
  return v ? std::string(ChoiceName(*v)) : std::string("null");
}

// A field of Config for a table entry, with the check of its key type.
struct FieldRef {
  FieldBinding binding;
  bool (*accepts)(KeyType) = nullptr;
};

// The fields of one struct of Config; `Get` returns that struct from a (const) Config&.
template <class Get>
class FieldsOf {
 public:
  explicit FieldsOf(Get get) : get_(get) {}

  template <class S, class F>
  FieldRef operator()(F S::*member) const {
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(get_(std::declval<Config&>()))>, S>,
                  "the member belongs to another struct than this section's");
    const Get get = get_;
    FieldRef ref;
    ref.accepts = &FieldAccepts<F>;
    ref.binding.read = [get, member](const ValueReader& r, const KeySpec& spec, Config& c) {
      ReadField(r, spec, c.source, get(c).*member);
    };
    ref.binding.text = [get, member](const Config& c) { return FieldText(get(c).*member); };
    return ref;
  }

 private:
  Get get_;
};

// Fills every bound field from `r` (file values, else table defaults), in table order.
void ReadBoundFields(const ValueReader& r, Config& config);

}  // namespace homodyne::config::detail
