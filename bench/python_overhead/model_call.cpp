// The C++ side of the Python call-overhead benchmark (run.sh): the public API's EvaluateC2
// on a 1,024-point grid (static, one angle, 32×32 frames), repeated; prints the median
// time of one call over `rounds` rounds of `calls` calls, in microseconds.
//   bench_python_model_call [rounds (21)] [calls (2000)] [n_frames (32)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "homodyne/homodyne.h"

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 2000;
  // A grid of 2×2 frames measures the fixed cost of a call.
  const int n_frames = argc > 3 ? std::atoi(argv[3]) : 32;
  homodyne::ModelGrid grid;
  grid.q = 0.0054;
  grid.dt = 0.1;
  grid.n_frames = n_frames;
  grid.phi_deg = {10.0};
  const homodyne::ModelParameters p{{2.0e4, -0.4, 10.0}, {0.3}, {1.0}};
  double sink = 0.0;
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) sink += homodyne::EvaluateC2(grid, p)[0][1];
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    per_call.push_back(took.count() / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  std::printf("cpp_us_per_call %.3f (checksum %.6g)\n", per_call[per_call.size() / 2], sink);
  return 0;
}
