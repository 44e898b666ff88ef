// Internal: building the typed Config from a validated YAML tree.
#pragma once

#include "config/config.h"
#include "config/config_reader.h"
#include "problem_list.h"
#include "raw_config.h"

namespace homodyne::config::detail {

// The parts of the typed Config that the key bindings (key_binding.h) cannot fill; both
// run after ReadBoundFields.

// initial_parameters (names, the length check of values, fixed parameters), parameter_space
// and the effective parameters (needs config.analysis_mode to be set).
void BuildParameters(const ValueReader& reader, Config& config, ProblemList& problems);

// optimization.*: x_scale_map, whether anti_degeneracy is written, the optimization.mcmc
// overrides of per_shard_mcmc.
void BuildOptimization(const ValueReader& reader, Config& config, ProblemList& problems);

}  // namespace homodyne::config::detail
