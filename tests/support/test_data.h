// Files of tests/data (reference values, the real measured matrix, fixtures), found through
// HOMODYNE_TEST_DATA_DIR, which tests/CMakeLists.txt sets to that folder of the source tree.
#pragma once

#include <string>

namespace homodyne::testing {

// The path of `name` under tests/data, e.g. TestDataPath("reference_c2.json") or
// TestDataPath("real/bnl_twotime_350.h5").
inline std::string TestDataPath(const std::string& name) {
  return std::string(HOMODYNE_TEST_DATA_DIR) + "/" + name;
}

}  // namespace homodyne::testing
