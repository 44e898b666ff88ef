#include "homodyne/app/config_bridge.h"

namespace homodyne {

model::AnalysisMode ToModelMode(config::AnalysisMode mode) {
  return mode == config::AnalysisMode::kLaminarFlow ? model::AnalysisMode::kLaminarFlow
                                                    : model::AnalysisMode::kStatic;
}

io::LoadOptions LoadOptionsFromConfig(const config::Config& cfg,
                                      const std::string& data_file_override) {
  io::LoadOptions o;
  o.path = data_file_override.empty() ? cfg.experimental_data.DataFile() : data_file_override;
  o.target_q = cfg.analyzer.wavevector_q;
  o.q_tolerance_fraction = cfg.q_tolerance_fraction;
  o.start_frame = cfg.analyzer.start_frame;
  o.end_frame = cfg.analyzer.end_frame;
  o.dt = cfg.analyzer.dt;
  o.phi_filter.enabled = cfg.phi_filtering.enabled;
  for (const auto& r : cfg.phi_filtering.target_ranges) {
    o.phi_filter.ranges.push_back({r.min_angle, r.max_angle});
  }
  return o;
}

model::Geometry GeometryFromConfig(const config::Config& cfg, double q) {
  model::Geometry g;
  g.q = q;
  g.L = cfg.analyzer.stator_rotor_gap;
  g.dt = cfg.analyzer.dt;
  return g;
}

}  // namespace homodyne
