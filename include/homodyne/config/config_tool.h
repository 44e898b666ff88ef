// The `homodyne-config` tool: commented config templates and config validation.
#pragma once

#include <string>

#include "homodyne/config/config.h"

namespace homodyne::config {

// A commented template for `mode` with homodyne's template values; it passes validation.
std::string ConfigTemplate(AnalysisMode mode);

// Default output name of a template: homodyne_<mode>_config.yaml.
std::string DefaultTemplateFileName(AnalysisMode mode);

// Writes `text` to `path` through a temporary file in the same folder and a rename.
// Throws kBadInput if `path` exists and `overwrite` is false, kIo if writing fails.
void WriteFileAtomically(const std::string& path, const std::string& text, bool overwrite);

// Human-readable summary printed by --validate: mode, data file and whether it exists,
// parameters with initial values and bounds, method, per-angle modes, notes; with
// `verbose` also the keys that are accepted but not used.
std::string FormatConfigSummary(const Config& config, bool verbose);

// Entry point of the homodyne-config executable. Exit codes: 0 ok, 2 bad input.
int HomodyneConfigMain(int argc, char** argv);

}  // namespace homodyne::config
