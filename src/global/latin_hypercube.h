// Latin-hypercube start points for multistart, deterministic for a seed.
#pragma once

#include <cstdint>
#include <vector>

namespace homodyne::global {

// n_points points inside [lower, upper] (per dimension): every dimension's range is cut
// into n_points equal strata and each stratum holds exactly one point. The same seed
// gives the same points on every rank and every run.
std::vector<std::vector<double>> LatinHypercube(int n_points, const std::vector<double>& lower,
                                                const std::vector<double>& upper,
                                                std::uint64_t seed);

// n_points independent uniform points inside [lower, upper] (homodyne's "random"
// sampling_strategy); deterministic for a seed as above, a stream apart from the hypercube's.
std::vector<std::vector<double>> UniformPoints(int n_points, const std::vector<double>& lower,
                                               const std::vector<double>& upper,
                                               std::uint64_t seed);

}  // namespace homodyne::global
