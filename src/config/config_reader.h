// Reading and validating homodyne YAML configuration files.
//
// The reader accepts homodyne's config files as they are (including the flat legacy
// layout), validates every key against the key table (key_table.h) and returns a typed
// Config. Every problem is a homodyne::Error of kind kBadInput (exit code 2) naming the
// file, the key path, the line and what was expected; several problems are reported
// together.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"

namespace homodyne::config {

struct ReadOptions {
  // experimental_data.data_folder_path and data_file_name must be given (needed for a fit).
  bool require_data_file = true;
  // The data file must also exist on disk.
  bool check_data_file_exists = false;
  // An unknown key is an error (with the nearest valid key). Without it, as homodyne and
  // xpcsjax read their configs, unknown keys are ignored and listed in
  // Config::ignored_keys for a warning (--strict turns this on).
  bool strict = false;
};

// `path` with a leading ~ (or ~/) replaced by $HOME and $NAME / ${NAME} by the environment
// variable's value; unset variables are left as written (xpcsjax's expanduser + expandvars).
// The reader applies it to every path key.
std::string ExpandUserAndVariables(const std::string& path);

// The warning for a lenient read's ignored keys: the file, the count, one line per key.
std::string IgnoredKeysWarning(const Config& config);

// Reads and validates a YAML file. YAML syntax errors report file, line and column.
Config ReadConfigFile(const std::string& path, const ReadOptions& options = {});

// Same for YAML text; `source` names it in messages.
Config ReadConfigString(const std::string& yaml_text, const std::string& source,
                        const ReadOptions& options = {});

// The Config of a file that sets no key: every key table default (through the same key
// bindings as the reader), analysis_mode static_isotropic, dt = 1 s and the gap
// 2e6 Angstrom with source "default", effective parameters resolved from the built-in
// bounds. No data file, no notes, no YAML tree (the Config* lookups below need one). The
// start for anything that fills a Config without YAML.
Config DefaultConfig();

// Every known key with its effective value (defaults filled in, fallbacks resolved,
// aliases canonicalised, mcmc overrides applied, bounds and initial values of every
// parameter), as YAML text. Free-form sections are echoed as given.
std::string EffectiveConfigYaml(const Config& config);

// Fills config.parameters, config.contrast and config.offset (bounds and starts) from
// config.initial_parameters and config.parameter_space, with the built-in defaults for
// what those leave unset; adds a note for a start outside its bounds. The reader calls it;
// so does anything that fills those two sections without YAML.
void ResolveParameters(Config& config);

// Lookups of any table key by dotted path (no wildcards): the value from the file if
// given and not null, else the table default. Throw kInternal for unknown paths or
// when the key has no default and is absent; throw kBadInput if the value has the
// wrong type (cannot happen after validation).
bool ConfigHasValue(const Config& config, std::string_view path);  // given and not null
double ConfigNumber(const Config& config, std::string_view path);
long long ConfigInteger(const Config& config, std::string_view path);
bool ConfigBool(const Config& config, std::string_view path);
std::string ConfigString(const Config& config, std::string_view path);

// One warning line for each setting of homodyne/xpcsjax the file gives with a value that
// changes nothing here (performance.strategy_override, optimization.nlsq.trust_region_scale,
// x_scale_map, phi_filtering.tolerance), so that none is dropped without a word.
std::vector<std::string> UnusedSettingWarnings(const Config& config);

// One line saying which result files the run writes and why (output.layout, docs/outputs.md).
std::string OutputLayoutLine(const Config& config);

}  // namespace homodyne::config
