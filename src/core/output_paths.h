// Where results may be written: inside the output directory, never over an input.
//
// Result file names are generated (some from data such as bin names or config strings);
// OutputFilePath keeps every one of them inside the output directory. CheckOutputsSpareInputs
// is run before any work so that a run that would replace one of its own inputs (the data
// file, the config, a warm-start file) stops with exit code 2 and writes nothing.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne {

// `dir / name` for a generated relative file name. Rejects (kBadInput, naming the
// name) an empty or absolute name and any ".." component, so that the result stays
// inside `dir`.
std::filesystem::path OutputFilePath(const std::filesystem::path& dir, std::string_view name);

// What a run will write under its output directory.
struct OutputLayout {
  std::filesystem::path dir;            // the output directory (--output-dir)
  std::vector<std::string> owned_dirs;  // subdirectories the run fills (e.g. "nlsq")
  std::vector<std::string> files;       // files directly in `dir` (e.g. "run_report.yaml")
};

// Throws kBadInput (file: the input, key: `flag`) if the output directory is one of
// `inputs`, or an input lies inside one of the owned subdirectories or is one of the
// files. Paths are compared after resolving symbolic links; existing files are also
// compared by identity (hard links). Empty inputs are ignored.
void CheckOutputsSpareInputs(const OutputLayout& layout, const std::vector<std::string>& inputs,
                             std::string_view flag = "--output-dir");

}  // namespace homodyne
