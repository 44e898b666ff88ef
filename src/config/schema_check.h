// Internal: validation of a YAML tree against the key table and the flat-layout conversion.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "problem_list.h"

namespace homodyne::config::detail {

// Checks every key of `root` (a mapping) against the key table: unknown keys (with the
// nearest valid key), wrong types, per-value rules and required list-element keys.
// Problems are added to `problems`; keys found with status "accepted" (and undeclared
// keys inside open sections) are appended to `accepted_present`. With `ignored` given,
// an unknown key is not a problem: "key (unknown key, line N; did you mean …?)" is
// appended there and the key's value is not inspected.
void CheckAgainstKeyTable(const YAML::Node& root, ProblemList& problems,
                          std::vector<std::string>& accepted_present,
                          std::vector<std::string>* ignored = nullptr);

// The nearest known key for an unknown key `name` found under concrete path `parent`
// (whose table pattern is `parent_pattern`); empty if nothing is close enough.
std::string SuggestKey(const std::string& parent, const std::string& parent_pattern,
                       const std::string& name);

// The candidate nearest to `name` (case-insensitive edit distance), or empty if none is
// close enough: the same closeness as SuggestKey.
std::string SuggestName(const std::string& name, const std::vector<std::string>& candidates);

// Converts homodyne's flat legacy layout (data_file, dt, start_frame, end_frame,
// output_directory at the top level, no analyzer_parameters/experimental_data) to the
// nested layout in place. Returns true when a conversion happened.
bool ConvertFlatLegacyLayout(YAML::Node& root, ProblemList& problems);

// Reads the keys and shapes of earlier homodyne and xpcsjax versions and of their
// documentation's examples (earlier_keys.cpp) under today's keys, in place; appends one note
// per conversion ("X (origin) read as Y").
void ConvertEarlierKeys(YAML::Node& root, std::vector<std::string>& notes);

// The key that marks `root` (as read, before ConvertEarlierKeys) as an xpcsjax config, as
// "key" or "key: value"; empty for a homodyne config. An xpcsjax config is one whose mode is
// two_component, or that holds a key only xpcsjax's templates and documentation write
// (docs/migrating.md lists them). It decides output.layout: auto.
std::string XpcsjaxConfigMarker(const YAML::Node& root);

// The moved keys and sections of that table (a section as "path.*"), for the migration
// table of docs/migrating.md and tests.
struct EarlierKey {
  std::string before, now, origin;
};
std::vector<EarlierKey> EarlierKeyMoves();

}  // namespace homodyne::config::detail
