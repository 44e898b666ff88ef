#include "app/batch_spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/fnv1a.h"

namespace homodyne::batch {
namespace {

namespace fs = std::filesystem;

std::string ResolvePath(const fs::path& base_dir, const std::string& p) {
  if (p.empty()) return p;
  const fs::path path(p);
  return (path.is_absolute() ? path : base_dir / path).lexically_normal().string();
}

void CheckKeys(const YAML::Node& map, const std::set<std::string>& allowed,
               const std::string& source, const std::string& where) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (allowed.count(key) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      ThrowBadInput(fmt::format("unknown key (expected one of: {})", list), source,
                    where.empty() ? key : where + "." + key);
    }
  }
}

std::string ScalarString(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (!n.IsScalar()) ThrowBadInput("expected a string", source, key);
  return n.as<std::string>();
}

std::string OverridesYaml(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (!n || n.IsNull()) return {};
  if (!n.IsMap()) ThrowBadInput("expected a mapping of config keys", source, key);
  YAML::Emitter e;
  e << n;
  return e.c_str();
}

// Stricter than config::ParseFitMethod: a batch file does not take homodyne's alias mcmc.
config::FitMethod CheckMethod(const std::string& m, const std::string& source,
                              const std::string& key) {
  if (m != "nlsq" && m != "cmc" && m != "both") {
    ThrowBadInput(fmt::format("expected nlsq, cmc or both, found '{}'", m), source, key);
  }
  return config::ParseFitMethod(m, key, source);
}

// Maps merge key by key (recursively); anything else in `over` replaces `base`.
YAML::Node Merge(const YAML::Node& base, const YAML::Node& over) {
  if (!over || over.IsNull()) return base ? YAML::Clone(base) : YAML::Node();
  if (!base || !base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    out[key] = Merge(base[key], kv.second);
  }
  return out;
}

}  // namespace

namespace {

YAML::Node LoadBatchRoot(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    ThrowBadInput(fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1,
                              e.mark.column + 1, e.msg),
                  source);
  }
  if (!root.IsMap()) ThrowBadInput("expected a mapping with a 'tasks' list", source);
  CheckKeys(root, {"output_root", "group_size", "group_bytes_per_rank", "defaults", "tasks"},
            source, "");
  return root;
}

// output_root, group_size, group_bytes_per_rank.
void ReadBatchSettings(const YAML::Node& root, const std::string& source, const fs::path& base_dir,
                       BatchSpec& spec) {
  try {
    spec.output_root = ResolvePath(
        base_dir, root["output_root"] ? ScalarString(root["output_root"], source, "output_root")
                                      : std::string("batch_results"));
    if (root["group_size"]) {
      spec.group_size = root["group_size"].as<int>();
      if (spec.group_size < 0) ThrowBadInput("expected an integer ≥ 0", source, "group_size");
    }
    if (root["group_bytes_per_rank"]) {
      spec.group_bytes_per_rank = root["group_bytes_per_rank"].as<double>();
      if (!(spec.group_bytes_per_rank > 0)) {
        ThrowBadInput("expected a number > 0", source, "group_bytes_per_rank");
      }
    }
  } catch (const YAML::BadConversion&) {
    ThrowBadInput("expected a number", source, "group_size / group_bytes_per_rank");
  }
}

// The defaults: section, what a task without its own config, method or overrides takes.
struct TaskDefaults {
  std::string config;
  config::FitMethod method = config::FitMethod::kNlsq;
  YAML::Node overrides;
};

TaskDefaults ReadTaskDefaults(const YAML::Node& root, const std::string& source) {
  TaskDefaults defaults;
  const YAML::Node d = root["defaults"];
  if (!d) return defaults;
  if (!d.IsMap()) ThrowBadInput("expected a mapping", source, "defaults");
  CheckKeys(d, {"config", "method", "overrides"}, source, "defaults");
  if (d["config"]) defaults.config = ScalarString(d["config"], source, "defaults.config");
  if (d["method"]) {
    defaults.method = CheckMethod(ScalarString(d["method"], source, "defaults.method"), source,
                                  "defaults.method");
  }
  OverridesYaml(d["overrides"], source, "defaults.overrides");
  if (d["overrides"]) defaults.overrides = YAML::Clone(d["overrides"]);
  return defaults;
}

