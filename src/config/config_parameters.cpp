// initial_parameters and parameter_space → effective bounds and initial values (spec §1.8).
#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config_builder.h"
#include "schema_check.h"

#include "config/choices.h"
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

// The key table's rule has refused other names already; a Config built without it (tests,
// the API) meets the same message here.
PriorType ReadPriorType(const std::string& text, const std::string& key, const YAML::Node& at,
                        ProblemList& problems) {
  if (const auto type = FindChoice<PriorType>(text, true)) return *type;
  problems.Add(key, fmt::format("'{}' is not one of {}{}", text,
                                fmt::join(ChoiceNames<PriorType>(), ", "), LineSuffix(at)));
  return PriorType::kTruncatedNormal;
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
    if (auto type = ScalarField(entry, "type")) {
      b.prior_type = ReadPriorType(*type, key + ".type", entry, problems);
    }
    b.prior_mu = OptField(entry, "prior_mu");
    b.prior_sigma = OptField(entry, "prior_sigma");
    if (auto unit = ScalarField(entry, "unit")) b.unit = *unit;
    b.value = OptField(entry, "value");
    if (auto vary = ScalarField(entry, "vary")) b.vary = ParseBool(*vary);
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
      if (auto dist = ScalarField(kv.second, "dist_type")) {
        p.dist_type = ReadPriorType(*dist, key + ".dist_type", kv.second, problems);
      }
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

// The groups of xpcsjax's grouped format and their parameters (canonical names).
const std::vector<std::pair<std::string, std::vector<std::string>>>& ParameterGroups() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      {"reference", {"D0_ref", "alpha_ref", "D_offset_ref"}},
      {"sample", {"D0_sample", "alpha_sample", "D_offset_sample"}},
      {"velocity", {"v0", "v_beta", "v_offset"}},
      {"fraction", {"f0", "f1", "f2", "f3"}},
      {"angle", {"phi0_het"}},
      {"scaling", {"contrast", "offset"}},
  };
  return groups;
}

// Names a group accepts as written: the canonical names and the kernel aliases.
std::vector<std::string> WrittenNames(const std::vector<std::string>& names) {
  std::vector<std::string> out = names;
  for (const auto& n : names) {
    if (n == "v_beta") out.emplace_back("beta");
    if (n == "phi0_het") out.emplace_back("phi0");
  }
  return out;
}

std::string GroupOf(const std::string& canonical) {
  for (const auto& [group, names] : ParameterGroups()) {
    if (std::find(names.begin(), names.end(), canonical) != names.end()) return group;
  }
  return {};
}

// parameters.<group>.<name>: {value, min, max, vary} (two_component only).
void ReadGroupedParameters(const ValueReader& r, Config& c, ProblemList& problems) {
  const YAML::Node root = r.Find("parameters");
  if (!root.IsMap()) return;
  bool any_entry = false;  // empty groups (as the effective-config echo writes) say nothing
  for (const auto& kv : root) any_entry |= kv.second.IsMap() && kv.second.size() > 0;
  if (any_entry && c.analysis_mode != AnalysisMode::kTwoComponent) {
    problems.Add("parameters",
                 fmt::format("the grouped parameter format applies to analysis_mode two_component "
                             "only (this file: {}){}; use initial_parameters and "
                             "parameter_space.bounds",
                             ToString(c.analysis_mode), LineSuffix(root)));
    return;
  }
  std::set<std::string> seen;
  for (const auto& [group, names] : ParameterGroups()) {
    const YAML::Node entries = r.Find("parameters." + group);
    if (!entries.IsMap()) continue;
    for (const auto& kv : entries) {
      const std::string written = kv.first.Scalar();
      const std::string key = "parameters." + group + "." + written;
      const std::string name =
          group == "scaling" ? written : CanonicalParameterName(c.analysis_mode, written);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        const std::string home = GroupOf(name);
        std::string message;
        if (!home.empty()) {
          message = fmt::format("'{}' belongs to group '{}' (parameters.{}.{}), not '{}'{}",
                                written, home, home, written, group, LineSuffix(kv.first));
        } else {
          const std::vector<std::string> valid = WrittenNames(names);
          message = fmt::format("unknown parameter '{}' in group '{}'{}; valid names: {}", written,
                                group, LineSuffix(kv.first), fmt::join(valid, ", "));
          const std::string near = SuggestName(written, valid);
          if (!near.empty())
            message += fmt::format("; did you mean parameters.{}.{}?", group, near);
        }
        problems.Add(key, message);
        continue;
      }
      if (!seen.insert(name).second) {
        problems.Add(key, fmt::format("'{}' is given twice in parameters.{}{}", name, group,
                                      LineSuffix(kv.first)));
        continue;
      }
      if (!kv.second.IsMap()) continue;  // null: nothing to apply (types checked before)
      GroupedParameter g;
      g.key = key;
      g.name = name;
      g.value = OptField(kv.second, "value");
      g.min = OptField(kv.second, "min");
      g.max = OptField(kv.second, "max");
      if (auto vary = ScalarField(kv.second, "vary")) g.vary = ParseBool(*vary);
      if (g.min.has_value() != g.max.has_value()) {
        problems.Add(key,
                     fmt::format("min and max must be given together{}", LineSuffix(kv.second)));
        continue;
      }
      if (g.min && !(*g.min < *g.max)) {
        problems.Add(key, fmt::format("min ({}) must be < max ({}){}", *g.min, *g.max,
                                      LineSuffix(kv.second)));
        continue;
      }
      c.grouped_parameters.push_back(g);
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
  ReadGroupedParameters(r, c, problems);
  ResolveParameters(c);
}

}  // namespace homodyne::config::detail

