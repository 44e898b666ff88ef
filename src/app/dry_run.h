// homodyne --dry-run: the memory plan of a fit without running it.
#pragma once

#include <string>

#include "config/config.h"
#include "nlsq/fit_data.h"
#include "parallel/comm.h"

namespace homodyne {

// Collective. Reads the data layout (metadata, selection, partition; not the values),
// plans the memory of every rank and prints on rank 0: the data summary, one line per
// rank (points, blocks, rows, estimate, budget, strategy, window) and the partition
// table. Writes nothing. Bad input raises the agreed Error as a real run would.
void RunDryRun(const Comm& comm, const config::Config& cfg, const std::string& data_file_override,
               const nlsq::FitMemoryOptions& options, const Logger& logger);

}  // namespace homodyne
