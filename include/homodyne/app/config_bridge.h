// Translations from the typed config (config module) to the options of the other
// modules (io, model), kept in one place so that no module parses another's types.
#pragma once

#include <string>

#include "homodyne/config/config.h"
#include "homodyne/io/load_options.h"
#include "homodyne/model/analysis_mode.h"
#include "homodyne/model/geometry.h"

namespace homodyne {

model::AnalysisMode ToModelMode(config::AnalysisMode mode);

// Loader options from the config; `data_file_override` (--data-file) replaces
// experimental_data.data_folder_path/data_file_name when not empty.
io::LoadOptions LoadOptionsFromConfig(const config::Config& cfg,
                                      const std::string& data_file_override = {});

// q (from the data, the first kept bin), L and dt of the model prefactors.
model::Geometry GeometryFromConfig(const config::Config& cfg, double q);

}  // namespace homodyne
