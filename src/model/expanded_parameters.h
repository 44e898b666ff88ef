// Index map of the expanded ("individual" per-angle scaling) parameter vector.
//
// Order (the canonical homodyne optimiser order):
//   [contrast_0 … contrast_{n−1}, offset_0 … offset_{n−1}, physical_0 … physical_{p−1}]
// with n = number of angles and p = 3 (static) or 7 (laminar_flow).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/analysis_mode.h"

namespace homodyne::model {

struct ExpandedIndex {
  int n_angles = 0;
  int n_phys = 0;

  ExpandedIndex() = default;
  ExpandedIndex(AnalysisMode mode, int angles)
      : n_angles(angles), n_phys(NumPhysicalParameters(mode)) {}

  int size() const { return 2 * n_angles + n_phys; }
  int contrast(int k) const { return k; }
  int offset(int k) const { return n_angles + k; }
  int phys(int p) const { return 2 * n_angles + p; }

  // Names: contrast_k, offset_k, then the physical names of `mode`.
  std::vector<std::string> Names(AnalysisMode mode) const;
};

}  // namespace homodyne::model
