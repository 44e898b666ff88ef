// DIR/run_report.yaml, written by rank 0 for every run: machine and placement, library
// versions, the effective config, the data, time per phase as min/max/mean across ranks,
// throughput, self-checks and the final status.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cmc/cmc_fit.h"
#include "config/config.h"
#include "core/phase_timer.h"
#include "core/placement.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"
#include "parallel/placement_report.h"

namespace homodyne {

struct RunDataSummary {
  std::string file;
  std::string format;  // aps_old | aps_u
  double q = 0.0;
  std::vector<double> phi_deg;
  std::int64_t frames = 0;  // N on the loader grid (t = 0 included)
  double dt = 0.0;
  std::int64_t fitted_points = 0;  // (i < j) pairs over all angles, t = 0 excluded
};

// Rank 0: from the NLSQ result when there is one, else from the data file's metadata
// (no matrix is read); nullopt when neither is available.
std::optional<RunDataSummary> SummariseData(const config::Config& cfg, const std::string& data_file,
                                            const nlsq::NlsqRunResult* nlsq);

struct RunReportInput {
  std::string command_line;
  std::optional<config::FitMethod> method = config::FitMethod::kNlsq;  // none: plots only
  int exit_code = 0;
  std::string
      status;  // converged | misfit | max_iter | not_converged | plotted | failed | checkpointed
  std::string message;  // solver message
  const config::Config* config = nullptr;
  const nlsq::NlsqRunResult* nlsq = nullptr;  // complete on rank 0
  const cmc::CmcRunResult* cmc = nullptr;     // complete on rank 0
  std::optional<RunDataSummary> data;         // rank 0
  std::string plots = "not requested";        // written | failed | not drawn | not requested
  bool pinned = false;                        // compute threads pinned to their PUs
  PhaseTimes phases;                          // this rank
  PlacementPlan placement;                    // this rank
  std::vector<RankPlacement> placements;      // every rank (GatherPlacements)
  // This rank's fixed costs so far (Environment::fixed_costs), the same names on every rank.
  std::vector<std::pair<std::string, double>> fixed_costs;
};

// Collective over `world` (reduces the phase times); rank 0 writes the file
// atomically and returns its text (other ranks return "").
std::string WriteRunReport(const Comm& world, const std::filesystem::path& dir,
                           const RunReportInput& input);

}  // namespace homodyne
