// The result files of a CMC run under DIR/cmc/, with homodyne's file names and keys
// (physics spec §5.3), written atomically by the caller's rank 0.
#pragma once

#include <string>

#include "cmc/cmc_fit.h"

namespace homodyne::outputs {

// cmc/parameters.json, cmc/analysis_results_cmc.json, cmc/diagnostics.json,
// cmc/shard_diagnostics.json and cmc/samples.h5 under `output_dir`.
void WriteCmcResultFiles(const std::string& output_dir, const cmc::CmcRunResult& result);

}  // namespace homodyne::outputs
