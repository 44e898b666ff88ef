// Evaluates the homodyne model on a small grid, in both analysis modes, with the fast
// kernel and with the literal expressions, and prints where they differ most.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "homodyne/homodyne.h"

int main() {
  try {
    homodyne::ModelGrid grid;
    grid.q = 0.0054;  // 1/Å
    grid.dt = 0.1;    // s
    grid.n_frames = 100;
    grid.phi_deg = {0.0, 45.0, 90.0};

    for (const auto mode :
         {homodyne::AnalysisMode::kStatic, homodyne::AnalysisMode::kLaminarFlow}) {
      grid.mode = mode;
      homodyne::ModelParameters p;
      p.physical = {2.0e4, -0.4, 10.0};  // D0 [Å²/s], alpha, D_offset [Å²/s]
      if (mode == homodyne::AnalysisMode::kLaminarFlow) {
        p.physical.insert(p.physical.end(), {3.0e-3, 0.2, 2.0e-4, 4.0});  // shear, phi0 [deg]
      }
      p.contrast.assign(grid.phi_deg.size(), 0.3);
      p.offset.assign(grid.phi_deg.size(), 1.0);

      const auto fast = homodyne::EvaluateC2(grid, p, {.threads = 2});
      const auto exact = homodyne::EvaluateC2(grid, p, {.exact = true});
      double worst = 0.0;
      for (std::size_t k = 0; k < fast.size(); ++k) {
        for (std::size_t i = 0; i < fast[k].size(); ++i) {
          worst = std::max(worst, std::abs(fast[k][i] - exact[k][i]) / std::abs(exact[k][i]));
        }
      }
      const auto n = static_cast<std::size_t>(grid.n_frames);
      std::printf("%s (%zu parameters): c2(0, 10) = %.12f at phi = %g, fast vs exact %.2e\n",
                  std::string(homodyne::AnalysisModeName(mode)).c_str(),
                  homodyne::ParameterNames(mode).size(), exact[1][10], grid.phi_deg[1], worst);
      if (!(worst <= 1e-13) || exact[1][10] != exact[1][10 * n]) {
        std::fprintf(stderr, "evaluate_model: unexpected model values\n");
        return 1;
      }
    }
    return 0;
  } catch (const homodyne::Error& e) {
    std::fprintf(stderr, "evaluate_model: %s\n", e.what());
    return e.kind() == homodyne::ErrorKind::kBadInput ? 2 : 1;
  }
}
