// The result files of a CMC run under DIR/cmc/, with homodyne's file names and keys
// (physics spec §5.3), written atomically by the caller's rank 0.
#pragma once

#include <filesystem>
#include <string>

#include "cmc/cmc_fit.h"

namespace homodyne::outputs {

// cmc/parameters.json, cmc/analysis_results_cmc.json, cmc/diagnostics.json,
// cmc/shard_diagnostics.json, cmc/samples.h5 and cmc/samples.npz under `output_dir`.
void WriteCmcResultFiles(const std::string& output_dir, const cmc::CmcRunResult& result);

// homodyne_results.json of a CMC run (homodyne's summary: method, analysis_mode, success,
// optimization_time, device_config, parameters = the posterior means in the samples' order,
// diagnostics.converged), under `output_dir`.
std::string CmcHomodyneResultsJson(const cmc::CmcRunResult& result);
void WriteCmcHomodyneResults(const std::filesystem::path& output_dir,
                             const cmc::CmcRunResult& result);

}  // namespace homodyne::outputs
