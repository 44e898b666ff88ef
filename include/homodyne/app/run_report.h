// DIR/run_report.yaml, written by rank 0 for every run: machine and placement, library
// versions, the effective config, the data, time per phase as min/max/mean across ranks,
// throughput, self-checks and the final status.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "homodyne/config/config.h"
#include "homodyne/nlsq/xpcs_fit.h"
#include "homodyne/parallel/comm.h"
#include "homodyne/phase_timer.h"
#include "homodyne/placement.h"
#include "homodyne/placement_report.h"

namespace homodyne {

struct RunReportInput {
  std::string command_line;
  std::string method = "nlsq";
  int exit_code = 0;
  std::string status;   // converged | max_iter | failed
  std::string message;  // solver message
  const config::Config* config = nullptr;
  const nlsq::NlsqRunResult* nlsq = nullptr;  // complete on rank 0
  PhaseTimes phases;                          // this rank
  PlacementPlan placement;                    // this rank
  std::vector<RankPlacement> placements;      // every rank (GatherPlacements)
};

// Collective over `world` (reduces the phase times); rank 0 writes the file
// atomically and returns its text (other ranks return "").
std::string WriteRunReport(const Comm& world, const std::filesystem::path& dir,
                           const RunReportInput& input);

}  // namespace homodyne
