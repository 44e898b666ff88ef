#include "nlsq/fit_report.h"

namespace homodyne::nlsq {

std::vector<double> FitReport::FullVector() const {
  std::vector<double> v = contrast;
  v.insert(v.end(), offset.begin(), offset.end());
  v.insert(v.end(), physical_values.begin(), physical_values.end());
  return v;
}

bool FitReport::IsHeld(std::size_t p) const { return p < physical_held.size() && physical_held[p]; }

std::vector<std::string> FitReport::HeldNames() const {
  std::vector<std::string> out;
  for (std::size_t p = 0; p < physical_names.size(); ++p) {
    if (IsHeld(p)) out.push_back(physical_names[p]);
  }
  return out;
}

}  // namespace homodyne::nlsq
