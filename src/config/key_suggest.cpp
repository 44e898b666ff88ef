// Nearest-key suggestions for unknown keys, and the problem list's error formatting.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/key_table.h"
#include "core/errors.h"
#include "problem_list.h"
#include "schema_check.h"

namespace homodyne::config::detail {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Levenshtein distance (case-insensitive).
std::size_t EditDistance(std::string_view a_in, std::string_view b_in) {
  const std::string a = Lower(a_in);
  const std::string b = Lower(b_in);
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Splits a table path into (parent pattern, leaf name); leaf empty for "[]" paths.
std::pair<std::string, std::string> SplitPattern(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

}  // namespace

std::string SuggestName(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t d = EditDistance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string SuggestKey(const std::string& parent, const std::string& parent_pattern,
                       const std::string& name) {
  // 1. A sibling with a similar name.
  std::vector<std::string> siblings;
  for (const auto& spec : ConfigKeyTable()) {
    const auto [spec_parent, leaf] = SplitPattern(spec.path);
    if (spec_parent == parent_pattern && leaf != "*") siblings.push_back(leaf);
  }
  const std::string best = SuggestName(name, siblings);
  if (!best.empty()) return parent.empty() ? best : parent + "." + best;
  // 2. The same name deeper inside the same parent (a key placed a level too high), or
  // anywhere for a top-level key. Never in a sibling section: optimization.mcmc.enabled is
  // not optimization.nlsq.diagnostics.enabled, nor a key of another program's
  // optimization.cmc a metadata key of ours, because both end in the same word. Keys that
  // moved between sections in earlier versions are read by the table of earlier_keys.cpp.
  for (const auto& spec : ConfigKeyTable()) {
    const auto [spec_parent, leaf] = SplitPattern(spec.path);
    if (Lower(leaf) != Lower(name) || spec.path.find_first_of("*[") != std::string::npos) continue;
    if (parent_pattern.empty() || spec.path.rfind(parent_pattern + ".", 0) == 0) return spec.path;
  }
  return {};
}

void ProblemList::ThrowIfAny(const std::string& source) const {
  if (problems_.empty()) return;
  if (problems_.size() == 1) {
    ThrowBadInput(problems_[0].message, source, problems_[0].key);
  }
  std::string message = fmt::format("{} problems in the configuration:", problems_.size());
  for (const auto& p : problems_) message += fmt::format("\n  {}: {}", p.key, p.message);
  ThrowBadInput(message, source);
}

}  // namespace homodyne::config::detail
