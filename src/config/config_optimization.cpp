// optimization.* → typed options; optimization.mcmc overrides per_shard_mcmc (spec §3).
#include <string>

#include <fmt/format.h>

#include "config/key_table.h"
#include "config_builder.h"

namespace homodyne::config::detail {
namespace {

// x_scale_map: a map keyed by parameter names (aliases canonicalised, unknown names refused).
void ReadXScaleMap(const ValueReader& r, NlsqOptions& n, ProblemList& problems) {
  const std::string p = "optimization.nlsq.";
  const YAML::Node scales = r.Find(p + "x_scale_map");
  if (scales.IsMap()) {
    for (const auto& kv : scales) {
      const std::string name = BaseParameterName(kv.first.Scalar());
      if (!IsKnownParameter(name)) {
        problems.Add(
            p + "x_scale_map." + kv.first.Scalar(),
            fmt::format("unknown parameter name '{}'{}", kv.first.Scalar(), LineSuffix(kv.first)));
        continue;
      }
      if (auto v = ParseNumber(kv.second.Scalar())) n.x_scale_map[name] = *v;
    }
  }
}

// optimization.mcmc.{num_warmup,num_samples,num_chains} overwrite per_shard_mcmc when set.
// (homodyne's CLI additionally substitutes 500/1000/4 when optimization.mcmc lacks them,
// which makes per_shard_mcmc unreachable; we keep per_shard_mcmc in that case.)
void ApplyMcmcOverrides(const ValueReader& r, Config& config) {
  PerShardMcmc& ps = config.optimization.cmc.per_shard_mcmc;
  const struct {
    const char* name;
    int* target;
  } overrides[] = {{"num_warmup", &ps.num_warmup},
                   {"num_samples", &ps.num_samples},
                   {"num_chains", &ps.num_chains}};
  for (const auto& o : overrides) {
    const std::string key = std::string("optimization.mcmc.") + o.name;
    if (!r.Has(key)) continue;
    const int value = r.Int(key);
    if (value != *o.target) {
      config.notes.push_back(
          fmt::format("{} = {} overrides optimization.cmc.per_shard_mcmc.{} ({}), as homodyne's "
                      "command line does",
                      key, value, o.name, *o.target));
    }
    *o.target = value;
  }
}

// xpcsjax's flat keys (enable_cmaes, per_angle_mode, ...) replace their nested
// equivalents, as in xpcsjax's NLSQConfig.from_dict.
void ApplyFlatNlsqKeys(const ValueReader& r, Config& config) {
  for (const auto& [flat, nested] : FlatNlsqKeys()) {
    if (!r.Has(flat)) continue;
    if (nested.rfind("optimization.nlsq.anti_degeneracy.", 0) == 0) {
      config.optimization.nlsq.anti_degeneracy.section_present = true;
    }
    const KeySpec* spec = FindKeySpec(nested);
    if (spec == nullptr || !spec->field) continue;  // an accepted key without effect
    const std::string before = spec->field.text(config);
    KeySpec alias = *spec;
    alias.path = flat;
    spec->field.read(r, alias, config);
    if (r.Has(nested) && spec->field.text(config) != before) {
      config.earlier_keys.push_back(fmt::format("{} = {} (xpcsjax's flat key) overrides {} ({})",
                                                flat, spec->field.text(config), nested, before));
    }
  }
}

// Values that would change the answer in xpcsjax but have no implementation here.
void CheckXpcsjaxOnlyValues(const ValueReader& r, Config& config, ProblemList& problems) {
  const std::string p = "optimization.nlsq.";
  const YAML::Node x_scale = r.Find(p + "x_scale");
  if (x_scale.IsDefined() && !x_scale.IsNull() &&
      !(x_scale.IsScalar() && x_scale.Scalar() == "jac")) {
    problems.Add(p + "x_scale",
                 fmt::format("only \"jac\" is supported (the local solver scales its steps by "
                             "the Jacobian's column norms); per-parameter scales are not "
                             "implemented{}",
                             LineSuffix(x_scale)));
  }
  for (const std::string& key : {p + "anti_degeneracy.execute_layers", p + "execute_layers"}) {
    if (r.Has(key) && r.Bool(key)) {
      problems.Add(key, fmt::format("true (xpcsjax's L2/L3 escape on its >= 1M-point stratified "
                                    "path) is not implemented; set it to false{}",
                                    r.Line(key)));
    }
  }
  if (r.String(p + "anti_degeneracy.per_angle_mode") == "independent") {
    config.earlier_keys.push_back(
        "per_angle_mode independent (xpcsjax's deprecated name) read as individual");
  }
  const YAML::Node angle_filtering = r.Find("optimization.angle_filtering");
  if (angle_filtering.IsMap()) {
    const auto enabled = ScalarField(angle_filtering, "enabled");
    if (enabled && ParseBool(*enabled).value_or(false)) {
      config.notes.push_back(
          "optimization.angle_filtering is not used (xpcsjax never reads it either): "
          "phi_filtering selects the angles");
    }
  }
}

}  // namespace

void BuildOptimization(const ValueReader& r, Config& config, ProblemList& problems) {
  NlsqOptions& nlsq = config.optimization.nlsq;
  ReadXScaleMap(r, nlsq, problems);
  // homodyne applies the anti-degeneracy system only when the section is written.
  nlsq.anti_degeneracy.section_present = r.Find("optimization.nlsq.anti_degeneracy").IsDefined();
  nlsq.anti_degeneracy.hierarchical_enable_written =
      r.Has("optimization.nlsq.anti_degeneracy.hierarchical.enable") ||
      r.Has("optimization.nlsq.enable_hierarchical");
  ApplyFlatNlsqKeys(r, config);
  CheckXpcsjaxOnlyValues(r, config, problems);
  ApplyMcmcOverrides(r, config);
}

}  // namespace homodyne::config::detail