// A task's name: letters, digits, . _ -, used once (`names` holds the earlier tasks').
std::string ReadTaskName(const YAML::Node& t, const std::string& source, const std::string& where,
                         std::set<std::string>& names) {
  if (!t["name"]) ThrowBadInput("every task needs a name", source, where + ".name");
  std::string name = ScalarString(t["name"], source, where + ".name");
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    ThrowBadInput(fmt::format("'{}' is not a valid task name (letters, digits, . _ -)", name),
                  source, where + ".name");
  }
  if (!names.insert(name).second) {
    ThrowBadInput(fmt::format("task name '{}' is used twice", name), source, where + ".name");
  }
  return name;
}

// q and group_size, each checked.
void ReadTaskNumbers(const YAML::Node& t, const std::string& source, const std::string& where,
                     TaskSpec& task) {
  if (t["q"]) {
    double q = 0.0;
    try {
      q = t["q"].as<double>();
    } catch (const YAML::BadConversion&) {
      ThrowBadInput("expected a number (wavevector q in 1/Å)", source, where + ".q");
    }
    if (!(q > 0.0) || !std::isfinite(q)) ThrowBadInput("expected q > 0", source, where + ".q");
    task.q = q;
  }
  if (t["group_size"]) {
    try {
      task.group_size = t["group_size"].as<int>();
    } catch (const YAML::BadConversion&) {
      task.group_size = -1;
    }
    if (task.group_size < 1) {
      ThrowBadInput("expected an integer ≥ 1", source, where + ".group_size");
    }
  }
}

// One entry of tasks:, in the order its keys are checked (name first).
TaskSpec ReadTask(const YAML::Node& t, std::size_t i, const TaskDefaults& defaults,
                  const BatchSpec& spec, const fs::path& base_dir, std::set<std::string>& names,
                  std::set<std::string>& outputs) {
  const std::string& source = spec.source;
  const std::string where = fmt::format("tasks[{}]", i);
  if (!t.IsMap()) ThrowBadInput("expected a mapping", source, where);
  CheckKeys(t,
            {"name", "config", "data_file", "q", "method", "overrides", "output_dir", "group_size"},
            source, where);
  TaskSpec task;
  task.index = static_cast<int>(i);
  task.name = ReadTaskName(t, source, where, names);
  const std::string config =
      t["config"] ? ScalarString(t["config"], source, where + ".config") : defaults.config;
  if (config.empty()) {
    ThrowBadInput("no config: give the task or defaults a 'config'", source, where + ".config");
  }
  task.config = ResolvePath(base_dir, config);
  if (t["data_file"]) {
    task.data_file =
        ResolvePath(base_dir, ScalarString(t["data_file"], source, where + ".data_file"));
  }
  ReadTaskNumbers(t, source, where, task);
  task.method = t["method"] ? CheckMethod(ScalarString(t["method"], source, where + ".method"),
                                          source, where + ".method")
                            : defaults.method;
  OverridesYaml(t["overrides"], source, where + ".overrides");
  task.overrides_yaml =
      OverridesYaml(Merge(defaults.overrides, t["overrides"]), source, where + ".overrides");
  task.output_dir =
      t["output_dir"]
          ? ResolvePath(base_dir, ScalarString(t["output_dir"], source, where + ".output_dir"))
          : (fs::path(spec.output_root) / task.name).string();
  if (!outputs.insert(task.output_dir).second) {
    ThrowBadInput(fmt::format("output directory {} is used by two tasks", task.output_dir), source,
                  where + ".output_dir");
  }
  return task;
}

}  // namespace

BatchSpec ParseBatchYaml(const std::string& yaml_text, const std::string& source,
                         const fs::path& base_dir) {
  const YAML::Node root = LoadBatchRoot(yaml_text, source);
  BatchSpec spec;
  spec.source = source;
  ReadBatchSettings(root, source, base_dir, spec);
  const TaskDefaults defaults = ReadTaskDefaults(root, source);
  const YAML::Node tasks = root["tasks"];
  if (!tasks || !tasks.IsSequence() || tasks.size() == 0) {
    ThrowBadInput("expected a non-empty list of tasks", source, "tasks");
  }
  std::set<std::string> names;
  std::set<std::string> outputs;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    spec.tasks.push_back(ReadTask(tasks[i], i, defaults, spec, base_dir, names, outputs));
  }
  return spec;
}

