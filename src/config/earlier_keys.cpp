// Keys and shapes of earlier homodyne and xpcsjax versions (and of their documentation's
// examples) read under today's meaning. Each conversion leaves one note naming the key it
// read and where its value went, so that a user sees how the old config was understood.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "raw_config.h"
#include "schema_check.h"

namespace homodyne::config::detail {
namespace {

// A key that moved: its value is read at `now` when `now` is not given itself.
struct MovedKey {
  const char* before;
  const char* now;
  const char* origin;  // where the earlier key is found
};

constexpr MovedKey kMovedKeys[] = {
    {"analysis_settings.analysis_mode", "analysis_mode", "xpcsjax's documentation examples"},
    {"parameter_space.model", "analysis_mode", "homodyne's example configs of 2025"},
    {"analyzer_parameters.temporal.dt", "analyzer_parameters.dt", "xpcsjax"},
    {"analyzer_parameters.temporal.start_frame", "analyzer_parameters.start_frame", "xpcsjax"},
    {"analyzer_parameters.temporal.end_frame", "analyzer_parameters.end_frame", "xpcsjax"},
    {"initial_parameters.active", "initial_parameters.active_parameters", "xpcsjax's quickstart"},
    {"optimization_config.angle_filtering.enabled", "phi_filtering.enabled",
     "xpcsjax's angle filter"},
    {"optimization_config.angle_filtering.target_ranges", "phi_filtering.target_ranges",
     "xpcsjax's angle filter"},
    {"optimization_config.angle_filtering.fallback_to_all_angles",
     "phi_filtering.fallback_to_all_angles", "xpcsjax's angle filter"},
    {"optimization.cmc.sharding.sharding_strategy", "optimization.cmc.sharding.strategy",
     "homodyne's CMC documentation; its code reads strategy"},
    // homodyne's sampler checks before its CMC-only sampler (templates of 2025). (Its
    // target_accept_prob and max_tree_depth there are in every current template beside
    // per_shard_mcmc's, which its code reads: accepted keys, not earlier ones.)
    {"optimization.mcmc.min_ess", "optimization.cmc.validation.min_per_shard_ess",
     "homodyne's NUTS check of 2025"},
    {"optimization.mcmc.max_rhat", "optimization.cmc.validation.max_per_shard_rhat",
     "homodyne's NUTS check of 2025"},
    {"optimization.mcmc.dense_mass", "optimization.mcmc.dense_mass_matrix",
     "homodyne's earlier spelling"},
    // homodyne's first streaming optimizer (its streaming template of October 2025); homodyne's
    // code converts them to the hybrid streaming settings so.
    {"optimization.streaming.max_epochs", "optimization.nlsq.hybrid_streaming.warmup_iterations",
     "homodyne's streaming template of 2025"},
    {"optimization.streaming.learning_rate",
     "optimization.nlsq.hybrid_streaming.warmup_learning_rate",
     "homodyne's streaming optimizer of 2025"},
    {"optimization.streaming.convergence_tol",
     "optimization.nlsq.hybrid_streaming.gauss_newton_tol",
     "homodyne's streaming optimizer of 2025"},
    {"optimization.streaming.validate_numerics",
     "optimization.nlsq.hybrid_streaming.validate_numerics",
     "homodyne's streaming template of 2025"},
};

// A section that moved whole: each key below `before` is read at the same place below `now`
// (one note per section).
struct MovedSection {
  const char* before;
  const char* now;
  const char* origin;
};

// homodyne's CMC-only templates of December 2025 put the CMC settings under optimization.mcmc;
// its code read them from optimization.cmc.
constexpr MovedSection kMovedSections[] = {
    {"optimization.mcmc.sharding", "optimization.cmc.sharding",
     "homodyne's CMC templates of December 2025"},
    {"optimization.mcmc.combination", "optimization.cmc.combination",
     "homodyne's CMC templates of December 2025"},
    {"optimization.mcmc.per_shard_mcmc", "optimization.cmc.per_shard_mcmc",
     "homodyne's CMC templates of December 2025"},
    {"optimization.mcmc.validation", "optimization.cmc.validation",
     "homodyne's CMC templates of December 2025"},
    {"optimization.mcmc.backend_config", "optimization.cmc.backend_config",
     "homodyne's CMC templates of December 2025"},
};

// Sections and keys that mark a config as xpcsjax's (XpcsjaxConfigMarker), in the order
// they are looked for.
constexpr const char* kXpcsjaxOnlyKeys[] = {
    "optimization.angle_filtering",
    "experimental_data.use_caching",
    "analyzer_parameters.frame_step",
    "analyzer_parameters.time_unit",
    "analyzer_parameters.temporal",
    "parameter_bounds",
    "parameters",  // the grouped two-component format
    "scaling",
    "anti_degeneracy",
    "output.include_diagnostics",
    "output.formats.npz",
};

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = path.find('.', begin);
    parts.push_back(path.substr(begin, dot - begin));
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

// The node at `path`, or an undefined node; never inserts.
YAML::Node Find(const YAML::Node& root, const std::string& path) {
  YAML::Node cur(root);
  for (const auto& part : Split(path)) {
    if (!cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& view = cur;  // const lookup: no insertion
    YAML::Node next = view[part];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
  }
  return cur;
}

bool Has(const YAML::Node& root, const std::string& path) {
  const YAML::Node n = Find(root, path);
  return n.IsDefined() && !n.IsNull();
}

// Sets `path` to `value`, creating the mappings on the way.
void Put(YAML::Node& root, const std::string& path, const YAML::Node& value) {
  const auto parts = Split(path);
  YAML::Node cur(root);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    if (!next.IsMap()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next.reset(cur[parts[i]]);
    }
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

// Removes `path` and then every mapping on its way that it left empty.
void Drop(YAML::Node& root, const std::string& path) {
  auto parts = Split(path);
  while (!parts.empty()) {
    std::string parent_path;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      parent_path += (i ? "." : "") + parts[i];
    }
    YAML::Node parent = parent_path.empty() ? root : Find(root, parent_path);
    if (!parent.IsMap()) return;
    parent.remove(parts.back());
    if (parent.size() != 0 || parent_path.empty()) return;
    parts.pop_back();
  }
}

std::string Scalar(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string(); }

void MoveKeys(YAML::Node& root, std::vector<std::string>& notes) {
  for (const auto& m : kMovedKeys) {
    const YAML::Node before = Find(root, m.before);
    if (!before.IsDefined()) continue;
    if (Has(root, m.now) && Scalar(Find(root, m.now)) == Scalar(before) &&
        !Scalar(before).empty()) {
      // The same value in both places (homodyne's templates repeat the mode): nothing to say.
    } else if (Has(root, m.now)) {
      notes.push_back(
          fmt::format("{} ({}) not read: {} is also given and wins", m.before, m.origin, m.now));
    } else {
      Put(root, m.now, YAML::Clone(before));
      notes.push_back(fmt::format("{} ({}) read as {}", m.before, m.origin, m.now));
    }
    Drop(root, m.before);
  }
}

void MoveSections(YAML::Node& root, std::vector<std::string>& notes) {
  for (const auto& m : kMovedSections) {
    const YAML::Node before = Find(root, m.before);
    if (!before.IsMap()) continue;
    std::vector<std::string> read, kept;
    for (const auto& kv : before) {
      const std::string key = kv.first.Scalar();
      const std::string now = std::string(m.now) + "." + key;
      if (Has(root, now)) {
        if (Scalar(Find(root, now)) != Scalar(kv.second) || Scalar(kv.second).empty()) {
          kept.push_back(key);
        }
      } else {
        Put(root, now, YAML::Clone(kv.second));
        read.push_back(key);
      }
    }
    if (!read.empty()) {
      notes.push_back(fmt::format("{}.{{{}}} ({}) read as {}.*", m.before, fmt::join(read, ", "),
                                  m.origin, m.now));
    }
    if (!kept.empty()) {
      notes.push_back(fmt::format("{}.{{{}}} ({}) not read: {} gives them and wins", m.before,
                                  fmt::join(kept, ", "), m.origin, m.now));
    }
    Drop(root, m.before);
  }
}

// xpcsjax's analysis_settings.static_mode / isotropic_mode booleans (its homodyne model reads
// them): static_mode true is a static mode, false laminar_flow.
void ReadAnalysisSettingsFlags(YAML::Node& root, std::vector<std::string>& notes) {
  const YAML::Node is_static = Find(root, "analysis_settings.static_mode");
  if (!is_static.IsDefined() || Has(root, "analysis_mode")) return;
  const std::string value = Scalar(is_static);
  const bool yes = value == "true" || value == "True" || value == "yes";
  const bool isotropic = Scalar(Find(root, "analysis_settings.isotropic_mode")) == "true";
  const std::string mode =
      yes ? (isotropic ? "static_isotropic" : "static_anisotropic") : "laminar_flow";
  root["analysis_mode"] = mode;
  notes.push_back(fmt::format(
      "analysis_settings.static_mode: {} (xpcsjax) read as analysis_mode: {}", value, mode));
  Drop(root, "analysis_settings.static_mode");
  if (Find(root, "analysis_settings.isotropic_mode").IsDefined()) {
    Drop(root, "analysis_settings.isotropic_mode");
  }
}

// xpcsjax's documentation counts frames from 0 in its temporal block; frames here (and in its
// templates) are 1-based, so 0 is the first frame.
void ReadTemporalStartFrame(YAML::Node& root, bool from_temporal, std::vector<std::string>& notes) {
  if (!from_temporal) return;
  YAML::Node analyzer = root["analyzer_parameters"];
  if (Scalar(Find(root, "analyzer_parameters.start_frame")) != "0") return;
  analyzer["start_frame"] = 1;
  // One line for the key: this one replaces the move's.
  const std::string line =
      "analyzer_parameters.temporal.start_frame: 0 (xpcsjax's documentation counts from 0) read "
      "as analyzer_parameters.start_frame: 1, the first frame";
  const auto moved = std::find_if(notes.begin(), notes.end(), [](const std::string& n) {
    return n.rfind("analyzer_parameters.temporal.start_frame ", 0) == 0;
  });
  if (moved != notes.end()) {
    *moved = line;
  } else {
    notes.push_back(line);
  }
}

// initial_parameters.values as a name -> value mapping (xpcsjax's quickstart): the names and
// values lists of today.
void ReadValuesMapping(YAML::Node& root, std::vector<std::string>& notes) {
  YAML::Node values = Find(root, "initial_parameters.values");
  if (!values.IsMap()) return;
  const YAML::Node names_given = Find(root, "initial_parameters.parameter_names");
  YAML::Node names(YAML::NodeType::Sequence);
  YAML::Node list(YAML::NodeType::Sequence);
  if (names_given.IsSequence()) {
    for (const auto& name : names_given) {
      const YAML::Node& view = values;
      const YAML::Node v = view[name.Scalar()];
      names.push_back(name.Scalar());
      list.push_back(v.IsDefined() ? YAML::Clone(v) : YAML::Node());
    }
  } else {
    for (const auto& kv : values) {
      names.push_back(kv.first.Scalar());
      list.push_back(YAML::Clone(kv.second));
    }
  }
  YAML::Node init = root["initial_parameters"];
  init["parameter_names"] = names;
  init["values"] = list;
  notes.push_back(
      "initial_parameters.values given as name: value (xpcsjax's quickstart) read as "
      "parameter_names and values");
}

// parameter_bounds: {name: [min, max]} (xpcsjax's documentation): entries of
// parameter_space.bounds for the names that list does not already bound.
void ReadParameterBounds(YAML::Node& root, std::vector<std::string>& notes) {
  const YAML::Node bounds = Find(root, "parameter_bounds");
  if (!bounds.IsMap()) return;
  std::vector<std::string> existing;
  const YAML::Node listed = Find(root, "parameter_space.bounds");
  if (listed.IsSequence()) {
    for (const auto& entry : listed) {
      if (entry.IsMap() && entry["name"].IsScalar()) existing.push_back(entry["name"].Scalar());
    }
  }
  YAML::Node out = listed.IsSequence() ? listed : YAML::Node(YAML::NodeType::Sequence);
  std::string read, skipped;
  for (const auto& kv : bounds) {
    const std::string name = kv.first.Scalar();
    if (!kv.second.IsSequence() || kv.second.size() != 2) continue;  // left for the key check
    if (std::find(existing.begin(), existing.end(), name) != existing.end()) {
      skipped += (skipped.empty() ? "" : ", ") + name;
      continue;
    }
    YAML::Node entry(YAML::NodeType::Map);
    entry["name"] = name;
    entry["min"] = YAML::Clone(kv.second[0]);
    entry["max"] = YAML::Clone(kv.second[1]);
    out.push_back(entry);
    read += (read.empty() ? "" : ", ") + name;
  }
  if (read.empty() && skipped.empty()) return;  // a malformed map: reported as unknown below
  Put(root, "parameter_space.bounds", out);
  root.remove("parameter_bounds");
  if (!read.empty()) {
    notes.push_back(fmt::format(
        "parameter_bounds (xpcsjax's documentation) read as parameter_space.bounds: {}", read));
  }
  if (!skipped.empty()) {
    notes.push_back(fmt::format(
        "parameter_bounds of {} not read: parameter_space.bounds gives them and wins", skipped));
  }
}

// A data file name without its folder (xpcsjax's documentation): the current folder.
void ReadFileNameAlone(YAML::Node& root, std::vector<std::string>& notes) {
  if (!Has(root, "experimental_data.data_file_name") ||
      Has(root, "experimental_data.data_folder_path") || Has(root, "experimental_data.file_path")) {
    return;
  }
  notes.push_back(
      "experimental_data.data_file_name without data_folder_path: the file is looked for in the "
      "current folder (./)");
}

// homodyne's earlier CMC config: optimization.cmc.backend as a mapping with its name and the
// checkpoint settings of that backend.
void ReadCmcBackendMapping(YAML::Node& root, std::vector<std::string>& notes) {
  const YAML::Node backend = Find(root, "optimization.cmc.backend");
  if (!backend.IsMap()) return;
  const std::string name = Scalar(backend["name"]);
  std::string rest;
  for (const auto& kv : backend) {
    if (kv.first.Scalar() != "name") rest += (rest.empty() ? "" : ", ") + kv.first.Scalar();
  }
  root["optimization"]["cmc"]["backend"] = name.empty() ? std::string("auto") : name;
  notes.push_back(fmt::format(
      "optimization.cmc.backend as a mapping (homodyne's earlier CMC config) read as backend: "
      "{}{}",
      name.empty() ? "auto" : name,
      rest.empty() ? std::string()
                   : fmt::format("; its {} are not used (checkpoints: "
                                 "optimization.streaming)",
                                 rest)));
}

// performance.memory_limit_gb: auto (homodyne's earlier CMC config) is the absent key: the
// limit comes from the node's memory.
void ReadAutoMemoryLimit(YAML::Node& root, std::vector<std::string>& notes) {
  if (Scalar(Find(root, "performance.memory_limit_gb")) != "auto") return;
  root["performance"].remove("memory_limit_gb");
  notes.push_back("performance.memory_limit_gb: auto read as no limit given (the node's memory)");
}

}  // namespace

void ConvertEarlierKeys(YAML::Node& root, std::vector<std::string>& notes) {
  if (!root.IsMap()) return;
  const bool temporal_start = Find(root, "analyzer_parameters.temporal.start_frame").IsDefined() &&
                              !Has(root, "analyzer_parameters.start_frame");
  ReadAnalysisSettingsFlags(root, notes);
  MoveKeys(root, notes);
  MoveSections(root, notes);
  ReadTemporalStartFrame(root, temporal_start, notes);
  ReadValuesMapping(root, notes);
  ReadParameterBounds(root, notes);
  ReadFileNameAlone(root, notes);
  ReadCmcBackendMapping(root, notes);
  ReadAutoMemoryLimit(root, notes);
}

std::string XpcsjaxConfigMarker(const YAML::Node& root) {
  if (!root.IsMap()) return {};
  for (const char* key : {"analysis_mode", "analysis_settings.analysis_mode"}) {
    const std::string mode = Scalar(Find(root, key));
    if (mode == "two_component" || mode == "heterodyne") return fmt::format("{}: {}", key, mode);
  }
  // The logger names of xpcsjax's package (dotted names: one key each).
  const YAML::Node modules = Find(root, "logging.modules");
  if (modules.IsMap()) {
    for (const auto& kv : modules) {
      if (kv.first.Scalar().rfind("xpcsjax", 0) == 0) {
        return "logging.modules." + kv.first.Scalar();
      }
    }
  }
  // Keys that only xpcsjax's templates and documentation write; homodyne's templates, of
  // every version, have none of them.
  for (const char* key : kXpcsjaxOnlyKeys) {
    if (Find(root, key).IsDefined()) return key;
  }
  return {};
}

std::vector<EarlierKey> EarlierKeyMoves() {
  std::vector<EarlierKey> out;
  for (const auto& m : kMovedKeys) out.push_back({m.before, m.now, m.origin});
  for (const auto& m : kMovedSections) {
    out.push_back({std::string(m.before) + ".*", std::string(m.now) + ".*", m.origin});
  }
  return out;
}

}  // namespace homodyne::config::detail
