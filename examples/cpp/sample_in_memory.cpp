// Bayesian sampling (Consensus Monte Carlo) of data held in memory: a static-mode dataset
// made from the model plus seeded noise, fitted by NLSQ for a warm start, then sampled on
// every rank of MPI_COMM_WORLD. Run with mpiexec -n 1 or more: the posterior is the same.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "homodyne/homodyne.h"

int main(int argc, char** argv) {
  homodyne::Session session(&argc, &argv);
  try {
    // The data: two angles, 60 frames, c2 of known parameters plus Gaussian noise.
    homodyne::ModelGrid grid;
    grid.q = 0.0054;
    grid.dt = 0.1;
    grid.n_frames = 60;
    grid.phi_deg = {0.0, 90.0};
    const std::vector<double> truth = {3.0e4, -0.6, 20.0};  // D0, alpha, D_offset
    const homodyne::ModelParameters p{truth, {0.3, 0.3}, {1.0, 1.0}};

    homodyne::XpcsData data;
    data.source = "sample_in_memory example";
    data.q = grid.q;
    data.dt = grid.dt;
    data.phi_deg = grid.phi_deg;
    data.c2 = homodyne::EvaluateC2(grid, p);
    std::mt19937_64 rng(7);  // the same seed on every rank: the same data everywhere
    std::normal_distribution<double> noise(0.0, 3e-3);
    for (auto& matrix : data.c2) {
      const auto n = static_cast<std::size_t>(grid.n_frames);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) matrix[i * n + j] = matrix[j * n + i] += noise(rng);
      }
    }

    const std::vector<homodyne::ParameterSetting> parameters = {
        {.name = "D0", .initial = 2.0e4},
        {.name = "alpha", .initial = -0.3},
        {.name = "D_offset", .initial = 0.0}};
    homodyne::NlsqOptions nlsq;
    nlsq.parameters = parameters;
    homodyne::CmcOptions options;
    options.parameters = parameters;
    options.warm_start = homodyne::FitNlsq(session.world(), data, nlsq);
    options.shards = 2;
    options.chains = 2;
    options.warmup = 300;
    options.draws = 150;
    const homodyne::CmcSummary posterior = homodyne::FitCmc(session.world(), data, options);
    if (session.rank() == 0) std::printf("%s", posterior.FullReport().c_str());

    bool covered = posterior.status == homodyne::CmcStatus::kConverged;
    for (std::size_t i = 0; i < truth.size(); ++i) {
      const homodyne::PosteriorEstimate& e = posterior.physical[i];
      covered = covered && e.std > 0.0 && std::abs(e.mean - truth[i]) <= 4.0 * e.std;
    }
    if (session.rank() == 0) {
      std::printf("truth %s 4 posterior standard deviations\n", covered ? "within" : "NOT within");
    }
    return covered ? 0 : 1;
  } catch (const homodyne::Error& e) {
    std::fprintf(stderr, "sample_in_memory: %s\n", e.what());
    return e.kind() == homodyne::ErrorKind::kBadInput ? 2 : 1;
  }
}
