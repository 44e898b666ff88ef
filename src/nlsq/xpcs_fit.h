// One NLSQ fit of XPCS two-time data, end to end on a communicator: distributed load,
// layout and starting point, bounded Gauss–Newton through TAO, covariance and quality.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/log.h"
#include "core/phase_timer.h"
#include "io/dataset.h"
#include "lsq/bounded_solver.h"
#include "model/parameter_layout.h"
#include "model/robust_loss.h"
#include "nlsq/fit_report.h"
#include "nlsq/gradient_monitor.h"
#include "nlsq/memory_plan.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/noise_level.h"
#include "nlsq/pass_ledger.h"
#include "nlsq/scaling_penalty.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

class XpcsProblem;

struct NlsqRunOptions {
  std::string data_file;  // --data-file (overrides the config's path)
  // Data already in memory on every rank (the public API): fitted in-core from it; the
  // config's data file, selection and memory settings are then not used.
  const io::DatasetView* in_memory = nullptr;
  std::map<std::string, double> initial;  // --initial-* (physical name → value)
  int threads = 1;                        // compute threads of this rank
  double sigma = 0.01;                    // residual scale (homodyne's default)
  bool print_progress = true;             // rank 0 prints one line per iteration
  std::vector<double> start;              // optional optimiser-space start (multistart)
  // Runs in each spawned compute thread (1..threads−1) at start (homodyne pins it to its
  // core); thread 0 is the caller's. Empty: threads are left where the OS puts them.
  std::function<void(int thread_index)> worker_start;
  // Runs first on each streaming read-ahead thread (block_stream.h; homodyne lets it run on
  // any core of the rank, not on thread 0's). Empty: it stays where it was created.
  std::function<void()> read_ahead_start;
  std::vector<std::string> placement;  // rank → NUMA → cores lines for the run report
  // Memory budget and data path (memory_plan.h): --strategy, --memory-limit (per rank).
  FitStrategy strategy = FitStrategy::kAuto;
  std::uint64_t memory_limit_bytes = 0;
  std::int64_t stream_window_points = 0;  // > 0: streaming windows of this size (tests)
  int ranks_on_node = 0;  // > 0: ranks sharing the node's memory (multistart rank groups)
  // Checkpoints, resume and graceful stop on signals (docs/checkpoints.md); unset: none.
  std::optional<checkpoint::CheckpointSettings> checkpoints;
};

// A local solve of the fit: the engine's summary and what the gradient-collapse monitor saw
// during it (gradient_monitor.h; the session fills it, the engine knows nothing of the
// per-angle scaling it watches).
struct SolverSummary : lsq::SolverSummary {
  SolverSummary() = default;
  // Implicit: the engine's answer, a solve the monitor did not watch (report still empty).
  SolverSummary(lsq::SolverSummary engine) : lsq::SolverSummary(std::move(engine)) {}
  GradientMonitorReport gradient_monitor;
};

struct NlsqRunResult {
  FitReport report;
  SolverSummary summary;
  std::vector<std::string> expanded_names;
  std::vector<double> expanded;  // [contrast_k…, offset_k…, physics]
  std::vector<double> expanded_uncertainty;
  std::vector<double> initial_expanded;  // the starting point
  std::string layout;                    // resolved per-angle layout
  int n_optimised = 0;
  std::int64_t unique_pairs = 0;  // fitted (i < j) pairs over all angles
  double q = 0.0;
  std::vector<double> phi_deg;
  std::vector<double> t_full;  // loader grid from 0 (for output files)
  int passes = 0;              // the problem's passes up to the answer (before the report's own)
  // Every data pass of the session by stage and kind, with the steps each stage accepted:
  // the problem's passes (the report's included) and the reads of the data alone.
  std::vector<StagePasses> pass_stages;
  // Streamed: the whole reads of the rank's stream up to the report (−1 in core): every pass
  // but a row subset's reads it once, so it checks the ledger.
  int stream_reads = -1;
  // Streamed: rank 0's timed passes (time, time reading, bytes read), in order.
  std::vector<StreamPassTiming> stream_passes;
  std::string data_file;
  std::string data_format;  // aps_old | aps_u
  double dt = 0.0;
  PhaseTimes phases;  // this rank's time per phase
  MemoryPlan memory;  // rank 0's plan (strategy, estimate, budget)
};

// A fit set up on a communicator: the data loaded (each rank its blocks), the layout,
// bounds, starting point and the least-squares problem. Solve may be called several
// times (multistart); Finish turns a solve into the full result.
class XpcsFitSession {
 public:
  // The session's state (xpcs_fit_impl.h, internal to src/nlsq: the constructor's phases and
  // the result's assembly live in their own files).
  struct Impl;

