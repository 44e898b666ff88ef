// homodyne's --output-format yaml: homodyne_results.yaml beside homodyne_results.json, the
// same tree written by yaml-cpp.
#pragma once

#include <filesystem>

namespace homodyne {

// Reads dir/homodyne_results.json and writes its content as dir/homodyne_results.yaml
// (atomically). Does nothing when the JSON file is absent (a run that wrote none).
void WriteHomodyneResultsYaml(const std::filesystem::path& dir);

}  // namespace homodyne
