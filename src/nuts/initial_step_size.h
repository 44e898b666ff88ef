// Stan's init_stepsize heuristic: from a fixed position, take single leapfrog steps
// with fresh momenta, doubling ε while the energy change stays above log 0.8 (or
// halving it while it stays below), and stop at the first step that crosses.
#pragma once

namespace homodyne {
class CounterRng;
}

namespace homodyne::nuts {

class LogDensity;
struct PhasePoint;

// [in] z: q, potential and gradient valid (p is ignored, z is not modified).
// Returns the new ε. Returns `step_size` unchanged when it is 0, NaN or > 1e7.
// Throws kNumerical when ε grows past 1e7 ("posterior may be improper") or reaches 0.
template <typename Metric>
double FindInitialStepSize(const LogDensity& density, const Metric& metric, const PhasePoint& z,
                           double step_size, CounterRng& rng);

}  // namespace homodyne::nuts
