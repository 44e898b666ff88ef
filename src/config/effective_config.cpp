// The effective-config echo and path lookups on a Config.
#include <string>

#include <fmt/format.h>

#include "config/choices.h"
#include "config/config_reader.h"
#include "config/key_table.h"
#include "core/errors.h"
#include "raw_config.h"

namespace homodyne::config {
namespace {

std::string Num(double v) { return fmt::format("{}", v); }

// Sets `value` at a dotted path of `root`, creating mappings on the way.
void SetPath(YAML::Node root, const std::string& path, const YAML::Node& value) {
  YAML::Node current = root;
  std::size_t pos = 0;
  while (true) {
    const std::size_t dot = path.find('.', pos);
    const std::string name = path.substr(pos, dot == std::string::npos ? dot : dot - pos);
    if (dot == std::string::npos) {
      current[name] = value;
      return;
    }
    YAML::Node next = current[name];
    if (!next.IsMap()) {
      current[name] = YAML::Node(YAML::NodeType::Map);
      next = current[name];
    }
    current.reset(next);
    pos = dot + 1;
  }
}

YAML::Node ListOf(const std::vector<std::string>& items) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& s : items) list.push_back(s);
  return list;
}

// The prior echoed is the one resolved with the parameter (ParameterPrior: bounds entry,
// parameter_space.priors and the mode's default centre), the prior CMC samples under.
YAML::Node BoundsEntry(const EffectiveParameter& p) {
  YAML::Node entry(YAML::NodeType::Map);
  entry["name"] = p.name;
  entry["min"] = Num(p.min);
  entry["max"] = Num(p.max);
  entry["type"] = std::string(ChoiceName(p.prior.type));
  entry["prior_mu"] = Num(p.prior.mu);
  entry["prior_sigma"] = Num(p.prior.sigma);
  // The physical starts are echoed in initial_parameters.values; a configured scalar start
  // of contrast/offset and a held parameter are said here.
  if (p.initial_from_config && (p.name == "contrast" || p.name == "offset")) {
    entry["value"] = Num(p.initial);
  }
  if (!p.vary) entry["vary"] = false;
  return entry;
}

YAML::Node EffectiveBoundsList(const Config& c) {
  YAML::Node list(YAML::NodeType::Sequence);
  std::vector<EffectiveParameter> all = c.parameters;
  all.push_back(c.contrast);
  all.push_back(c.offset);
  for (const auto& p : all) list.push_back(BoundsEntry(p));
  return list;
}

const RawConfig& RawOf(const Config& config) {
  if (!config.raw) ThrowInternal("Config has no YAML tree (not produced by the reader)");
  return *config.raw;
}

}  // namespace

std::string EffectiveConfigYaml(const Config& c) {
  const YAML::Node raw = RawOf(c).root;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& spec : ConfigKeyTable()) {
    if (spec.path.find_first_of("*[") != std::string::npos) continue;  // echoed via parents
    const YAML::Node given = detail::FindNode(raw, spec.path);
    const bool has = given.IsDefined() && !given.IsNull();
    if (spec.type == KeyType::kMapping) {
      const bool wildcard = FindKeySpec(spec.path + ".*") != nullptr;
      if (!detail::FindNode(out, spec.path).IsDefined()) {
        SetPath(out, spec.path, YAML::Node(YAML::NodeType::Map));
      }
      if ((wildcard || spec.open()) && has) {
        // Child names may contain dots (logging.modules: {homodyne.core: DEBUG}), so they
        // are set on the mapping itself rather than through a dotted path.
        YAML::Node mapping = detail::FindNode(out, spec.path);
        for (const auto& kv : given) {
          const std::string child = spec.path + "." + kv.first.Scalar();
          if (wildcard || FindKeySpec(child) == nullptr) {
            mapping[kv.first.Scalar()] = YAML::Clone(kv.second);
          }
        }
      }
      continue;
    }
    YAML::Node value;
    if (has) {
      value = YAML::Clone(given);
    } else if (!spec.default_yaml.empty()) {
      value = YAML::Load(spec.default_yaml);
    } else {
      value = YAML::Node(YAML::NodeType::Null);
    }
    SetPath(out, spec.path, value);
  }
  // Resolved values.
  SetPath(out, "analysis_mode", YAML::Node(c.analysis_mode_name));
  SetPath(out, "analyzer_parameters.dt", YAML::Node(Num(c.analyzer.dt)));
  SetPath(out, "analyzer_parameters.geometry.stator_rotor_gap",
          YAML::Node(Num(c.analyzer.stator_rotor_gap)));
  std::vector<std::string> names;
  YAML::Node values(YAML::NodeType::Sequence);
  for (const auto& p : c.parameters) {
    names.push_back(p.name);
    values.push_back(Num(p.initial));
  }
  SetPath(out, "initial_parameters.parameter_names", ListOf(names));
  SetPath(out, "initial_parameters.values", values);
  SetPath(out, "parameter_space.bounds", EffectiveBoundsList(c));
  const PerShardMcmc& ps = c.optimization.cmc.per_shard_mcmc;
  SetPath(out, "optimization.cmc.per_shard_mcmc.num_warmup", YAML::Node(Num(ps.num_warmup)));
  SetPath(out, "optimization.cmc.per_shard_mcmc.num_samples", YAML::Node(Num(ps.num_samples)));
  SetPath(out, "optimization.cmc.per_shard_mcmc.num_chains", YAML::Node(Num(ps.num_chains)));

  YAML::Emitter emitter;
  emitter << out;
  return std::string(emitter.c_str()) + "\n";
}

bool ConfigHasValue(const Config& config, std::string_view path) {
  return detail::ValueReader(RawOf(config).root).Has(path);
}
double ConfigNumber(const Config& config, std::string_view path) {
  return detail::ValueReader(RawOf(config).root).Number(path);
}
long long ConfigInteger(const Config& config, std::string_view path) {
  return detail::ValueReader(RawOf(config).root).Integer(path);
}
bool ConfigBool(const Config& config, std::string_view path) {
  return detail::ValueReader(RawOf(config).root).Bool(path);
}
std::string ConfigString(const Config& config, std::string_view path) {
  return detail::ValueReader(RawOf(config).root).String(path);
}

}  // namespace homodyne::config
