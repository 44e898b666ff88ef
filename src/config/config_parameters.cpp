// initial_parameters and parameter_space → effective bounds and initial values (spec §1.8).
#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "config_builder.h"

#include "config/config_reader.h"

namespace homodyne::config::detail {
namespace {

std::string ValidNames(AnalysisMode mode) {
  return fmt::format("{}", fmt::join(PhysicalParameterNames(mode), ", "));
}

bool InMode(AnalysisMode mode, const std::string& name) {
  const auto& names = PhysicalParameterNames(mode);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Canonical physical names of a list key; unknown, foreign-mode and duplicate names are
// problems.
std::vector<std::string> ReadNameList(const ValueReader& r, const std::string& path,
                                      AnalysisMode mode, ProblemList& problems) {
  std::vector<std::string> names;
  const YAML::Node node = r.Find(path);
  std::size_t index = 0;
  for (const auto& item : node) {
    const std::string key = fmt::format("{}[{}]", path, index++);
    const std::string name = CanonicalParameterName(mode, item.Scalar());
    if (!InMode(mode, name)) {
      problems.Add(key,
                   fmt::format("unknown parameter name '{}'{} for analysis_mode {}; valid "
                               "names: {}",
                               item.Scalar(), LineSuffix(item), ToString(mode), ValidNames(mode)));
    } else if (std::find(names.begin(), names.end(), name) != names.end()) {
      problems.Add(key, fmt::format("parameter '{}' is listed twice{}", name, LineSuffix(item)));
    }
    names.push_back(name);
  }
  return names;
}

void ReadInitialParameters(const ValueReader& r, Config& c, ProblemList& problems) {
  InitialParameters& ip = c.initial_parameters;
  if (r.Has("initial_parameters.parameter_names")) {
    ip.parameter_names =
        ReadNameList(r, "initial_parameters.parameter_names", c.analysis_mode, problems);
  } else {
    ip.parameter_names = PhysicalParameterNames(c.analysis_mode);
  }
  if (ip.values && ip.values->size() != ip.parameter_names.size()) {
    problems.Add("initial_parameters.values",
                 fmt::format("has {} entries but parameter_names has {} ({}){}", ip.values->size(),
                             ip.parameter_names.size(), fmt::join(ip.parameter_names, ", "),
                             r.Line("initial_parameters.values")));
  }
  if (r.Has("initial_parameters.active_parameters")) {
    ip.active_parameters =
        ReadNameList(r, "initial_parameters.active_parameters", c.analysis_mode, problems);
  }
  const YAML::Node fixed = r.Find("initial_parameters.fixed_parameters");
  if (fixed.IsMap()) {
    for (const auto& kv : fixed) {
      const std::string name = CanonicalParameterName(c.analysis_mode, kv.first.Scalar());
      const std::string key = "initial_parameters.fixed_parameters." + kv.first.Scalar();
      if (!InMode(c.analysis_mode, name)) {
        problems.Add(key, fmt::format("unknown parameter name '{}'{} for analysis_mode {}; valid "
                                      "names: {}",
                                      kv.first.Scalar(), LineSuffix(kv.first),
                                      ToString(c.analysis_mode), ValidNames(c.analysis_mode)));
        continue;
      }
      if (kv.second.IsScalar()) {
        if (auto v = ParseNumber(kv.second.Scalar())) ip.fixed_parameters[name] = *v;
      }
    }
  }
}

std::string KnownBaseName(AnalysisMode mode, const std::string& raw, const std::string& key,
                          const YAML::Node& at, ProblemList& problems) {
  const std::string base = CanonicalParameterName(mode, BaseParameterName(raw));
  if (!IsKnownParameter(base)) {
    problems.Add(key, fmt::format("unknown parameter name '{}'{}; valid names: {}", raw,
                                  LineSuffix(at), fmt::join(AllParameterNames(), ", ")));
    return {};
  }
  return base;
}

std::optional<double> OptField(const YAML::Node& map, const char* name) {
  const auto text = ScalarField(map, name);
  if (!text) return std::nullopt;
  return ParseNumber(*text);
}

void ReadParameterSpace(const ValueReader& r, Config& c, ProblemList& problems) {
  const YAML::Node bounds = r.Find("parameter_space.bounds");
  std::set<std::string> seen;
  std::size_t index = 0;
  for (const auto& entry : bounds) {
    const std::string key = fmt::format("parameter_space.bounds[{}]", index++);
    const auto raw_name = ScalarField(entry, "name");
    if (!raw_name) continue;  // reported by the schema check
    const std::string name =
        KnownBaseName(c.analysis_mode, *raw_name, key + ".name", entry["name"], problems);
    const auto lo = OptField(entry, "min");
    const auto hi = OptField(entry, "max");
    if (name.empty() || !lo || !hi) continue;
    if (!seen.insert(name).second) {
      // Per-angle entries (contrast_0, contrast_1, ...) are accepted when they agree: one
      // bound applies to every angle.
      const auto& bounds_so_far = c.parameter_space.bounds;
      const auto first = std::find_if(bounds_so_far.begin(), bounds_so_far.end(),
                                      [&](const ParameterBound& b) { return b.name == name; });
      if (first == bounds_so_far.end() || first->min != *lo || first->max != *hi) {
        problems.Add(key, fmt::format("second bounds entry for '{}'{} with different limits; one "
                                      "entry applies to every angle",
                                      name, LineSuffix(entry)));
      }
      continue;
    }
    if (!(*lo < *hi)) {
      problems.Add(key, fmt::format("min ({}) must be < max ({}) for '{}'{}", *lo, *hi, name,
                                    LineSuffix(entry)));
    }
    ParameterBound b;
    b.name = name;
    b.min = *lo;
    b.max = *hi;
    if (auto type = ScalarField(entry, "type")) b.prior_type = *type;
    b.prior_mu = OptField(entry, "prior_mu");
    b.prior_sigma = OptField(entry, "prior_sigma");
    if (auto unit = ScalarField(entry, "unit")) b.unit = *unit;
    c.parameter_space.bounds.push_back(b);
  }
  const YAML::Node priors = r.Find("parameter_space.priors");
  if (priors.IsMap()) {
    for (const auto& kv : priors) {
      const std::string key = "parameter_space.priors." + kv.first.Scalar();
      const std::string name =
          KnownBaseName(c.analysis_mode, kv.first.Scalar(), key, kv.first, problems);
      if (name.empty() || !kv.second.IsMap()) continue;
      PriorSpec p;
      if (auto dist = ScalarField(kv.second, "dist_type")) p.dist_type = *dist;
      p.mu = OptField(kv.second, "mu");
      p.sigma = OptField(kv.second, "sigma");
      p.min_val = OptField(kv.second, "min_val");
      p.max_val = OptField(kv.second, "max_val");
      if (p.min_val && p.max_val && !(*p.min_val < *p.max_val)) {
        problems.Add(key, fmt::format("min_val ({}) must be < max_val ({}){}", *p.min_val,
                                      *p.max_val, LineSuffix(kv.second)));
      }
      c.parameter_space.priors[name] = p;
    }
  }
}

EffectiveParameter EffectiveBounds(const Config& c, const std::string& name) {
  EffectiveParameter p;
  p.name = name;
  const auto& bounds = c.parameter_space.bounds;
  auto it = std::find_if(bounds.begin(), bounds.end(),
                         [&](const ParameterBound& b) { return b.name == name; });
  if (it != bounds.end()) {
    p.min = it->min;
    p.max = it->max;
    p.bounds_from_config = true;
  } else {
    const auto def = DefaultParameterBounds(name);
    p.min = def->min;
    p.max = def->max;
  }
  p.initial = 0.5 * (p.min + p.max);
  return p;
}

}  // namespace

void BuildParameters(const ValueReader& r, Config& c, ProblemList& problems) {
  ReadInitialParameters(r, c, problems);
  ReadParameterSpace(r, c, problems);
  ResolveParameters(c);
}

}  // namespace homodyne::config::detail

namespace homodyne::config {

void ResolveParameters(Config& c) {
  const InitialParameters& ip = c.initial_parameters;
  c.parameters.clear();
  for (const auto& name : PhysicalParameterNames(c.analysis_mode)) {
    EffectiveParameter p = detail::EffectiveBounds(c, name);
    // values: null/absent → bound midpoints (homodyne's documented behaviour).
    auto pos = std::find(ip.parameter_names.begin(), ip.parameter_names.end(), name);
    auto fixed = ip.fixed_parameters.find(name);
    if (ip.values && pos != ip.parameter_names.end() &&
        ip.values->size() == ip.parameter_names.size()) {
      p.initial = (*ip.values)[static_cast<std::size_t>(pos - ip.parameter_names.begin())];
      p.initial_from_config = true;
    }
    // A fixed value wins over values[]: the parameter is held there.
    if (fixed != ip.fixed_parameters.end()) {
      p.initial = fixed->second;
      p.initial_from_config = true;
      p.vary = false;
    }
    if (ip.active_parameters &&
        std::find(ip.active_parameters->begin(), ip.active_parameters->end(), name) ==
            ip.active_parameters->end()) {
      p.vary = false;
    }
    if (p.initial_from_config && (p.initial < p.min || p.initial > p.max)) {
      c.notes.push_back(fmt::format("initial value of {} ({}) lies outside its bounds [{}, {}]",
                                    name, p.initial, p.min, p.max));
    }
    c.parameters.push_back(p);
  }
  c.contrast = detail::EffectiveBounds(c, "contrast");
  c.offset = detail::EffectiveBounds(c, "offset");
}

}  // namespace homodyne::config
