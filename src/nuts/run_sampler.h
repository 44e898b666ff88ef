// The run loop around NutsChain: warmup then sampling, collecting draws and per-draw
// statistics, with an optional per-iteration callback that can stop the run cleanly
// (e.g. to checkpoint at a time limit). The sampler never prints or opens files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nuts/nuts_chain.h"

namespace homodyne::nuts {

struct NutsSummary {
  int num_warmup = -1;                         // warmup iterations run in this call
  int num_draws = -1;                          // sampling iterations run in this call
  double step_size = -1.0;                     // ε used for sampling (−1: warmup not finished)
  std::vector<double> inverse_metric;          // adapted M⁻¹ (diag or dense row-major)
  int num_divergent = -1;                      // divergent sampling transitions
  int num_max_treedepth = -1;                  // sampling transitions that hit max_tree_depth
  double mean_accept_stat = -1.0;              // over sampling transitions
  std::int64_t num_gradient_evaluations = -1;  // leapfrog steps, warmup + sampling
  double warmup_seconds = 0.0;                 // wall time of the warmup iterations
  double sampling_seconds = 0.0;               // wall time of the sampling iterations
  bool stopped_early = false;                  // the callback or max_iterations stopped the run
  std::string BriefReport() const;             // one log line
};

struct ChainRun {
  int dimension = 0;
  std::vector<double> draws;           // row-major num_draws × dimension
  std::vector<TransitionStats> stats;  // one per draw
  std::vector<TransitionStats> warmup_stats;
  NutsSummary summary;
  // Column `parameter` of the draws.
  std::vector<double> Parameter(int parameter) const;
};

// Called after every iteration; return false to stop (the chain can then be saved
// with SaveState() and resumed).
using IterationCallback = std::function<bool(const NutsChain&, const IterationResult&)>;

// Advances `chain` until it is done or the callback stops it, at most
// `max_iterations` iterations (−1: no limit).
ChainRun RunChain(NutsChain& chain, const IterationCallback& callback = {},
                  std::int64_t max_iterations = -1);

}  // namespace homodyne::nuts
