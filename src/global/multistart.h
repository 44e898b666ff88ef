// Multistart NLSQ (optimization.nlsq.multi_start): Latin-hypercube starts in the
// optimiser space, deterministic for a seed, run in parallel on rank groups
// (sub-communicators of the world, each holding the whole dataset spread over its
// ranks); the best χ² wins; results near the best are clustered into basins and more
// than one basin is reported as a degeneracy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::global {

struct MultiStartOptions {
  int n_starts = 10;  // sampled starts (the user's start is added)
  std::uint64_t seed = 42;
  config::SamplingStrategy sampling = config::SamplingStrategy::kLatinHypercube;
  bool use_screening = true;          // keep the lowest-χ² starts before solving
  double screen_keep_fraction = 0.5;  // keep max(3, ⌊fraction·n⌋)
  double degeneracy_threshold = 0.1;  // basins among fits within this relative χ² of the best
  double basin_distance = 0.2;        // max |Δx|/(bound width) over physical parameters
  int max_groups = 0;                 // ≤ 0: one group per rank (capped at the starts)
  static MultiStartOptions FromConfig(const config::MultiStart& m);
  void Validate() const;
};

struct StartOutcome {
  int index = 0;              // 0 = the configured start, then LHS points
  std::vector<double> start;  // optimiser space
  double start_chi2 = 0.0;
  bool solved = false;  // survived screening
  int group = -1;
  bool usable = false;
  double chi2 = 0.0;
  int iterations = 0;
  std::vector<double> x;
};

struct Basin {
  std::vector<int> members;  // start indices, best first
  double best_chi2 = 0.0;
};

struct MultiStartSummary {
  std::vector<StartOutcome> starts;
  int best = -1;  // index into starts
  std::vector<Basin> basins;
  bool degeneracy = false;
  int groups = 0;
  std::vector<std::string> parameter_names;
  std::string Table() const;
  std::string ToJson() const;
};

// Collective over `world`. The returned result is complete on the ranks of group 0
// (which includes world rank 0); on other ranks only `summary` is filled.
nlsq::NlsqRunResult RunMultiStartFit(const Comm& world, const config::Config& cfg,
                                     const nlsq::NlsqRunOptions& options,
                                     const MultiStartOptions& ms, const Logger& logger,
                                     MultiStartSummary* summary);

}  // namespace homodyne::global
