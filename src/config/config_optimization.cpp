// optimization.* → typed options; optimization.mcmc overrides per_shard_mcmc (spec §3).
#include <string>

#include <fmt/format.h>

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
          fmt::format("{} = {} overrides optimization.cmc.per_shard_mcmc.{} "
                      "({})",
                      key, value, o.name, *o.target));
    }
    *o.target = value;
  }
}

}  // namespace

void BuildOptimization(const ValueReader& r, Config& config, ProblemList& problems) {
  NlsqOptions& nlsq = config.optimization.nlsq;
  ReadXScaleMap(r, nlsq, problems);
  // homodyne applies the anti-degeneracy system only when the section is written.
  nlsq.anti_degeneracy.section_present = r.Find("optimization.nlsq.anti_degeneracy").IsDefined();
  ApplyMcmcOverrides(r, config);
}

}  // namespace homodyne::config::detail
