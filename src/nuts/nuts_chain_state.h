// The complete state of one NUTS chain between two iterations, as plain numbers.
//
// Restoring it (NutsChain::Restore) and continuing gives draws bit-identical to an
// uninterrupted run: the potential and gradient are recomputed from `position`
// (deterministic), the Cholesky factor from `inverse_metric`, the momentum is drawn
// afresh at every transition, and the RNG is a counter-based stream.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"

namespace homodyne::nuts {

struct NutsChainState {
  int dimension = 0;
  int metric_kind = 0;                 // static_cast<int>(MetricKind)
  std::int64_t iteration = 0;          // iterations done (warmup first, then sampling)
  std::vector<double> position;        // current q
  double step_size = 0.0;              // nominal ε (frozen after warmup)
  std::vector<double> inverse_metric;  // diag: dimension values; dense: dimension² row-major

  // Dual averaging.
  double da_counter = 0.0;
  double da_s_bar = 0.0;
  double da_x_bar = 0.0;
  double da_mu = 0.0;

  // Metric-adaptation windows.
  std::int64_t window_counter = 0;
  std::int64_t window_size = 0;
  std::int64_t window_next_end = 0;

  // Welford estimator of the current window.
  std::int64_t welford_count = 0;
  std::vector<double> welford_mean;
  std::vector<double> welford_m2;

  RngState rng;  // {seed, stream_a = shard, stream_b = chain, position}
};

}  // namespace homodyne::nuts