  // Collective over `comm` (which must outlive the session).
  XpcsFitSession(const Comm& comm, const config::Config& cfg, const NlsqRunOptions& options,
                 const Logger& logger);
  ~XpcsFitSession();
  XpcsFitSession(const XpcsFitSession&) = delete;
  XpcsFitSession& operator=(const XpcsFitSession&) = delete;

  const Comm& comm() const;               // the objective's communicator
  const std::vector<double>& x0() const;  // optimiser-space start
  const std::vector<double>& lower() const;
  const std::vector<double>& upper() const;
  const std::vector<std::string>& parameter_names() const;  // optimiser space
  int ParameterIndex(std::string_view name) const;          // into parameter_names(); −1: none
  // The value a held physical parameter is held at; nullopt when it is fitted or unknown.
  std::optional<double> HeldValue(std::string_view name) const;
  int num_physical() const;  // the varying physical parameters: the last entries of x
  // The input data for checkpoint identities (checkpoint::DescribeData): its content's
  // digest and selection. Collective the first time (the digest is summed over the ranks).
  std::string DataDescription();

  double Chi2At(const std::vector<double>& x);  // collective: the objective (penalty included)
  // Collective: χ² of the data alone (without the L3 penalty rows; = Chi2At without them).
  double DataChi2At(const std::vector<double>& x);
  // The L3 penalty rows of the objective (inactive: none; xpcs_fit.cpp says when).
  const ScalingSpreadPenalty& scaling_penalty() const;
  // Collective: χ² of every point, in one data pass and one reduction (each value has the
  // bits Chi2At gives it).
  void Chi2Batch(std::span<const std::vector<double>> xs, std::vector<double>& chi2);
  // Collective: the same on the points of every `stride`-th row of each angle's upper
  // triangle only (rows 0, stride, 2·stride, … of the fit grid, each with all its columns:
  // every lag, 1/stride of the points), for a search on large data. The blocks and their
  // reduction are the full problem's, so the values do not depend on the ranks either. A
  // streamed fit reads the rows into memory once, at the first call with that stride
  // (XpcsProblem::OnRows), and gives the in-core fit's bits. stride ≤ 1: Chi2Batch.
  // Every pass of this fit's problems (the whole and on rows) asks `stop` from now on
  // (lsq::LeastSquaresProblem::SetStopCheck); empty: never.
  void SetStopCheck(const std::function<bool()>& stop);
  void Chi2BatchOnRows(std::span<const std::vector<double>> xs, std::vector<double>& chi2,
                       int stride);
  std::int64_t PointsOnRows(int stride);  // collective: the points Chi2BatchOnRows sums
  std::int64_t total_points() const;      // the fit's points, all ranks
  // This rank's seconds in the session's timed phases so far (the solves' "fit", the noise
  // level, …), and the pipeline's way to add the time it spent between them to "fit".
  double TimedSeconds() const;
  void AddFitSeconds(double seconds);
  // The fit's loss (optimization.nlsq.loss and f_scale).
  const model::RobustLoss& loss() const;
  // The loss every pass of the session's problems uses from now on (the CMA-ES refinement's;
  // local, every rank must set the same) and the one in force now.
  void SetProblemLoss(const model::RobustLoss& loss);
  const model::RobustLoss& problem_loss() const;
  std::int64_t time_points() const;  // the fit grid's times (t = 0 excluded)
  bool streamed() const;             // the data are streamed from the file on each pass
  SolverSummary Solve(const std::vector<double>& x0, bool print_progress);  // collective
  // Collective: Solve with these checkpoint settings instead of the run's (nullopt: none).
  SolverSummary Solve(const std::vector<double>& x0, bool print_progress,
                      const std::optional<checkpoint::CheckpointSettings>& checkpoints);
  // Collective: a solve of part of the problem for the anti-degeneracy stage (no
  // checkpoints, no progress lines, the lm method): parameters with free[i] false held at
  // x0[i]; every point of angle k weighted by angle_weights[k] (empty: unweighted; the
  // problem is unweighted again afterwards).
  SolverSummary SolvePart(const std::vector<double>& x0, const std::vector<bool>& free,
                          const std::vector<double>& angle_weights, int max_iterations,
                          double ftol);
  // Collective: a local solve with optimization.nlsq's settings on the points of every
  // `stride`-th row only (the problem of Chi2BatchOnRows: the full problem's blocks and
  // reduction, so the bits do not depend on the ranks), for a screen of candidate starts on
  // large data. No checkpoints (the solve costs 1/stride of a full one, and a resume recomputes
  // it with the same bits), no progress lines; χ² and the summary are the rows'. stride ≤ 1:
  // the whole problem.
  SolverSummary SolveOnRows(const std::vector<double>& x0, int stride);
  // Collective: a solve of the physical parameters alone with every angle's contrast and
  // offset held at the Q95 quantile estimates of the data (two_component's constant layout's
  // values, heterodyne spec §6 L2 stage 1; held physics stay held). `physics` and the summary's x
  // are the varying physical parameters (the last num_physical() entries of the session's x); χ² is
  // the data's. Checkpoints as Solve's.
  SolverSummary SolveQuantileScaling(
      const std::vector<double>& physics, bool print_progress,
      const std::optional<checkpoint::CheckpointSettings>& checkpoints);
  const std::vector<double>& phi_deg() const;  // the kept angles [degrees]
  const model::ParameterLayout& layout() const;
  // Collective: a summary of the point x without solving (termination as given): its
  // normal equations, χ² and bound flags, for Finish.
  SolverSummary SummaryAt(const std::vector<double>& x, lsq::Termination termination,
                          std::string message);
  NlsqRunResult Finish(const SolverSummary& summary);  // collective
  // χ² / (n_data − p), the reduced χ² of the report.
  double ReducedChi2(double chi2) const;
  // Collective on its first call (one pass over the data, noise_level.h): the noise level of
  // every angle's data; later calls return the same.
  const NoiseLevel& DataNoise();
  // Collective: the point x against the noise level, as the report's quality verdict judges an
  // answer (one model pass for χ² by angle): the noise-based reduced χ² and the misfit
  // threshold (NoiseMisfitThreshold); `measured` false when some angle's noise level is not
  // measurable or there are no degrees of freedom.
  struct NoiseFit {
    bool measured = false;
    double reduced_chi2 = 0.0;
    double misfit_threshold = 0.0;
    bool misfit() const { return measured && reduced_chi2 >= misfit_threshold; }
  };
  NoiseFit NoiseFitAt(const std::vector<double>& x);

