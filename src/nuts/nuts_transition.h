// One transition of multinomial NUTS (Stan's base_nuts): momentum refresh, tree
// doubling in random directions, biased progressive sampling between the old trajectory
// and each new subtree, uniform progressive sampling inside subtrees, and the full
// U-turn criterion (uturn.h) at every merge. No adaptation happens here.
#pragma once

#include "nuts/phase_point.h"

namespace homodyne {
class CounterRng;
}

namespace homodyne::nuts {

class LogDensity;

// Energy error H − H₀ above which a leapfrog step is flagged divergent.
inline constexpr double kMaxDeltaH = 1000.0;

// Per-transition statistics (Stan's sampler__ columns).
struct TransitionStats {
  double accept_stat = 0.0;  // mean of min(1, exp(H₀ − H)) over every leapfrog step taken
  int tree_depth = 0;        // number of doublings kept (== max_depth: saturated)
  int n_leapfrog = 0;        // leapfrog steps (gradient evaluations) in this transition
  bool divergent = false;    // some step had H − H₀ > kMaxDeltaH
  double energy = 0.0;       // H at the returned state
  double potential = 0.0;    // V = −log π at the returned state (Stan's lp__ is −V)
  double step_size = 0.0;    // ε actually used (after jitter)
};

struct TransitionSettings {
  double step_size = 1.0;  // nominal ε
  double jitter = 0.0;     // ε_used = ε (1 + jitter (2u − 1)), 0 ≤ jitter < 1
  int max_depth = 10;      // at most 2^max_depth − 1 leapfrog steps
};

// [inout] z: on entry q, potential and gradient must be valid for q (p is overwritten);
// on exit z is the selected state with its potential and gradient. [inout] rng: every
// random choice (jitter, momentum, directions, multinomial draws) comes from it, so a
// saved RngState reproduces the transition bit for bit.
template <typename Metric>
TransitionStats NutsTransition(const LogDensity& density, const Metric& metric,
                               const TransitionSettings& settings, PhasePoint& z, CounterRng& rng);

}  // namespace homodyne::nuts
