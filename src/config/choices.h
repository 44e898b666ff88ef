// The choice keys' values as enums: one table per enum of its names in the config, from
// which the key table's rule (OneOf), the reading of the field and its echo all come, so
// that a choice set is spelt once.
//
// A choice enum E has an overload `std::span<const Choice<E>> Choices(E)` below; its first
// entry for a value is the value's name, later ones are accepted aliases (homodyne's "mcmc"
// for cmc, xpcsjax's "independent" for individual).
#pragma once

#include <algorithm>
#include <concepts>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "lsq/local_method.h"
#include "model/parameter_layout.h"
#include "model/robust_loss.h"

namespace homodyne::config {

template <class E>
struct Choice {
  E value;
  std::string_view name;
};

std::span<const Choice<FitMethod>> Choices(FitMethod);
std::span<const Choice<lsq::LocalMethod>> Choices(lsq::LocalMethod);
std::span<const Choice<model::LossKind>> Choices(model::LossKind);
std::span<const Choice<model::PerAngleMode>> Choices(model::PerAngleMode);
std::span<const Choice<StallRecovery>> Choices(StallRecovery);
std::span<const Choice<MirrorCheck>> Choices(MirrorCheck);
std::span<const Choice<HierarchicalTrigger>> Choices(HierarchicalTrigger);
std::span<const Choice<ShardStrategy>> Choices(ShardStrategy);
std::span<const Choice<CombinationMethod>> Choices(CombinationMethod);
std::span<const Choice<OutputLayout>> Choices(OutputLayout);
std::span<const Choice<FittedDataLevel>> Choices(FittedDataLevel);
std::span<const Choice<LogLevel>> Choices(LogLevel);
std::span<const Choice<GradientResponse>> Choices(GradientResponse);
std::span<const Choice<RegularizationMode>> Choices(RegularizationMode);
std::span<const Choice<SamplingStrategy>> Choices(SamplingStrategy);
std::span<const Choice<PriorType>> Choices(PriorType);
std::span<const Choice<CmaesPreset>> Choices(CmaesPreset);
std::span<const Choice<CmaesRestart>> Choices(CmaesRestart);
std::span<const Choice<AutoSwitch>> Choices(AutoSwitch);
std::span<const Choice<CacheStrategy>> Choices(CacheStrategy);

template <class E>
concept ChoiceEnum = requires(E e) {
  { Choices(e) } -> std::same_as<std::span<const Choice<E>>>;
};

// Every accepted name, aliases included, in table order: the key table's OneOf list.
template <ChoiceEnum E>
std::vector<std::string> ChoiceNames() {
  std::vector<std::string> names;
  for (const Choice<E>& c : Choices(E{})) names.emplace_back(c.name);
  return names;
}

// The names of `values` only (a key that accepts part of an enum), in table order; with
// `aliases`, their aliases too.
template <ChoiceEnum E>
std::vector<std::string> ChoiceNames(std::initializer_list<E> values, bool aliases) {
  std::vector<std::string> names;
  std::vector<E> named;
  for (const Choice<E>& c : Choices(E{})) {
    if (std::find(values.begin(), values.end(), c.value) == values.end()) continue;
    const bool alias = std::find(named.begin(), named.end(), c.value) != named.end();
    if (!alias || aliases) names.emplace_back(c.name);
    named.push_back(c.value);
  }
  return names;
}

// The value named `text` (ASCII case ignored when `case_insensitive`), or nullopt.
template <ChoiceEnum E>
std::optional<E> FindChoice(std::string_view text, bool case_insensitive = false) {
  const auto lower = [](char ch) {
    return (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
  };
  for (const Choice<E>& c : Choices(E{})) {
    if (c.name.size() != text.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < text.size() && same; ++i) {
      same = case_insensitive ? lower(c.name[i]) == lower(text[i]) : c.name[i] == text[i];
    }
    if (same) return c.value;
  }
  return std::nullopt;
}

// The value's name in the config (its first entry); "" for a value outside the table.
template <ChoiceEnum E>
std::string_view ChoiceName(E value) {
  for (const Choice<E>& c : Choices(E{})) {
    if (c.value == value) return c.name;
  }
  return {};
}

}  // namespace homodyne::config