 private:
  XpcsProblem& RowsProblem(int stride);  // collective when it builds one
  // Collective: the report's nlsq_diagnostics fields for the answer `summary` (one model pass
  // for the χ² split by angle unless `chi2_per_angle` gives it).
  void FillDiagnostics(const SolverSummary& summary, FitReport& rep,
                       std::optional<std::vector<double>> chi2_per_angle);
  // Collective: the report's noise-based reduced χ², the held-scaling check and the quality
  // verdict (needs FillDiagnostics' χ² per angle).
  void AssessQuality(const SolverSummary& summary, const std::vector<double>& expanded,
                     FitReport& rep);
  // Collective: the per-angle quantile estimates of the data by `rule`, in core or streamed.
  std::vector<model::ScalingEstimate> EstimateScalingOf(model::ScalingQuantiles rule);
  // Collective and agreed: lsq::SolveBounded on `problem`, or with `checkpoints` its checkpointed
  // solve under this session's data description.
  SolverSummary SolveOn(lsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
                        const std::vector<double>& lower, const std::vector<double>& upper,
                        const lsq::SolverOptions& so, const lsq::IterationCallback& callback,
                        const std::optional<checkpoint::CheckpointSettings>& checkpoints);

  std::unique_ptr<Impl> impl_;
};

// Collective over `comm`; every rank returns the same result. Errors are agreed.
NlsqRunResult RunNlsqFit(const Comm& comm, const config::Config& cfg, const NlsqRunOptions& options,
                         const Logger& logger);

// The fit's loss (optimization.nlsq.loss) on residuals scaled by 1/sigma: its C is
// optimization.nlsq.f_scale (c2 units) / sigma. A bad-input Error naming f_scale when it is
// not a positive finite number.
model::RobustLoss FitLossFromConfig(const config::Config& cfg, double sigma);

// The per-angle mode the fit uses: anti_degeneracy.per_angle_mode when the system is
// enabled, else individual. (Unlike homodyne, static mode honours it too.)
model::LayoutOptions LayoutOptionsFromConfig(const config::Config& cfg);

// optimization.nlsq's settings of a local solve (a bad-input Error naming the section when
// they fail lsq::SolverOptions::Validate).
lsq::SolverOptions SolverOptionsOf(const config::NlsqOptions& n);

}  // namespace homodyne::nlsq