namespace homodyne::config {

namespace {

const ParameterBound* FindBound(const Config& c, const std::string& name) {
  for (const auto& b : c.parameter_space.bounds) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

// The overlays that follow initial_parameters, in xpcsjax's order: parameter_space.bounds
// entries' value/vary, then the grouped parameters.<group>.<name> entries.
void ApplyOverlays(const Config& c, EffectiveParameter& p, std::string& start_key) {
  if (const ParameterBound* b = FindBound(c, p.name)) {
    if (b->value) {
      p.initial = *b->value;
      p.initial_from_config = true;
      start_key = "parameter_space.bounds (" + p.name + ").value";
    }
    if (b->vary) p.vary = *b->vary;
  }
  for (const auto& g : c.grouped_parameters) {
    if (g.name != p.name) continue;
    if (g.min && g.max) {
      p.min = *g.min;
      p.max = *g.max;
      p.bounds_from_config = true;
      if (!p.initial_from_config) p.initial = 0.5 * (p.min + p.max);
    }
    if (g.value) {
      p.initial = *g.value;
      p.initial_from_config = true;
      start_key = g.key + ".value";
    }
    if (g.vary) p.vary = *g.vary;
  }
}

void NoteOutsideBounds(Config& c, const EffectiveParameter& p) {
  if (p.initial_from_config && (p.initial < p.min || p.initial > p.max)) {
    c.notes.push_back(fmt::format("initial value of {} ({}) lies outside its bounds [{}, {}]",
                                  p.name, p.initial, p.min, p.max));
  }
}

// contrast or offset: bounds, and a scalar start that replaces the estimate from the data.
EffectiveParameter ResolveScaling(Config& c, const std::string& name,
                                  const std::optional<double>& scaling_start,
                                  const std::optional<std::vector<double>>& per_angle) {
  EffectiveParameter p = detail::EffectiveBounds(c, name);
  std::string start_key;
  ApplyOverlays(c, p, start_key);
  if (scaling_start) {
    p.initial = *scaling_start;
    p.initial_from_config = true;
    start_key = "scaling.initial_" + name;
  }
  // xpcsjax's fit never reads a vary flag of the scaling: per_angle_mode decides.
  const ParameterBound* b = FindBound(c, name);
  bool vary_given = b != nullptr && b->vary.has_value();
  for (const auto& g : c.grouped_parameters) vary_given |= g.name == name && g.vary.has_value();
  if (vary_given) {
    c.notes.push_back(fmt::format(
        "vary of {} has no effect (as in xpcsjax): per_angle_mode decides whether the per-angle "
        "scaling is fitted",
        name));
  }
  p.vary = true;
  if (p.initial_from_config && per_angle) {
    c.notes.push_back(
        fmt::format("{} = {} is the start of every angle's {} "
                    "(initial_parameters.per_angle_scaling.{} is not used)",
                    start_key, p.initial, name, name));
  }
  NoteOutsideBounds(c, p);
  return p;
}

// EffectiveParameter::prior's rule, on the parameter's resolved bounds.
ParameterPrior ResolvePrior(const Config& c, const EffectiveParameter& p) {
  const double lo = p.min, hi = p.max;
  double centre = 0.5 * (lo + hi);
  if (c.analysis_mode == AnalysisMode::kTwoComponent) {
    if (const auto d = DefaultParameterBounds(p.name);
        d && d->nlsq_start >= lo && d->nlsq_start <= hi) {
      centre = d->nlsq_start;
    }
  }
  ParameterPrior prior{PriorType::kTruncatedNormal, centre, 0.25 * (hi - lo)};
  for (const auto& b : c.parameter_space.bounds) {
    if (b.name != p.name) continue;
    prior.type = b.prior_type;
    if (b.prior_mu) prior.mu = *b.prior_mu;
    if (b.prior_sigma) prior.sigma = *b.prior_sigma;
  }
  if (const auto it = c.parameter_space.priors.find(p.name); it != c.parameter_space.priors.end()) {
    prior.type = it->second.dist_type;
    if (it->second.mu) prior.mu = *it->second.mu;
    if (it->second.sigma) prior.sigma = *it->second.sigma;
  }
  return prior;
}

}  // namespace

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
    std::string start_key;
    ApplyOverlays(c, p, start_key);
    NoteOutsideBounds(c, p);
    p.prior = ResolvePrior(c, p);
    c.parameters.push_back(p);
  }
  c.contrast = ResolveScaling(c, "contrast", c.scaling.initial_contrast, ip.contrast);
  c.contrast.prior = ResolvePrior(c, c.contrast);
  c.offset = ResolveScaling(c, "offset", c.scaling.initial_offset, ip.offset);
  c.offset.prior = ResolvePrior(c, c.offset);
}

}  // namespace homodyne::config
