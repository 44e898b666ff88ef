// homodyne's --output-format yaml|npz: homodyne_results.yaml (the same tree written by
// yaml-cpp) or homodyne_results.npz beside homodyne_results.json.
#pragma once

#include <filesystem>

namespace homodyne {

// Reads dir/homodyne_results.json and writes its content as dir/homodyne_results.yaml
// (atomically). Does nothing when the JSON file is absent (a run that wrote none).
void WriteHomodyneResultsYaml(const std::filesystem::path& dir);

// --output-format npz: dir/homodyne_results.npz with homodyne's member results_summary, a
// one-element str array holding homodyne_results.json's text (homodyne pickles the dict into
// an object array; a str array loads without allow_pickle: json.loads(f["results_summary"][0])
// gives the dict). Does nothing when the JSON file is absent.
void WriteHomodyneResultsNpz(const std::filesystem::path& dir);

}  // namespace homodyne
