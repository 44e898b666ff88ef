#include "model/expanded_parameters.h"

#include <fmt/format.h>

namespace homodyne::model {

std::vector<std::string> ExpandedIndex::Names(AnalysisMode mode) const {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(size()));
  for (int k = 0; k < n_angles; ++k) names.push_back(fmt::format("contrast_{}", k));
  for (int k = 0; k < n_angles; ++k) names.push_back(fmt::format("offset_{}", k));
  for (const auto& name : PhysicalParameterNames(mode)) names.push_back(name);
  return names;
}

}  // namespace homodyne::model
