// `--nlsq-result PATH`: an earlier NLSQ result as the CMC warm start. PATH is a results
// directory (PATH/nlsq/parameters.json), a directory holding parameters.json, or the file.
#pragma once

#include <string>

#include "model/analysis_mode.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne {

// Physical values and uncertainties (and, when the file has homodyne-hpc's per_angle
// block, the full expanded vector). A result with reduced χ² > 100 is rejected as
// homodyne does; a missing file or key is a bad-input Error naming it.
nlsq::NlsqRunResult LoadNlsqWarmStart(const std::string& path, model::AnalysisMode mode);

}  // namespace homodyne
