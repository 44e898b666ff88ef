// Bayesian sampling of the homodyne model's posterior on XPCS data by Consensus Monte Carlo:
// the data's points are split into shards, each shard's posterior is sampled by NUTS
// chains, and the shards' draws are combined into one posterior. Shards are spread over
// the ranks of an MPI communicator, the chains of a shard over the rank's threads; the
// draws depend on the seed only, not on the number of ranks or threads.
//
//   homodyne::CmcOptions options;
//   options.mode = homodyne::AnalysisMode::kStatic;
//   homodyne::CmcSummary posterior = homodyne::FitCmc(MPI_COMM_WORLD, data, options);
//   std::cout << posterior.FullReport();
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "homodyne/data.h"
#include "homodyne/export.h"
#include "homodyne/model.h"
#include "homodyne/nlsq.h"

namespace homodyne {

struct CmcOptions {
  AnalysisMode mode = AnalysisMode::kStatic;
  double stator_rotor_gap = 2.0e6;  // L [Å] (laminar_flow)
  // Bounds and starting values; the prior of a parameter is a normal truncated to its
  // bounds, centred on them, with a quarter of their width as standard deviation.
  std::vector<ParameterSetting> parameters;
  // kAuto: one contrast/offset for all angles from 3 angles on, else one per angle.
  // kFourier is not available for sampling.
  PerAngleScaling per_angle = PerAngleScaling::kAuto;
  int shards = 0;               // 0: chosen from the number of points; else ≥ 1
  int chains = 4;               // per shard, ≥ 1 (R-hat needs 2 or more)
  int warmup = 500;             // adaptation iterations per chain (not kept)
  int draws = 1500;             // kept draws per chain, ≥ 1
  long long seed = 42;          // ≥ 0; the same seed gives the same draws
  double target_accept = 0.85;  // in (0, 1); laminar_flow uses at least 0.9
  int max_tree_depth = 10;      // 1…30
  // The noise standard deviation of c2 when it is known: σ is fixed at it (> 0) instead of
  // sampled with the half-normal prior on the data's noise scale.
  std::optional<double> known_sigma;
  int threads = 1;              // compute threads per rank (≥ 1): chains of a shard in parallel
  bool print_progress = false;  // rank 0 prints the sampling's progress
  // Chains start at this NLSQ answer (of the same data and mode) and, when
  // nlsq_informed_priors is true, the physical parameters' priors are centred on it, with
  // twice its uncertainty as width. Unset: true for the homodyne modes, false for
  // two_component (its intervals under-cover with them: docs/cmc.md).
  std::optional<NlsqSummary> warm_start;
  std::optional<bool> nlsq_informed_priors;
  // RequestStop() (config_fit.h) ends the run at its next safe point with homodyne::Error
  // of kind kCheckpointed on every rank; its state is written to stop_directory (empty: a
  // folder "homodyne-stop-<pid of rank 0>" in the system's temporary directory).
  bool stop_on_request = false;
  std::string stop_directory;
  // Throws homodyne::Error (kBadInput) naming the first invalid field.
  HOMODYNE_API void Validate() const;
};

struct PosteriorEstimate {
  std::string name;
  double mean = 0.0;
  double std = 0.0;   // posterior standard deviation
  bool held = false;  // held at `mean` (ParameterSetting::fixed), not sampled: std 0
};

struct CmcShardSummary {
  int shard = 0;
  long long points = 0;          // the shard's (t1 < t2) pairs over all angles
  double max_rhat = 0.0;         // split rank-normalised R-hat, worst parameter (NaN: 1 chain)
  double min_ess = 0.0;          // effective sample size, worst parameter (bulk or tail)
  double divergence_rate = 0.0;  // fraction of kept draws that diverged
  double acceptance_rate = 0.0;  // mean acceptance statistic of the kept draws
  bool used = true;              // kept in the combination
  std::string rejection;         // why not
};

// Whether the chains agree (split rank-normalised R-hat of every sampled parameter in every
// shard, docs/cmc.md).
enum class CmcStatus {
  kConverged,     // every shard's max R-hat below 1.1
  kNotConverged,  // some shard's max R-hat at or above 1.1: the chains disagree
  kUnchecked,     // R-hat could not be computed (one chain per shard): not a convergence claim
};
// "converged", "not_converged", "unchecked".
HOMODYNE_API std::string_view ToString(CmcStatus status);

struct CmcSummary {
  CmcStatus status = CmcStatus::kUnchecked;
  std::vector<PosteriorEstimate> physical;
  std::vector<double> phi_deg;
  std::vector<PosteriorEstimate> contrast;                       // one per angle
  std::vector<PosteriorEstimate> offset;                         // one per angle
  ScalingLayout per_angle_scaling = ScalingLayout::kIndividual;  // the layout sampled
  std::vector<CmcShardSummary> shards;
  int shards_used = 0;
  double max_rhat = 0.0;
  double min_ess = 0.0;
  int chains = 0;
  int warmup = 0;
  int draws = 0;                      // per chain
  std::vector<std::string> warnings;  // disagreement between shards
  int ranks = 1;
  int threads_per_rank = 1;
  double seconds = 0.0;  // wall time of the sampling, as rank 0 measured it

  HOMODYNE_API std::string BriefReport() const;  // one line: convergence, shards, time
  HOMODYNE_API std::string FullReport() const;   // every parameter's mean and std, shards, warnings
};

// Collective over `comm`: every rank passes the same data and options and receives the
// same summary. Needs MPI and PETSc initialised: construct a homodyne::Session first
// (session.h). Bad options or data throw homodyne::Error (kBadInput) on every rank alike.
HOMODYNE_API CmcSummary FitCmc(MPI_Comm comm, const XpcsData& data, const CmcOptions& options);
// The same sampling of matrices held by the caller, read in place (the shards take their
// rows from them: no copy). Every rank's view shows the same values. Bit for bit the
// sampling of the XpcsData with the same values.
HOMODYNE_API CmcSummary FitCmc(MPI_Comm comm, const XpcsDataView& data, const CmcOptions& options);

}  // namespace homodyne
