// The `homodyne-config` tool: commented config templates and config validation.
#pragma once

#include <string>

#include "config/config.h"

namespace homodyne::config {

// Writes `text` to `path` atomically (WriteFileAtomically). Throws kBadInput if `path`
// exists and `overwrite` is false, kIo if writing fails.
void WriteConfigFile(const std::string& path, const std::string& text, bool overwrite);

// Human-readable summary printed by --validate: mode, data file and whether it exists,
// parameters with initial values and bounds, method, per-angle modes, notes; with
// `verbose` also the keys that are accepted but not used.
std::string FormatConfigSummary(const Config& config, bool verbose);

// Entry point of the homodyne-config executable. Exit codes: 0 ok, 2 bad input.
int HomodyneConfigMain(int argc, char** argv);

}  // namespace homodyne::config
