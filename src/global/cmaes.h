// A minimising CMA-ES (covariance matrix adaptation evolution strategy) over a box, for
// the global stage of the NLSQ fit (global_stage.h, docs/global.md).
//
// The strategy is Hansen's "The CMA Evolution Strategy: A Tutorial" (2016) with active
// (negative) recombination weights. It searches an unbounded z; a candidate's parameters
// are p = lb + (ub − lb)·logistic(z), so no candidate ever leaves the bounds and σ is a
// step in logit units of the normalised box (0.5 ≈ 12 % of the range at its centre,
// much less near a bound). Entries whose width is ≤ normalization_epsilon are held at
// the start value and not searched.
//
// Restarts (BIPOP as homodyne schedules it): runs alternate between a large population
// (2λ, the first run) and a small one (λ drawn uniformly from [max(4, ⌊λ/2⌋), λ]); each
// run starts, with probability ½, at the best point so far, else where the previous run
// started.
//
// Determinism: the strategy is small and replicated — every rank of the objective's
// communicator runs the same code on the same numbers. Its random numbers come from
// counter-based streams keyed by (seed, run, generation), never by rank, and the whole
// state between two generations is CmaesState, so a run resumed from a stored state
// repeats the uninterrupted run bit for bit, on any number of ranks or threads.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "config/config.h"

namespace homodyne::global {

// The choice of optimization.nlsq.cmaes.restart_strategy, read by the config reader.
using RestartStrategy = config::CmaesRestart;
std::string_view ToString(RestartStrategy s);  // its name in the config

struct CmaesOptions {
  int popsize = 0;            // base population λ; 0: 4 + ⌊3 ln n⌋ (n = searched entries)
  int max_generations = 100;  // per run
  double sigma = 0.5;         // initial step size (logit units)
  // A run ends when the largest coordinate standard deviation σ·√max(C_ii) falls below
  // tol_x, or when the population's χ² spread stays ≤ tol_fun·|best χ² of the generation|
  // for kFlatGenerations generations in a row.
  double tol_fun = 1e-8;
  double tol_x = 1e-8;
  RestartStrategy restart_strategy = RestartStrategy::kBipop;
  int max_restarts = 9;  // bipop: runs after the first
  std::uint64_t seed = 42;
  double normalization_epsilon = 1e-12;  // widths at most this are not searched

  static constexpr int kFlatGenerations = 5;
  // Bad input naming optimization.nlsq.cmaes.<field>.
  void Validate() const;
};

// Why a run (or the whole search) ended.
enum class CmaesStop : int {
  kNone = 0,
  kTolX = 1,
  kTolFun = 2,
  kMaxGenerations = 3,
  kNumerical = 4,    // the covariance became non-finite
  kMaxRestarts = 5,  // bipop: every run done
};
std::string_view ToString(CmaesStop s);  // tol_x, tol_fun, max_generations, ...

// One finished run.
struct CmaesRun {
  int popsize = 0;
  int generations = 0;
  double best_chi2 = 0.0;
  CmaesStop stop = CmaesStop::kNone;
};

// Everything between two generations (see Cmaes::state); n = searched entries.
struct CmaesState {
  int run = 0;                   // index of the current run
  int generation = 0;            // generations done in the current run
  int total_generations = 0;     // over all runs
  std::int64_t evaluations = 0;  // objective evaluations over all runs
  int popsize = 0;               // λ of the current run
  std::vector<double> mean;      // n, z space
  double sigma = 0.0;
  std::vector<double> covariance;  // n×n row-major
  std::vector<double> path_sigma, path_c;
  int flat_generations = 0;
  std::vector<double> run_start;  // z where the current run started
  std::vector<double> best_z;     // best candidate so far (z space)
  std::vector<double> best_x;     // and in parameter space (all entries)
  double best_chi2 = 0.0;         // +inf before the first finite value
  double run_best_chi2 = 0.0;     // best of the current run
  std::vector<CmaesRun> runs;     // finished runs
  bool finished = false;
  CmaesStop stop = CmaesStop::kNone;

  void Store(checkpoint::CheckpointRecord& r, const std::string& prefix) const;
  static CmaesState Load(const checkpoint::CheckpointRecord& r, const std::string& prefix);
};

struct CmaesSummary {
  std::vector<double> x;  // best point (parameter space)
  double chi2 = 0.0;
  int generations = 0;  // over all runs
  std::int64_t evaluations = 0;
  int restarts = 0;      // runs after the first
  int base_popsize = 0;  // λ before the bipop schedule
  std::vector<CmaesRun> runs;
  CmaesStop stop = CmaesStop::kNone;
  double seconds = 0.0;  // set by the caller (the strategy does not time itself)
};

// χ² of every candidate (chi2 resized to xs.size()); collective over the objective's
// communicator, identical bits on every rank. Non-finite values are ranked last.
using BatchObjective =
    std::function<void(std::span<const std::vector<double>> xs, std::vector<double>& chi2)>;

struct CmaesGeneration {
  int run = 0;
  int generation = 0;  // in the run, 1-based after the step
  int total_generations = 0;
  int popsize = 0;
  double generation_best = 0.0;  // best χ² of this generation
  double best_chi2 = 0.0;        // best so far
  double sigma = 0.0;
  std::int64_t evaluations = 0;
  bool run_ended = false;
  CmaesStop run_stop = CmaesStop::kNone;
};

class Cmaes {
 public:
  // x0 is clipped into the box; Validate()s the options. lower < upper or equal
  // (then the entry is fixed).
  Cmaes(CmaesOptions options, std::vector<double> x0, std::vector<double> lower,
        std::vector<double> upper);

  int num_searched() const { return static_cast<int>(free_.size()); }
  int base_popsize() const { return base_popsize_; }
  bool finished() const { return state_.finished; }
  const CmaesState& state() const { return state_; }
  // A state stored by an identical strategy (same options, start and bounds); bad input
  // if its sizes do not match.
  void Restore(CmaesState state);

  // One generation: sample, evaluate (one call of f), update; ends the run and starts
  // the next one (or finishes) when a stop criterion is met.
  CmaesGeneration Step(const BatchObjective& f);
  CmaesSummary Summary() const;

  // What determines the search (options, start, bounds), to check that a stored state
  // belongs to this strategy.
  std::vector<double> Setup() const;
  const CmaesOptions& options() const { return options_; }

  // The parameter point of a z vector (exposed for tests).
  std::vector<double> ToParameters(std::span<const double> z) const;

 private:
  void StartRun(int run, std::vector<double> start);
  // The run's record; then the next run (bipop) or the end of the search.
  void EndRun(CmaesStop stop);
  int RunPopsize(int run) const;

  CmaesOptions options_;
  std::vector<double> x0_, lower_, upper_;
  std::vector<int> free_;  // searched entries
  int base_popsize_ = 0;
  CmaesState state_;
};

}  // namespace homodyne::global
