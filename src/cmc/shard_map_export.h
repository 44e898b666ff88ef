// The affine map a shard's chains sample in (the mode and the Laplace factor L, u = centre +
// L·q), written as JSON when the environment variable HOMODYNE_CMC_MAP_DIR names a folder:
// bench/stan gives Stan the same coordinates. Nothing is written otherwise, and the map is
// never read back, so the run's results do not depend on it.
#pragma once

#include <string>
#include <vector>

#include "cmc/shard_posterior.h"

namespace homodyne::cmc {

struct ShardMapRecord {
  int shard = 0;
  std::vector<std::string> names;  // θ's names (optimiser order)
  const ShardPosteriorSetup* setup = nullptr;
  const ShardMode* mode = nullptr;  // null when the whitening was off
  const Whitening* whitening = nullptr;
  double cpu_seconds = 0.0;  // this thread's CPU time for the mode search and the whitening
};

// Writes HOMODYNE_CMC_MAP_DIR/shard_map_<shard>.json when that variable is set and not
// empty; an unwritable folder is an error naming it.
void ExportShardMapIfRequested(const ShardMapRecord& record);

// This thread's CPU time in seconds (for the record above).
double ThreadCpuSeconds();

}  // namespace homodyne::cmc
