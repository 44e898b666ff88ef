// Conversion of homodyne's flat legacy config layout to the nested layout (spec §3 end).
#include <string>

#include <fmt/format.h>

#include "raw_config.h"
#include "schema_check.h"

namespace homodyne::config::detail {
namespace {

constexpr const char* kFlatKeys[] = {"data_file", "dt", "start_frame", "end_frame",
                                     "output_directory"};

}  // namespace

bool ConvertFlatLegacyLayout(YAML::Node& root, ProblemList& problems) {
  if (!root.IsMap()) return false;
  const YAML::Node view(root);  // const access does not insert keys
  bool any_flat = false;
  for (const char* key : kFlatKeys) any_flat = any_flat || view[key].IsDefined();
  if (!any_flat || view["analyzer_parameters"].IsDefined() ||
      view["experimental_data"].IsDefined()) {
    return false;  // nested (or mixed: the flat keys are then reported as unknown)
  }
  YAML::Node analyzer(YAML::NodeType::Map);
  // Flat-layout defaults: dt 0.1, start_frame 1, end_frame -1.
  analyzer["dt"] = view["dt"].IsDefined() ? YAML::Node(view["dt"]) : YAML::Node("0.1");
  analyzer["start_frame"] =
      view["start_frame"].IsDefined() ? YAML::Node(view["start_frame"]) : YAML::Node("1");
  analyzer["end_frame"] =
      view["end_frame"].IsDefined() ? YAML::Node(view["end_frame"]) : YAML::Node("-1");
  root["analyzer_parameters"] = analyzer;

  if (view["data_file"].IsDefined()) {
    const YAML::Node data_file = view["data_file"];
    if (!data_file.IsScalar()) {
      problems.Add("data_file", fmt::format("expected a file name (flat legacy layout){}",
                                            LineSuffix(data_file)));
    } else {
      const std::string path = data_file.Scalar();
      const std::size_t slash = path.rfind('/');
      YAML::Node experimental(YAML::NodeType::Map);
      experimental["file_path"] = path;
      experimental["data_folder_path"] =
          slash == std::string::npos ? "./" : path.substr(0, slash + 1);
      experimental["data_file_name"] = slash == std::string::npos ? path : path.substr(slash + 1);
      root["experimental_data"] = experimental;
    }
  }
  if (view["output_directory"].IsDefined() && !view["output"].IsDefined()) {
    YAML::Node output(YAML::NodeType::Map);
    output["directory"] = view["output_directory"];
    root["output"] = output;
  } else if (view["output_directory"].IsDefined()) {
    problems.Add("output_directory", fmt::format("given together with output{}; remove one of them",
                                                 LineSuffix(view["output_directory"])));
  }
  for (const char* key : kFlatKeys) root.remove(key);
  return true;
}

}  // namespace homodyne::config::detail
