// The commented configuration templates that `homodyne-config --mode` writes.
#pragma once

#include <string>

#include "config/config.h"

namespace homodyne::config {

// A commented template for `mode` with homodyne's template values; it passes validation.
std::string ConfigTemplate(AnalysisMode mode);

// Default output name of a template: homodyne_<mode>_config.yaml.
std::string DefaultTemplateFileName(AnalysisMode mode);

}  // namespace homodyne::config
