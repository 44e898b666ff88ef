// The state an XpcsFitSession holds and the helpers its files share (xpcs_fit.cpp: the solves;
// xpcs_fit_setup.cpp: the constructor's phases; xpcs_fit_result.cpp: the result and its
// report). Internal to src/nlsq.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config_bridge.h"
#include "io/distributed_loader.h"
#include "nlsq/block_stream.h"
#include "nlsq/fit_data.h"
#include "nlsq/gradient_monitor.h"
#include "nlsq/noise_level.h"
#include "nlsq/xpcs_fit.h"
#include "nlsq/xpcs_problem.h"

namespace homodyne::nlsq {

struct XpcsFitSession::Impl {
  const Comm& comm;
  const config::Config& cfg;
  NlsqRunOptions options;
  const Logger& logger;
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();
  model::AnalysisMode mode = model::AnalysisMode::kStatic;
  io::LocalData local;                  // streaming: values empty
  MemoryPlan memory;                    // in-core or streaming (fit_data.h)
  std::unique_ptr<BlockStream> stream;  // streaming: the rank's blocks from the file
  std::vector<double> phi;
  model::ScalingLayout resolved = model::ScalingLayout::kIndividual;
  std::unique_ptr<model::ParameterLayout> layout;
  model::RobustLoss loss;                         // the fit's (FitLossFromConfig)
  double f_scale = 1.0;                           // its f_scale as configured (c2 units)
  model::ScalingBounds scaling_bounds;            // the configured contrast/offset bounds
  std::vector<model::ScalingEstimate> estimates;  // the quantile estimates, per angle
  // two_component: the Q95 estimates that its constant layout and the two-stage path's
  // stage 1 hold (heterodyne spec §3, §6); empty until needed (SolveQuantileScaling).
  std::vector<model::ScalingEstimate> quantile_fixed;
  HeldPhysics held;  // per physical parameter: varies, and its start (held ones stay there)
  model::ExpandedIndex index;
  model::Bounds bounds;
  std::vector<double> x0;
  std::unique_ptr<XpcsProblem> problem;
  // The job's data passes by stage and kind (the problem's, and the reads of the data alone).
  std::shared_ptr<PassLedger> ledger = std::make_shared<PassLedger>();
  std::map<int, std::unique_ptr<XpcsProblem>> row_problems;  // problem->OnRows, by row stride
  std::function<bool()> stop;                                // SetStopCheck, for new row problems
  std::int64_t n_t = 0;
  std::int64_t n_data = 0;
  int p_eff = 0;
  PhaseTimes phases;
  GradientMonitorOptions monitor;   // anti_degeneracy.gradient_monitoring
  std::optional<NoiseLevel> noise;  // DataNoise, measured on first use
  std::string content_digest;       // of the fitted data, once a checkpoint needs it

  Impl(const Comm& c, const config::Config& cf, const NlsqRunOptions& o, const Logger& l)
      : comm(c), cfg(cf), options(o), logger(l) {}
};

namespace detail {

// Streamed: the whole reads of the rank's stream since it had loaded `windows_before`
// windows (a pass cut short counts as one).
int StreamReadsSince(const BlockStream& stream, std::int64_t windows_before);

// The optimiser's scaling parameters: its first entries (model/parameter_layout.h).
int NumScaling(const model::ParameterLayout& layout);

// Collective: the per-angle quantile estimates of the session's data by `rule`, in core or
// streamed.
std::vector<model::ScalingEstimate> EstimateScaling(XpcsFitSession::Impl& s,
                                                    model::ScalingQuantiles rule);

}  // namespace detail
}  // namespace homodyne::nlsq