BatchSpec ReadBatchFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) ThrowBadInput("cannot read the batch file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseBatchYaml(ss.str(), path, fs::absolute(path).parent_path());
}

PreparedTask PrepareTask(const TaskSpec& spec) {
  PreparedTask p;
  p.spec = spec;
  YAML::Node merged;
  try {
    if (!fs::exists(spec.config)) {
      ThrowBadInput("the task's config file does not exist", spec.config, "config");
    }
    YAML::Node base;
    try {
      base = YAML::LoadFile(spec.config);
    } catch (const YAML::ParserException& e) {
      ThrowBadInput(fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1,
                                e.mark.column + 1, e.msg),
                    spec.config);
    } catch (const YAML::BadFile&) {
      ThrowBadInput("cannot read the task's config file", spec.config, "config");
    }
    if (!base.IsMap()) ThrowBadInput("expected a mapping of config keys", spec.config);
    merged =
        Merge(base, spec.overrides_yaml.empty() ? YAML::Node() : YAML::Load(spec.overrides_yaml));
    if (spec.q) merged["analyzer_parameters"]["scattering"]["wavevector_q"] = *spec.q;
    YAML::Emitter e;
    e << merged;
    p.config_text = std::string(e.c_str()) + "\n";
  } catch (const Error& e) {
    p.error = e.what();
    p.exit_code = static_cast<int>(ExitCodeOf(e));
  }
  // The data size decides the group size (auto); unknown sizes count as 0.
  std::string data = spec.data_file;
  if (data.empty() && merged && merged["experimental_data"]) {
    const YAML::Node ed = merged["experimental_data"];
    if (ed["data_folder_path"] && ed["data_file_name"] && ed["data_folder_path"].IsScalar() &&
        ed["data_file_name"].IsScalar()) {
      data = (fs::path(ed["data_folder_path"].as<std::string>()) /
              ed["data_file_name"].as<std::string>())
                 .string();
    }
  }
  std::error_code ec;
  if (!data.empty()) {
    const auto size = fs::file_size(data, ec);
    if (!ec) p.data_bytes = size;
  }
  std::uint64_t h = Fnv1a(p.config_text, kFnv1aShortBasis);
  h = Fnv1a("\x1f" + std::string(config::ToString(spec.method)) + "\x1f" + spec.data_file + "\x1f" +
                spec.output_dir,
            h);
  p.fingerprint = fmt::format("{:016x}", h);
  return p;
}

std::string PreparedTasksToJson(const std::vector<PreparedTask>& tasks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : tasks) {
    const TaskSpec& s = p.spec;
    a.push_back({{"index", s.index},
                 {"name", s.name},
                 {"config", s.config},
                 {"data_file", s.data_file},
                 {"q", s.q ? nlohmann::json(*s.q) : nlohmann::json()},
                 {"method", config::ToString(s.method)},
                 {"overrides", s.overrides_yaml},
                 {"output_dir", s.output_dir},
                 {"group_size", s.group_size},
                 {"config_text", p.config_text},
                 {"error", p.error},
                 {"exit_code", p.exit_code},
                 {"data_bytes", p.data_bytes},
                 {"fingerprint", p.fingerprint}});
  }
  return a.dump();
}

std::vector<PreparedTask> PreparedTasksFromJson(const std::string& json_text) {
  std::vector<PreparedTask> out;
  for (const auto& j : nlohmann::json::parse(json_text)) {
    PreparedTask p;
    p.spec.index = j.at("index").get<int>();
    p.spec.name = j.at("name").get<std::string>();
    p.spec.config = j.at("config").get<std::string>();
    p.spec.data_file = j.at("data_file").get<std::string>();
    if (!j.at("q").is_null()) p.spec.q = j.at("q").get<double>();
    p.spec.method = config::ParseFitMethod(j.at("method").get<std::string>(), "method");
    p.spec.overrides_yaml = j.at("overrides").get<std::string>();
    p.spec.output_dir = j.at("output_dir").get<std::string>();
    p.spec.group_size = j.at("group_size").get<int>();
    p.config_text = j.at("config_text").get<std::string>();
    p.error = j.at("error").get<std::string>();
    p.exit_code = j.at("exit_code").get<int>();
    p.data_bytes = j.at("data_bytes").get<std::uint64_t>();
    p.fingerprint = j.at("fingerprint").get<std::string>();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace homodyne::batch
