// The C++ side of test_model.py: c2 (fast and exact) and the Jacobian of the public API for
// the grid and parameters on the command line, every value printed exactly (%a), one per
// line, so that the test compares the Python module's numbers bit for bit.
//
//   model_values MODE c2|c2_exact|jacobian Q DT N GAP PHI,... PHYS,... CONTRAST,... OFFSET,...
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "homodyne/homodyne.h"

namespace {

std::vector<double> List(const char* text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::strtod(item.c_str(), nullptr));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: model_values MODE WHAT Q DT N GAP PHI PHYS CONTRAST OFFSET\n");
    return 2;
  }
  try {
    homodyne::ModelGrid grid;
    const std::string mode = argv[1];
    const std::string what = argv[2];
    grid.mode = mode == "static"         ? homodyne::AnalysisMode::kStatic
                : mode == "laminar_flow" ? homodyne::AnalysisMode::kLaminarFlow
                                         : homodyne::AnalysisMode::kTwoComponent;
    grid.q = std::strtod(argv[3], nullptr);
    grid.dt = std::strtod(argv[4], nullptr);
    grid.n_frames = std::atoi(argv[5]);
    grid.stator_rotor_gap = std::strtod(argv[6], nullptr);
    grid.phi_deg = List(argv[7]);
    const homodyne::ModelParameters p{List(argv[8]), List(argv[9]), List(argv[10])};
    std::vector<std::vector<double>> values;
    if (what == "jacobian") {
      values = homodyne::EvaluateJacobian(grid, p).jacobian;
    } else {
      values = homodyne::EvaluateC2(grid, p, {.exact = what == "c2_exact"});
    }
    for (const auto& block : values) {
      for (const double v : block) std::printf("%a\n", v);
    }
    return 0;
  } catch (const homodyne::Error& e) {
    std::fprintf(stderr, "model_values: %s\n", e.what());
    return 2;
  }
}
