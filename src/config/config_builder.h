// Internal: building the typed Config from a validated YAML tree.
#pragma once

#include "config/config.h"
#include "config/config_reader.h"
#include "problem_list.h"
#include "raw_config.h"

namespace homodyne::config::detail {

// initial_parameters, parameter_space and the effective parameters (needs
// config.analysis_mode to be set).
void BuildParameters(const ValueReader& reader, Config& config, ProblemList& problems);

// optimization.* (nlsq, streaming, cmc and the optimization.mcmc overrides).
void BuildOptimization(const ValueReader& reader, Config& config, ProblemList& problems);

}  // namespace homodyne::config::detail
