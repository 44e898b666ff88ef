// A distributed NLSQ fit of data held in memory: a static-mode dataset made from the model
// plus seeded noise, fitted on every rank of MPI_COMM_WORLD. Run with mpiexec -n 1 or more.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "homodyne/homodyne.h"

int main(int argc, char** argv) {
  homodyne::Session session(&argc, &argv);
  try {
    // The data: three angles, 80 frames, c2 of known parameters plus Gaussian noise.
    homodyne::ModelGrid grid;
    grid.q = 0.0054;
    grid.dt = 0.1;
    grid.n_frames = 80;
    grid.phi_deg = {-30.0, 15.0, 60.0};
    const std::vector<double> truth = {5.0e3, -0.8, 20.0};  // D0, alpha, D_offset
    homodyne::ModelParameters p{truth, {0.25, 0.3, 0.35}, {1.0, 1.0, 1.0}};

    homodyne::XpcsData data;
    data.source = "fit_in_memory example";
    data.q = grid.q;
    data.dt = grid.dt;
    data.phi_deg = grid.phi_deg;
    data.c2 = homodyne::EvaluateC2(grid, p);
    std::mt19937_64 rng(2024);  // the same seed on every rank: the same data everywhere
    std::normal_distribution<double> noise(0.0, 1e-3);
    for (auto& matrix : data.c2) {
      const auto n = static_cast<std::size_t>(grid.n_frames);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) matrix[i * n + j] = matrix[j * n + i] += noise(rng);
      }
    }

    homodyne::NlsqOptions options;
    options.mode = homodyne::AnalysisMode::kStatic;
    options.parameters = {{.name = "D0", .initial = 2.0e3},
                          {.name = "alpha", .initial = -0.5},
                          {.name = "D_offset", .initial = 0.0}};
    options.per_angle = homodyne::PerAngleScaling::kIndividual;  // the angles differ
    options.print_progress = true;
    const homodyne::NlsqSummary fit = homodyne::FitNlsq(session.world(), data, options);
    if (session.rank() == 0) std::printf("%s", fit.FullReport().c_str());

    bool recovered = fit.status == homodyne::NlsqStatus::kConverged;
    for (std::size_t i = 0; i < truth.size(); ++i) {
      const double deviation = std::abs(fit.physical[i].value - truth[i]);
      recovered = recovered && deviation <= 3.0 * fit.physical[i].uncertainty;
    }
    if (session.rank() == 0) {
      std::printf("truth %s within 3 standard deviations\n", recovered ? "recovered" : "NOT");
    }
    return recovered ? 0 : 1;
  } catch (const homodyne::Error& e) {
    std::fprintf(stderr, "fit_in_memory: %s\n", e.what());
    return e.kind() == homodyne::ErrorKind::kBadInput ? 2 : 1;
  }
}
