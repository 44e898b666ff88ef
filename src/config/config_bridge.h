// Translations from the typed config (config module) to the options of the other
// modules (io, model), kept in one place so that no module parses another's types.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "io/load_options.h"
#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/parameter_layout.h"
#include "model/scaling_estimator.h"

namespace homodyne {

// Loader options from the config; `data_file_override` (--data-file) replaces
// experimental_data.data_folder_path/data_file_name when not empty.
io::LoadOptions LoadOptionsFromConfig(const config::Config& cfg,
                                      const std::string& data_file_override = {});

// Starting point and bounds in the expanded per-angle space [contrast_k…, offset_k…,
// physics]: per-angle values from `estimates`, replaced by
// initial_parameters.per_angle_scaling lists of the right length, replaced by a configured
// scalar start (cfg.contrast/offset.initial_from_config) for every angle; physics from the
// config's initial values, replaced by `overrides` (--initial-*); a physical parameter
// the config gives no value starts as `unset` says; bounds from the effective
// parameter_space.
struct ExpandedStart {
  std::vector<double> values;
  model::Bounds bounds;
};
// kNlsqDefault: config::NlsqDefaultStart (homodyne's NLSQ defaults); kMidpoint: the
// bounds' midpoint (CMC, spec §0.1).
enum class UnsetStart { kNlsqDefault, kMidpoint };
ExpandedStart ExpandedStartFromConfig(const config::Config& cfg, model::AnalysisMode mode,
                                      const std::vector<model::ScalingEstimate>& estimates,
                                      const std::map<std::string, double>& overrides = {},
                                      UnsetStart unset = UnsetStart::kMidpoint);

// two_component's individual layout (heterodyne spec §3 and §9 item 8): xpcsjax bounds every
// contrast_k by [0.1, 0.8] and every offset_k by [0.5, 1.5] (model::kFourierContrastRange,
// kFourierOffsetRange: its Fourier helper's bounds), whatever the config says. Here the
// config's contrast (offset) bounds win when they differ from the registry defaults [0, 1]
// ([0.5, 1.5]); bounds that restate the defaults (as xpcsjax's and homodyne-hpc's templates
// do) and absent ones give xpcsjax's. Writes the per-angle rows of `expanded` (an
// ExpandedStart's bounds for `index`); returns whether a bound changed.
bool ApplyTwoComponentIndividualBounds(const config::Config& cfg, const model::ExpandedIndex& index,
                                       model::Bounds& expanded);

// The config's held physics (EffectiveParameter::vary false) at their values in `start`
// (ExpandedStart::values): one flag and one value per physical parameter, as
// model::ParameterLayout::WithHeldPhysics takes them.
struct HeldPhysics {
  std::vector<bool> vary;
  std::vector<double> values;
};
HeldPhysics HeldPhysicsFromConfig(const config::Config& cfg, const model::ExpandedIndex& index,
                                  const std::vector<double>& start);

// q (from the data, the first kept bin), L and dt of the model prefactors.
model::Geometry GeometryFromConfig(const config::Config& cfg, double q);

// CMC's dense NUTS metric: on unless optimization.mcmc.dense_mass_matrix is false.
bool ConfigDenseMetric(const config::Config& cfg);

}  // namespace homodyne
