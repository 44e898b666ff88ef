// The config as a canonical text, for the identity a checkpoint must match to be resumed.
#pragma once

#include <map>
#include <string>

#include "config/config.h"

namespace homodyne::config {

// The config's validated tree flattened to sorted "path: value" lines, without the keys
// that do not change a fit's result (checkpoint settings, output and logging), followed
// by `overrides` (command-line settings that change the run) as "cli.<name>: value".
std::string DescribeConfig(const config::Config& cfg,
                           const std::map<std::string, std::string>& overrides);

}  // namespace homodyne::config
