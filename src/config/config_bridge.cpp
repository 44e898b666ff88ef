#include "config/config_bridge.h"

#include "config/config_reader.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "config/key_paths.h"
#include "config/parameters.h"
#include "core/errors.h"

namespace homodyne {

io::LoadOptions LoadOptionsFromConfig(const config::Config& cfg,
                                      const std::string& data_file_override) {
  io::LoadOptions o;
  o.path = data_file_override.empty() ? cfg.experimental_data.DataFile() : data_file_override;
  o.target_q = cfg.analyzer.wavevector_q;
  o.q_tolerance_fraction = cfg.q_tolerance_fraction;
  o.start_frame = cfg.analyzer.start_frame;
  o.end_frame = cfg.analyzer.end_frame;
  o.dt = cfg.analyzer.dt;
  // two_component's quantile estimates pool the full matrix, row 0 included (as xpcsjax's).
  o.first_row = cfg.analysis_mode == config::AnalysisMode::kTwoComponent;
  o.phi_filter.enabled = cfg.phi_filtering.enabled;
  for (const auto& r : cfg.phi_filtering.target_ranges) {
    o.phi_filter.ranges.push_back({r.min_angle, r.max_angle});
  }
  o.phi_filter.fallback_to_all =
      !config::ConfigHasValue(cfg, "phi_filtering.fallback_to_all_angles") ||
      config::ConfigBool(cfg, "phi_filtering.fallback_to_all_angles");
  o.phi_filter.key = std::string(config::keys::kPhiFiltering);
  return o;
}

HeldPhysics HeldPhysicsFromConfig(const config::Config& cfg, const model::ExpandedIndex& index,
                                  const std::vector<double>& start) {
  HeldPhysics h;
  for (int p = 0; p < index.n_phys; ++p) {
    h.vary.push_back(cfg.parameters.at(static_cast<std::size_t>(p)).vary);
    h.values.push_back(start.at(static_cast<std::size_t>(index.phys(p))));
  }
  return h;
}

ExpandedStart ExpandedStartFromConfig(const config::Config& cfg, model::AnalysisMode mode,
                                      const std::vector<model::ScalingEstimate>& estimates,
                                      const std::map<std::string, double>& overrides,
                                      UnsetStart unset) {
  const int n_phi = static_cast<int>(estimates.size());
  const model::ExpandedIndex index(mode, n_phi);
  ExpandedStart out;
  out.values.resize(static_cast<std::size_t>(index.size()));
  out.bounds.lower.resize(out.values.size());
  out.bounds.upper.resize(out.values.size());
  const auto& contrast = cfg.initial_parameters.contrast;
  const auto& offset = cfg.initial_parameters.offset;
  // One value per selected angle, or the lists are bad input (they were silently ignored).
  for (const auto& [list, key] : {std::pair{&contrast, "contrast"}, std::pair{&offset, "offset"}}) {
    if (*list && (*list)->size() != estimates.size()) {
      ThrowBadInput(fmt::format("{} value(s) for {} selected angle(s); expected one per angle",
                                (*list)->size(), estimates.size()),
                    cfg.source, std::string("initial_parameters.per_angle_scaling.") + key);
    }
  }
  for (int k = 0; k < n_phi; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const auto c = static_cast<std::size_t>(index.contrast(k));
    const auto o = static_cast<std::size_t>(index.offset(k));
    // A configured scalar start (scaling.initial_*, parameters.scaling, a bounds entry's
    // value) wins over the per-angle lists, which win over the estimate from the data.
    out.values[c] = cfg.contrast.initial_from_config ? cfg.contrast.initial
                    : contrast                       ? (*contrast)[kk]
                                                     : estimates[kk].contrast;
    out.values[o] = cfg.offset.initial_from_config ? cfg.offset.initial
                    : offset                       ? (*offset)[kk]
                                                   : estimates[kk].offset;
    out.bounds.lower[c] = cfg.contrast.min;
    out.bounds.upper[c] = cfg.contrast.max;
    out.bounds.lower[o] = cfg.offset.min;
    out.bounds.upper[o] = cfg.offset.max;
  }
  const auto& names = model::PhysicalParameterNames(mode);
  for (int p = 0; p < index.n_phys; ++p) {
    const auto e = static_cast<std::size_t>(index.phys(p));
    const config::EffectiveParameter& ep = cfg.parameters.at(static_cast<std::size_t>(p));
    auto it = overrides.find(names[static_cast<std::size_t>(p)]);
    if (it != overrides.end() && !std::isfinite(it->second)) {
      ThrowBadInput(fmt::format("initial value of {} must be a finite number, found {}", it->first,
                                it->second),
                    {}, "--initial-" + it->first);
    }
    const double configured = ep.initial_from_config || unset == UnsetStart::kMidpoint
                                  ? ep.initial
                                  : config::NlsqDefaultStart(ep);
    out.values[e] = it != overrides.end() ? it->second : configured;
    out.bounds.lower[e] = ep.min;
    out.bounds.upper[e] = ep.max;
  }
  return out;
}

bool ApplyTwoComponentIndividualBounds(const config::Config& cfg, const model::ExpandedIndex& index,
                                       model::Bounds& expanded) {
  bool changed = false;
  auto apply = [&](const config::EffectiveParameter& configured, std::string_view name,
                   model::ScalingRange xpcsjax, auto row_of) {
    const auto registry = config::DefaultParameterBounds(name);
    HOMODYNE_CHECK(registry.has_value(), "contrast and offset have registry bounds");
    if (configured.min != registry->min || configured.max != registry->max) return;
    for (int k = 0; k < index.n_angles; ++k) {
      const auto r = static_cast<std::size_t>(row_of(k));
      changed = changed || expanded.lower[r] != xpcsjax.lower || expanded.upper[r] != xpcsjax.upper;
      expanded.lower[r] = xpcsjax.lower;
      expanded.upper[r] = xpcsjax.upper;
    }
  };
  apply(cfg.contrast, "contrast", model::kFourierContrastRange,
        [&](int k) { return index.contrast(k); });
  apply(cfg.offset, "offset", model::kFourierOffsetRange, [&](int k) { return index.offset(k); });
  return changed;
}

model::Geometry GeometryFromConfig(const config::Config& cfg, double q) {
  model::Geometry g;
  g.q = q;
  g.L = cfg.analyzer.stator_rotor_gap;
  g.dt = cfg.analyzer.dt;
  return g;
}

bool ConfigDenseMetric(const config::Config& cfg) {
  return !config::ConfigHasValue(cfg, "optimization.mcmc.dense_mass_matrix") ||
         config::ConfigBool(cfg, "optimization.mcmc.dense_mass_matrix");
}

}  // namespace homodyne
