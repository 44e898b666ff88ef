#include "nlsq/xpcs_fit.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_bridge.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/progress.h"
#include "io/content_digest.h"
#include "io/distributed_loader.h"
#include "lsq/covariance.h"
#include "lsq/optimality.h"
#include "nlsq/degeneracy.h"
#include "nlsq/fit_data.h"
#include "nlsq/fit_quality.h"
#include "nlsq/gradient_monitor.h"
#include "nlsq/initial_scaling.h"
#include "nlsq/streaming_scaling.h"
#include "nlsq/xpcs_problem.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {
namespace {

// The rank's blocks as model row tiles on the fit grid (loader index − 1).
std::vector<std::vector<model::RowTile>> BlocksOf(const io::LocalData& local, int rank) {
  std::vector<std::vector<model::RowTile>> blocks;
  std::size_t next = 0;
  for (int b = local.plan.first_block(rank); b < local.plan.end_block(rank); ++b) {
    const std::size_t n_tiles = local.plan.BlockTiles(b).size();
    std::vector<model::RowTile> tiles;
    for (std::size_t k = 0; k < n_tiles; ++k, ++next) {
      const io::LocalTile& lt = local.tiles.at(next);
      tiles.push_back({lt.tile.angle, static_cast<int>(lt.tile.row - 1),
                       static_cast<int>(lt.tile.col_begin - 1), static_cast<int>(lt.tile.count),
                       local.values.data() + lt.offset, nullptr, 2.0});
    }
    blocks.push_back(std::move(tiles));
  }
  HOMODYNE_CHECK(next == local.tiles.size(), "tiles do not match the plan's blocks");
  return blocks;
}

std::string CpuModel() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// Runs a replicated solve. Evaluation errors are agreed inside the data passes, so a failure
// of the solver itself happens on every rank: agreed here, so that the job ends with one
// message instead of the MPI_Abort backstop. An error already agreed (a checkpointed stop,
// an agreed pass error) passes through.
template <typename Fn>
SolverSummary SolveAgreed(const Comm& comm, Fn&& solve) {
  SolverSummary summary;
  std::exception_ptr failure;
  try {
    summary = solve();
  } catch (const Error& e) {
    if (IsAgreed(e)) throw;
    failure = std::current_exception();
  } catch (...) {
    failure = std::current_exception();
  }
  AgreeOnError(comm, failure);
  return summary;
}

// optimization.nlsq's settings of a local solve.
lsq::SolverOptions SolverOptionsOf(const config::NlsqOptions& n) {
  lsq::SolverOptions so;
  so.max_iterations = n.max_iterations;
  so.ftol = n.tolerance;
  so.xtol = n.xtol;
  so.gtol = n.gtol;
  so.method = n.local_solver;
  return so;
}

// The optimiser's scaling parameters: its first entries (model/parameter_layout.h).
int NumScaling(const model::ParameterLayout& layout) {
  return layout.num_optimised() - layout.num_physical_varying();
}

// Why the monitor cannot watch a solve of this layout (empty: it can).
std::string MonitorInactiveReason(const GradientMonitorOptions& o,
                                  const model::ParameterLayout& layout) {
  if (!o.enable) return "gradient_monitoring.enable is false";
  if (NumScaling(layout) == 0) {
    return fmt::format("the {} layout fits no per-angle scaling to compare the physics with",
                       model::ToString(layout.layout()));
  }
  if (layout.num_physical_varying() == 0) return "no physical parameter is fitted";
  return "";
}

// xpcsjax's name of a fitted parameter: physics in kernel names (v_beta → beta,
// phi0_het → phi0), per-angle scaling contrast[k], Fourier coefficients contrast_c1/_s1.
std::string XpcsjaxName(const std::string& name, model::ScalingLayout layout) {
  if (name == "v_beta") return "beta";
  if (name == "phi0_het") return "phi0";
  for (const std::string group : {"contrast", "offset"}) {
    if (name.rfind(group + "_", 0) != 0) continue;
    const std::string rest = name.substr(group.size() + 1);
    if (layout == model::ScalingLayout::kIndividual) return fmt::format("{}[{}]", group, rest);
    if (rest.rfind("cos", 0) == 0) return group + "_c" + rest.substr(3);
    if (rest.rfind("sin", 0) == 0) return group + "_s" + rest.substr(3);
  }
  return name;
}
// The session's data problem seen through another scaling layout (the constant layout of
// the two-stage path): the same data passes, its own optimiser space, no penalty rows.
class LayoutView : public lsq::LeastSquaresProblem {
 public:
  LayoutView(XpcsProblem& data, model::ParameterLayout layout)
      : data_(data), layout_(std::move(layout)) {}
  int num_parameters() const override { return layout_.num_optimised(); }
  void Evaluate(std::span<const double> x, bool with_derivatives,
                lsq::NormalEquations& out) override {
    const model::NormalEquations e = data_.EvaluateExpanded(layout_.Expand(x), with_derivatives);
    out.chi2 = e.chi2;
    out.n_points = data_.total_points();
    if (!with_derivatives) return;
    const model::NormalEquations o = layout_.ToOptimiser(e);
    out.gradient = o.jtr;
    out.hessian = o.jtj;
  }
  double ZeroModelChi2(std::span<const double> x) override {
    return data_.ZeroScalingChi2(layout_.Expand(x));
  }
  // The stop check is the data problem's (XpcsFitSession::SetStopCheck sets it there).

 private:
  XpcsProblem& data_;
  model::ParameterLayout layout_;
};

// xpcsjax's heterodyne default of regularization.lambda (its template writes 1.0).
constexpr double kTwoComponentDefaultLambda = 0.01;

}  // namespace

model::RobustLoss FitLossFromConfig(const config::Config& cfg, double sigma) {
  model::RobustLoss loss;
  const std::string& name = cfg.optimization.nlsq.loss;
  loss.kind =
      model::ParseLossKind(name.empty() ? "soft_l1" : name, "optimization.nlsq.loss", cfg.source);
  const double f_scale = cfg.optimization.nlsq.f_scale;
  if (!(std::isfinite(f_scale) && f_scale > 0.0)) {
    ThrowBadInput(fmt::format("f_scale must be a positive finite number (got {})", f_scale),
                  cfg.source, "optimization.nlsq.f_scale");
  }
  // homodyne and xpcsjax apply the loss to the unscaled residual c2_exp - c2_model with
  // f_scale in c2 units; the kernels see r/sigma, so their C is f_scale/sigma. The objective
  // C²·Σw·ρ((r/C)²) is then in chi2's units.
  loss.f_scale = f_scale / sigma;
  return loss;
}

model::LayoutOptions LayoutOptionsFromConfig(const config::Config& cfg) {
  const auto& ad = cfg.optimization.nlsq.anti_degeneracy;
  model::LayoutOptions o;
  o.mode = ad.enable ? model::ParsePerAngleMode(ad.per_angle_mode,
                                                "optimization.nlsq.anti_degeneracy.per_angle_mode")
                     : model::PerAngleMode::kIndividual;
  o.constant_scaling_threshold = ad.constant_scaling_threshold;
  o.fourier_order = ad.fourier_order;
  if (o.mode == model::PerAngleMode::kConstantAveraged) {
    ThrowBadInput("constant_averaged is a CMC mode; use individual, auto, constant or fourier",
                  cfg.source, "optimization.nlsq.anti_degeneracy.per_angle_mode");
  }
  o.Validate();
  return o;
}

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

std::vector<model::ScalingEstimate> XpcsFitSession::EstimateScalingOf(
    model::ScalingQuantiles rule) {
  Impl& s = *impl_;
  PhaseTimes::Scope t(s.phases, "initial_scaling");
  // xpcsjax pools two_component's full matrix; homodyne pools its fit grid.
  const ScalingPool pool = s.mode == model::AnalysisMode::kTwoComponent ? ScalingPool::kFullMatrix
                                                                        : ScalingPool::kFitGrid;
  return s.stream ? EstimateInitialScalingStreaming(s.comm, s.local, *s.stream, s.scaling_bounds,
                                                    rule, pool)
                  : EstimateInitialScaling(s.comm, s.local, s.scaling_bounds, rule, pool);
}

XpcsFitSession::XpcsFitSession(const Comm& comm, const config::Config& cfg,
                               const NlsqRunOptions& options, const Logger& logger)
    : impl_(std::make_unique<Impl>(comm, cfg, options, logger)) {
  Impl& s = *impl_;
  s.mode = cfg.analysis_mode;

  // 1. Data: rank 0 selects and partitions, every rank reads its blocks.
  {
    PhaseTimes::Scope t(s.phases, "load");
    if (options.in_memory != nullptr) {
      s.local = io::DistributeInMemory(comm, *options.in_memory,
                                       /*first_row=*/s.mode == model::AnalysisMode::kTwoComponent);
      s.memory.reason = "data in memory";
    } else {
      FitData data = LoadFitData(comm, cfg, LoadOptionsFromConfig(cfg, options.data_file),
                                 {options.strategy, options.memory_limit_bytes, options.threads,
                                  options.ranks_on_node, options.stream_window_points},
                                 logger);
      s.local = std::move(data.local);
      s.memory = data.plan;
      s.stream = std::move(data.stream);
    }
  }
  const io::DatasetMetadata& meta = s.local.meta;
  logger.Info("{} {} points on {} rank(s) in {:.2f} s", s.stream ? "set up streaming of" : "loaded",
              s.local.plan.total_points(), comm.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t_start).count());
  if (meta.n_frames < 3) {
    RunCollectively(comm, [&] {
      ThrowBadInput(fmt::format("{} frame(s) selected; a fit needs at least 3", meta.n_frames),
                    meta.file, "analyzer_parameters.start_frame/end_frame");
    });
  }
  const int n_phi = static_cast<int>(meta.n_angles());
  s.phi = meta.phi_values();
  std::vector<double> t_fit(meta.t.begin() + 1, meta.t.end());  // t = 0 excluded
  const model::Geometry geometry = GeometryFromConfig(cfg, meta.q_physics);
  logger.Info("data: {} angle(s) {}, q = {:.6g} 1/Å, {} frames (dt = {} s), {} fitted pairs", n_phi,
              fmt::join(s.phi, ","), meta.q_physics, meta.n_frames, meta.dt,
              s.local.plan.total_points());
  logger.Debug("{}", s.local.plan.Table());

  // 2. Layout and starting point.
  const model::LayoutOptions layout_options = LayoutOptionsFromConfig(cfg);
  s.monitor = RunCollectively(comm, [&] {
    return GradientMonitorOptions::FromConfig(cfg.optimization.nlsq.anti_degeneracy);
  });
  s.resolved = model::ResolveScalingLayout(layout_options, n_phi);
  s.scaling_bounds = {cfg.contrast.min, cfg.contrast.max, cfg.offset.min, cfg.offset.max};
  // xpcsjax holds its two_component constant layout at Q95 estimates; every other layout and
  // start, and the homodyne modes, use Q90 (heterodyne spec §3; physics spec §1.9).
  const bool quantile_fixed = s.mode == model::AnalysisMode::kTwoComponent &&
                              s.resolved == model::ScalingLayout::kFixedConstant;
  const std::vector<model::ScalingEstimate> estimates = EstimateScalingOf(
      quantile_fixed ? model::ScalingQuantiles::kQ95 : model::ScalingQuantiles::kQ90);
  if (quantile_fixed) s.quantile_fixed = estimates;
  s.index = model::ExpandedIndex(s.mode, n_phi);
  const ExpandedStart start = RunCollectively(comm, [&] {
    return ExpandedStartFromConfig(cfg, s.mode, estimates, options.initial,
                                   UnsetStart::kNlsqDefault);
  });
  const std::vector<double>& expanded = start.values;
  // Held physics (EffectiveParameter::vary false) stay at their starting value: no optimiser
  // column, so the solvers, the global search and the DOF never see them.
  s.held = HeldPhysicsFromConfig(cfg, s.index, expanded);
  s.estimates = estimates;
  s.layout = std::make_unique<model::ParameterLayout>(
      model::ParameterLayout::Create(s.resolved, s.mode, s.phi, estimates,
                                     layout_options.fourier_order)
          .WithHeldPhysics(s.held.vary, s.held.values));
  logger.Info("per-angle scaling: {} ({} optimised parameters)", model::ToString(s.resolved),
              s.layout->num_optimised());
  if (s.layout->num_optimised() == 0) {
    RunCollectively(comm, [&] {
      ThrowBadInput(fmt::format("nothing to fit: every physical parameter is held and the {} "
                                "per-angle layout fits no scaling",
                                model::ToString(s.resolved)),
                    cfg.source, "initial_parameters.fixed_parameters/active_parameters");
    });
  }
  if (s.layout->num_physical_held() > 0) {
    std::vector<std::string> held;
    for (int p = 0; p < s.index.n_phys; ++p) {
      if (!s.layout->PhysicalVaries(p)) {
        held.push_back(fmt::format(
            "{} = {:.6g}", model::PhysicalParameterNames(s.mode)[static_cast<std::size_t>(p)],
            s.held.values[static_cast<std::size_t>(p)]));
      }
    }
    logger.Info("held parameters (not fitted): {}", fmt::join(held, ", "));
  }
  model::Bounds expanded_bounds = start.bounds;
  const bool xpcsjax_bounds = s.mode == model::AnalysisMode::kTwoComponent &&
                              s.resolved == model::ScalingLayout::kIndividual &&
                              ApplyTwoComponentIndividualBounds(cfg, s.index, expanded_bounds);
  s.bounds = s.layout->OptimiserBounds(expanded_bounds);
  s.x0 = options.start.empty() ? s.layout->FromExpanded(expanded) : options.start;
  if (xpcsjax_bounds) {
    logger.Info(
        "per-angle scaling: every contrast in [{:g}, {:g}], xpcsjax's individual bounds "
        "(configured contrast bounds other than [0, 1] would replace them)",
        model::kFourierContrastRange.lower, model::kFourierContrastRange.upper);
    // The start from the config or the data (the Q90 estimates, a configured contrast) may
    // lie outside them; an explicit start (options.start) is the caller's.
    if (options.start.empty()) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(2 * n_phi); ++i) {
        s.x0[i] = std::clamp(s.x0[i], s.bounds.lower[i], s.bounds.upper[i]);
      }
    }
  }

  // 3. The problem on this communicator.
  XpcsProblemSetup setup;
  setup.mode = s.mode;
  setup.geometry = geometry;
  setup.t = t_fit;
  setup.phi_deg = s.phi;
  if (s.stream) {
    setup.stream = s.stream.get();
  } else {
    setup.blocks = BlocksOf(s.local, comm.rank());
  }
  setup.first_block = s.local.plan.first_block(comm.rank());
  setup.total_blocks = s.local.plan.n_blocks();
  setup.sigma = options.sigma;
  s.loss = FitLossFromConfig(cfg, options.sigma);
  s.f_scale = cfg.optimization.nlsq.f_scale;
  if (s.loss.robust()) {
    logger.Info(
        "loss: {}, f_scale {:g}: the fit minimises sum w (f_scale/sigma)^2 rho(((c2_exp - "
        "c2_model)/f_scale)^2) (sigma {:g}), the value the search stages log as chi2; the "
        "summary reports the plain chi2 beside it",
        model::ToString(s.loss.kind), cfg.optimization.nlsq.f_scale, options.sigma);
  }
  setup.loss = s.loss;
  setup.threads = options.threads;
  setup.worker_start = options.worker_start;
  {
    PhaseTimes::Scope t(s.phases, "setup");
    s.problem = std::make_unique<XpcsProblem>(comm, std::move(setup), *s.layout);
  }
  // L3 (xpcsjax's rule, two_component only): regularization.mode other than none adds the
  // CV rows wherever there is a contrast and an offset per angle to spread.
  const auto& ad = cfg.optimization.nlsq.anti_degeneracy;
  if (s.mode == model::AnalysisMode::kTwoComponent && ad.regularization_mode != "none" &&
      (s.resolved == model::ScalingLayout::kIndividual ||
       s.resolved == model::ScalingLayout::kFourier)) {
    const double lambda = ad.regularization_lambda.value_or(kTwoComponentDefaultLambda);
    s.problem->SetScalingPenalty(ScalingSpreadPenalty(s.index, lambda, options.sigma));
    logger.Info(
        "NLSQ: per-angle scaling regularised (regularization.mode {}): rows sqrt({:.6g})·CV of "
        "the contrasts and of the offsets",
        ad.regularization_mode, lambda);
  }

  s.n_t = static_cast<std::int64_t>(t_fit.size());
  s.n_data = static_cast<std::int64_t>(n_phi) * s.n_t * s.n_t;  // homodyne's DOF convention
  // Held physics are not parameters of the fit: they count in no layout's DOF.
  const int held = s.layout->num_physical_held();
  s.p_eff = s.resolved == model::ScalingLayout::kAveraged ? s.index.size() - held
            : (s.resolved == model::ScalingLayout::kFixedConstant ||
               s.resolved == model::ScalingLayout::kConstantAveraged)
                ? s.index.n_phys - held
                : s.layout->num_optimised();
}

XpcsFitSession::~XpcsFitSession() = default;

const Comm& XpcsFitSession::comm() const { return impl_->comm; }
const std::vector<double>& XpcsFitSession::x0() const { return impl_->x0; }
const std::vector<double>& XpcsFitSession::lower() const { return impl_->bounds.lower; }
const std::vector<double>& XpcsFitSession::upper() const { return impl_->bounds.upper; }
const std::vector<std::string>& XpcsFitSession::parameter_names() const {
  return impl_->layout->names();
}
int XpcsFitSession::ParameterIndex(std::string_view name) const {
  const auto& names = parameter_names();
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}
std::optional<double> XpcsFitSession::HeldValue(std::string_view name) const {
  const model::ParameterLayout& l = *impl_->layout;
  const int p = model::PhysicalParameterIndex(impl_->mode, name);
  if (p < 0 || l.PhysicalVaries(p)) return std::nullopt;
  return l.fixed()[static_cast<std::size_t>(impl_->index.phys(p))];
}
int XpcsFitSession::num_physical() const { return impl_->layout->num_physical_varying(); }
std::string XpcsFitSession::DataDescription() {
  Impl& s = *impl_;
  // The digest costs a look at every value: in core a pass over memory, streamed one read
  // of the file; computed once, when the first checkpoint store needs it.
  if (s.content_digest.empty()) {
    s.content_digest = s.stream ? DigestStreamedData(s.comm, s.local, *s.stream)
                                : io::DigestLocalData(s.comm, s.local);
  }
  const io::DatasetMetadata& meta = s.local.meta;
  return checkpoint::DescribeData(s.content_digest, meta.q_physics, s.phi, meta.n_frames, meta.dt,
                                  s.problem->total_points());
}

double XpcsFitSession::Chi2At(const std::vector<double>& x) {
  lsq::NormalEquations eq;
  impl_->problem->Evaluate(x, false, eq);
  return eq.chi2;
}

double XpcsFitSession::DataChi2At(const std::vector<double>& x) {
  return impl_->problem->DataChi2(x);
}

const ScalingSpreadPenalty& XpcsFitSession::scaling_penalty() const {
  return impl_->problem->scaling_penalty();
}

void XpcsFitSession::Chi2Batch(std::span<const std::vector<double>> xs, std::vector<double>& chi2) {
  impl_->problem->EvaluateChi2Batch(xs, chi2);
}

std::int64_t XpcsFitSession::total_points() const { return impl_->problem->total_points(); }

std::int64_t XpcsFitSession::time_points() const { return impl_->n_t; }

bool XpcsFitSession::streamed() const { return impl_->stream != nullptr; }

// The problem on every stride-th row (built once per stride); the whole problem for
// stride ≤ 1 or a streamed fit.
XpcsProblem& XpcsFitSession::RowsProblem(int stride) {
  Impl& s = *impl_;
  if (stride <= 1 || s.stream) return *s.problem;
  std::unique_ptr<XpcsProblem>& rows = s.row_problems[stride];
  if (!rows) {
    rows = s.problem->OnRows(stride);
    rows->SetStopCheck(s.stop);
  }
  return *rows;
}

void XpcsFitSession::SetStopCheck(const std::function<bool()>& stop) {
  Impl& s = *impl_;
  s.stop = stop;
  s.problem->SetStopCheck(stop);
  for (auto& [stride, rows] : s.row_problems) rows->SetStopCheck(stop);
}

void XpcsFitSession::Chi2BatchOnRows(std::span<const std::vector<double>> xs,
                                     std::vector<double>& chi2, int stride) {
  RowsProblem(stride).EvaluateChi2Batch(xs, chi2);
}

const model::RobustLoss& XpcsFitSession::loss() const { return impl_->loss; }

const model::RobustLoss& XpcsFitSession::problem_loss() const { return impl_->problem->loss(); }

void XpcsFitSession::SetProblemLoss(const model::RobustLoss& loss) {
  Impl& s = *impl_;
  s.problem->SetLoss(loss);
  for (auto& [stride, rows] : s.row_problems) rows->SetLoss(loss);
}

std::int64_t XpcsFitSession::PointsOnRows(int stride) { return RowsProblem(stride).total_points(); }

double XpcsFitSession::ReducedChi2(double chi2) const {
  return chi2 / static_cast<double>(impl_->n_data - impl_->p_eff);
}

SolverSummary XpcsFitSession::SummaryAt(const std::vector<double>& x, lsq::Termination termination,
                                        std::string message) {
  Impl& s = *impl_;
  SolverSummary summary;
  s.problem->Evaluate(x, true, summary.final_equations);
  // The label is earned as for any solve (optimality.h): a point that does not pass the
  // optimality test is not "converged", whatever stopped the method that found it.
  summary.optimality =
      lsq::MeasureOptimality(x, summary.final_equations, s.bounds.lower, s.bounds.upper);
  const bool optimal = lsq::IsOptimal(summary.optimality, s.cfg.optimization.nlsq.tolerance,
                                      s.cfg.optimization.nlsq.gtol);
  summary.termination = optimal                                       ? lsq::Termination::kConverged
                        : termination == lsq::Termination::kConverged ? lsq::Termination::kStalled
                                                                      : termination;
  summary.message = fmt::format("{}; {}: cosine {:.3g}, Gauss-Newton decrement {:.3g}", message,
                                optimal ? "optimal" : "not optimal", summary.optimality.cosine,
                                summary.optimality.decrement);
  summary.x = x;
  summary.initial_chi2 = summary.final_equations.chi2;
  summary.final_chi2 = summary.final_equations.chi2;
  summary.iterations = 0;
  summary.evaluations = 1;
  summary.chi2_history = {summary.final_chi2};
  // No solve: the monitor (if it applies) saw no iteration.
  const std::string inactive = MonitorInactiveReason(s.monitor, *s.layout);
  summary.gradient_monitor = inactive.empty()
                                 ? GradientMonitor(s.monitor, NumScaling(*s.layout)).Report()
                                 : InactiveGradientMonitor(s.monitor, inactive);
  for (std::size_t i = 0; i < x.size(); ++i) {
    summary.at_lower_bound.push_back(x[i] <= s.bounds.lower[i]);
    summary.at_upper_bound.push_back(x[i] >= s.bounds.upper[i]);
  }
  return summary;
}

SolverSummary XpcsFitSession::Solve(const std::vector<double>& x0, bool print_progress) {
  return Solve(x0, print_progress, impl_->options.checkpoints);
}

SolverSummary XpcsFitSession::Solve(
    const std::vector<double>& x0, bool print_progress,
    const std::optional<checkpoint::CheckpointSettings>& checkpoints) {
  Impl& s = *impl_;
  lsq::SolverOptions so = SolverOptionsOf(s.cfg.optimization.nlsq);
  so.parameter_names = s.layout->names();
  so.print_petsc_monitors = s.comm.is_root() && print_progress;
  const double dof = static_cast<double>(s.n_data - s.p_eff);
  const Logger& logger = s.logger;
  Progress progress(print_progress ? logger : Logger::Silent(), "NLSQ");
  // The gradient monitor reads the Jᵀr the solver has at each accepted iterate: it adds no
  // pass and changes nothing in the solve.
  const std::string monitor_inactive = MonitorInactiveReason(s.monitor, *s.layout);
  std::optional<GradientMonitor> monitor;
  if (monitor_inactive.empty()) monitor.emplace(s.monitor, NumScaling(*s.layout));
  // Under a robust loss the solver's value is the loss objective, not χ² (reported after).
  const std::string value_name = s.problem->loss().robust() ? "objective" : "chi2";
  lsq::IterationCallback callback = [&](const lsq::IterationInfo& it) {
    if (monitor && it.iteration > 0 && !it.gradient.empty()) {
      monitor->Observe(it.iteration, it.gradient);
    }
    if (!print_progress) return;
    logger.Debug("  iter {:>4}  {} {:>16.9e}  reduced {:>11.5g}  |g| {:>10.3e}  step {:>10.3e}",
                 it.iteration, value_name, it.chi2, it.chi2 / dof, it.gradient_norm, it.step_norm);
    progress.Update(fmt::format("iteration {}, {} {:.6e}, reduced {:.5g}, {:.1f} s", it.iteration,
                                value_name, it.chi2, it.chi2 / dof, progress.elapsed()));
  };
  if (print_progress) {
    logger.Info("NLSQ: {} parameters, {} points on {} rank(s) × {} thread(s)",
                s.layout->num_optimised(), s.problem->total_points(), s.comm.size(),
                s.options.threads);
  }
  PhaseTimes::Scope t(s.phases, "fit");
  SolverSummary summary =
      SolveOn(*s.problem, x0, s.bounds.lower, s.bounds.upper, so, callback, checkpoints);
  summary.gradient_monitor =
      monitor ? monitor->Report() : InactiveGradientMonitor(s.monitor, monitor_inactive);
  summary.gradient_monitor.unobserved_iterations =
      monitor ? std::max(0, summary.iterations - summary.gradient_monitor.n_observations) : 0;
  progress.Done(fmt::format("{} iteration(s), {} {:.6e}, reduced {:.5g}, {:.1f} s",
                            summary.iterations, value_name, summary.final_chi2,
                            summary.final_chi2 / dof, progress.elapsed()));
  return summary;
}

SolverSummary XpcsFitSession::SolvePart(const std::vector<double>& x0,
                                        const std::vector<bool>& free,
                                        const std::vector<double>& angle_weights,
                                        int max_iterations, double ftol) {
  Impl& s = *impl_;
  lsq::SolverOptions so = SolverOptionsOf(s.cfg.optimization.nlsq);
  so.parameter_names = s.layout->names();
  so.max_iterations = max_iterations;
  so.ftol = ftol;
  so.method = "lm";
  std::vector<double> lower = s.bounds.lower, upper = s.bounds.upper;
  for (std::size_t i = 0; i < x0.size(); ++i) {
    if (!free[i]) lower[i] = upper[i] = x0[i];
  }
  PhaseTimes::Scope t(s.phases, "fit");
  // The weights hold for this solve only, however it ends.
  struct Unweight {
    XpcsProblem& problem;
    ~Unweight() { problem.SetAngleWeights({}); }
  } unweight{*s.problem};
  s.problem->SetAngleWeights(angle_weights);
  return SolveAgreed(s.comm,
                     [&] { return lsq::SolveBounded(*s.problem, x0, lower, upper, so, {}); });
}

SolverSummary XpcsFitSession::SolveQuantileScaling(
    const std::vector<double>& physics, bool print_progress,
    const std::optional<checkpoint::CheckpointSettings>& checkpoints) {
  Impl& s = *impl_;
  if (s.quantile_fixed.empty()) s.quantile_fixed = EstimateScalingOf(model::ScalingQuantiles::kQ95);
  LayoutView fixed(*s.problem, model::ParameterLayout::FixedConstant(s.mode, s.quantile_fixed)
                                   .WithHeldPhysics(s.held.vary, s.held.values));
  HOMODYNE_CHECK(static_cast<int>(physics.size()) == fixed.num_parameters(),
                 "one value per varying physical parameter");
  const std::size_t n_scaling = s.x0.size() - physics.size();
  const std::vector<double> lower(s.bounds.lower.begin() + static_cast<std::ptrdiff_t>(n_scaling),
                                  s.bounds.lower.end());
  const std::vector<double> upper(s.bounds.upper.begin() + static_cast<std::ptrdiff_t>(n_scaling),
                                  s.bounds.upper.end());
  lsq::SolverOptions so = SolverOptionsOf(s.cfg.optimization.nlsq);
  so.parameter_names.assign(s.layout->names().begin() + static_cast<std::ptrdiff_t>(n_scaling),
                            s.layout->names().end());
  so.print_petsc_monitors = s.comm.is_root() && print_progress;
  PhaseTimes::Scope t(s.phases, "fit");
  return SolveOn(fixed, physics, lower, upper, so, {}, checkpoints);
}

SolverSummary XpcsFitSession::SolveOn(
    lsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const lsq::SolverOptions& so, const lsq::IterationCallback& callback,
    const std::optional<checkpoint::CheckpointSettings>& checkpoints) {
  Impl& s = *impl_;
  return SolveAgreed(s.comm, [&] {
    if (!checkpoints) return lsq::SolveBounded(problem, x0, lower, upper, so, callback);
    return checkpoint::SolveWithCheckpoints(s.comm, problem, x0, lower, upper, so, callback,
                                            *checkpoints, DataDescription(), s.logger);
  });
}

const std::vector<double>& XpcsFitSession::phi_deg() const { return impl_->phi; }
const model::ParameterLayout& XpcsFitSession::layout() const { return *impl_->layout; }

NlsqRunResult XpcsFitSession::Finish(const SolverSummary& summary) {
  Impl& s = *impl_;
  const model::ParameterLayout& layout = *s.layout;
  const model::ExpandedIndex& index = s.index;
  const io::DatasetMetadata& meta = s.local.meta;
  const int n_phi = static_cast<int>(s.phi.size());
  const auto& names = model::PhysicalParameterNames(s.mode);

  // Uncertainties on independent pairs (homodyne counts every pair twice in JᵀJ and so
  // understates σ by √2; the χ² and reduced χ² below keep its full-matrix convention).
  // With the L3 rows the solver's χ² is the objective; the report's is the data's.
  // Under a robust loss the solver's χ² is the robust objective and its JᵀJ the row-scaled
  // J̃ᵀJ̃: the covariance is SciPy curve_fit's, (J̃ᵀJ̃)⁻¹·C²Σ w·ρ/(m − n), and the report's
  // χ² the plain Σ w·r² of one extra pass with the linear loss.
  const ScalingSpreadPenalty& penalty = s.problem->scaling_penalty();
  const double data_objective =
      penalty.active() ? s.problem->DataChi2(summary.x) : summary.final_chi2;
  const model::RobustLoss& loss = s.problem->loss();
  const double data_chi2 = loss.robust() ? s.problem->PlainChi2(summary.x) : data_objective;
  const lsq::CovarianceResult cov = lsq::CovarianceFromNormalEquations(
      summary.final_equations.hessian, layout.num_optimised(), data_objective,
      s.problem->total_points(), layout.num_optimised());
  const std::vector<double> cov_expanded = layout.ExpandCovariance(cov.covariance);

  NlsqRunResult r;
  r.summary = summary;
  r.layout = std::string(model::ToString(s.resolved));
  r.n_optimised = layout.num_optimised();
  r.expanded = layout.Expand(summary.x);
  r.expanded_names = index.Names(s.mode);
  r.initial_expanded = layout.Expand(s.x0);
  for (int e = 0; e < index.size(); ++e) {
    r.expanded_uncertainty.push_back(
        std::sqrt(std::max(cov_expanded[static_cast<std::size_t>(e * index.size() + e)], 0.0)));
  }
  r.unique_pairs = s.problem->total_points();
  r.q = meta.q_physics;
  r.phi_deg = s.phi;
  r.t_full = meta.t;
  r.passes = s.problem->passes();
  r.data_file = meta.file;
  r.data_format = std::string(io::ToString(meta.format));
  r.dt = meta.dt;
  r.phases = s.phases;
  r.memory = s.memory;

  FitReport& rep = r.report;
  rep.analysis_mode = std::string(model::ToString(s.mode));
  rep.per_angle_mode = r.layout;
  rep.physical_names = names;
  for (int p = 0; p < index.n_phys; ++p) {
    rep.physical_held.push_back(!layout.PhysicalVaries(p));
    rep.physical_values.push_back(r.expanded[static_cast<std::size_t>(index.phys(p))]);
    rep.physical_uncertainties.push_back(
        r.expanded_uncertainty[static_cast<std::size_t>(index.phys(p))]);
  }
  rep.phi_deg = s.phi;
  for (int k = 0; k < n_phi; ++k) {
    rep.contrast.push_back(r.expanded[static_cast<std::size_t>(index.contrast(k))]);
    rep.contrast_uncertainty.push_back(
        r.expanded_uncertainty[static_cast<std::size_t>(index.contrast(k))]);
    rep.offset.push_back(r.expanded[static_cast<std::size_t>(index.offset(k))]);
    rep.offset_uncertainty.push_back(
        r.expanded_uncertainty[static_cast<std::size_t>(index.offset(k))]);
  }
  rep.chi_squared = data_chi2;
  rep.loss = std::string(model::ToString(loss.kind));
  rep.f_scale = s.f_scale;
  rep.loss_objective = data_objective;
  rep.n_data = s.n_data;
  rep.n_params = s.p_eff;
  rep.reduced_chi_squared = data_chi2 / static_cast<double>(s.n_data - s.p_eff);
  if (penalty.active()) {
    RegularizationReport& reg = rep.regularization;
    reg.active = true;
    reg.mode = s.cfg.optimization.nlsq.anti_degeneracy.regularization_mode;
    reg.lambda = penalty.lambda();
    reg.penalty_rows = penalty.rows();
    reg.data_chi_squared = data_objective;  // the robust objective under a robust loss
    reg.total_chi_squared = data_objective;
    penalty.AddChi2(r.expanded, reg.total_chi_squared);
  }
  rep.n_time_points = static_cast<int>(s.n_t);
  rep.q = meta.q_physics;
  rep.convergence_status = std::string(lsq::ConvergenceStatus(summary.termination));
  rep.iterations = summary.iterations;
  const auto& opt_names = layout.names();
  rep.degeneracy =
      DiagnoseDegeneracy(opt_names, cov, summary.at_lower_bound, summary.at_upper_bound);
  FillDiagnostics(summary, rep);
  AssessQuality(summary, r.expanded, rep);
  r.phases = s.phases;  // with the noise level's pass, timed on first use
  rep.mpi_ranks = s.comm.size();
  rep.threads_per_rank = s.options.threads;
  rep.placement = s.options.placement;
  rep.hostname = CpuModel();
  rep.timestamp = IsoTimestampNow();
  rep.execution_time =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t_start).count();
  rep.diagnostics.wall_time_seconds = rep.execution_time;
  return r;
}

const NoiseLevel& XpcsFitSession::DataNoise() {
  Impl& s = *impl_;
  if (!s.noise) {
    PhaseTimes::Scope t(s.phases, "noise_level");
    s.noise = s.stream ? EstimateNoiseStreaming(s.comm, s.local, *s.stream)
                       : EstimateNoise(s.comm, s.local);
  }
  return *s.noise;
}

XpcsFitSession::NoiseFit XpcsFitSession::NoiseFitAt(const std::vector<double>& x) {
  Impl& s = *impl_;
  NoiseFit out;
  const NoiseLevel& noise = DataNoise();
  const std::vector<double> chi2_k = s.problem->Chi2PerAngle(x);
  const std::int64_t dof = s.problem->total_points() - s.layout->num_optimised();
  if (!noise.all_measurable() || dof <= 0 || chi2_k.size() != noise.angles.size()) return out;
  // As AssessQuality: SSR_k = χ²_k·σ²/w, in units of the angle's noise variance.
  const double to_ssr = s.options.sigma * s.options.sigma / model::RowTile{}.uniform_weight;
  double sum = 0.0;
  std::int64_t differences = 0;
  for (std::size_t k = 0; k < chi2_k.size(); ++k) {
    sum += chi2_k[k] * to_ssr / (noise.angles[k].sigma * noise.angles[k].sigma);
    differences += noise.angles[k].differences;
  }
  out.measured = true;
  out.reduced_chi2 = sum / static_cast<double>(dof);
  out.misfit_threshold = NoiseMisfitThreshold(differences);
  return out;
}

void XpcsFitSession::AssessQuality(const SolverSummary& summary,
                                   const std::vector<double>& expanded, FitReport& rep) {
  Impl& s = *impl_;
  const model::ParameterLayout& layout = *s.layout;
  FitQualityInput in;
  in.reduced_chi2 = rep.reduced_chi_squared;
  in.converged = summary.IsUsable();
  const auto& names = layout.names();
  for (std::size_t i = 0; i < summary.x.size(); ++i) {
    const bool physical =
        i >= summary.x.size() - static_cast<std::size_t>(layout.num_physical_varying());
    in.parameters.push_back(
        {names[i], physical, summary.at_lower_bound[i], summary.at_upper_bound[i]});
  }
  // χ² per angle is Σ w·r² with r = (data − model)/σ and every pair's weight w (homodyne's
  // full-matrix convention counts it twice): SSR_k = χ²_k·σ²/w.
  const NoiseLevel& noise = DataNoise();
  const double to_ssr = s.options.sigma * s.options.sigma / model::RowTile{}.uniform_weight;
  const std::int64_t dof = s.problem->total_points() - layout.num_optimised();
  rep.noise_degrees_of_freedom = dof;
  std::vector<std::string> unmeasured;
  for (std::size_t k = 0; k < noise.angles.size(); ++k) {
    const AngleNoise& a = noise.angles[k];
    rep.noise_sigma.push_back(a.measurable ? a.sigma : std::numeric_limits<double>::quiet_NaN());
    rep.noise_differences.push_back(a.differences);
    if (!a.measurable) {
      unmeasured.push_back(fmt::format("angle {} (phi = {:g} deg): {}", k, s.phi[k], a.reason));
    }
  }
  rep.noise_unmeasured = fmt::format("{}", fmt::join(unmeasured, "; "));
  for (const AngleNoise& a : noise.angles) in.noise_differences += a.differences;
  const std::vector<double>& chi2_k = rep.diagnostics.chi2_per_angle;
  if (noise.all_measurable() && dof > 0 && chi2_k.size() == noise.angles.size()) {
    double sum = 0.0;
    for (std::size_t k = 0; k < chi2_k.size(); ++k) {
      sum += chi2_k[k] * to_ssr / (noise.angles[k].sigma * noise.angles[k].sigma);
    }
    rep.noise_reduced_chi_squared = sum / static_cast<double>(dof);
    rep.noise_misfit_threshold = NoiseMisfitThreshold(in.noise_differences);
    in.noise_reduced_chi2 = rep.noise_reduced_chi_squared;
    // Held scaling: c2 is linear in each angle's (contrast, offset), so one Gauss-Newton step
    // on that 2×2 block at the answer's physics is its exact least-squares fit, and
    // gᵀH⁻¹g its χ² decrease.
    if (s.resolved == model::ScalingLayout::kFixedConstant ||
        s.resolved == model::ScalingLayout::kConstantAveraged) {
      const model::NormalEquations e = s.problem->EvaluateExpanded(expanded, true);
      double gain = 0.0;
      for (int k = 0; k < s.index.n_angles; ++k) {
        const int c = s.index.contrast(k), o = s.index.offset(k);
        const double gc = e.jtr[static_cast<std::size_t>(c)];
        const double go = e.jtr[static_cast<std::size_t>(o)];
        const double hcc = e.JtJ(c, c), hco = e.JtJ(c, o), hoo = e.JtJ(o, o);
        const double det = hcc * hoo - hco * hco;
        if (!(det > 0.0)) continue;  // no signal in this angle to fit a contrast to
        const double drop = (hoo * gc * gc - 2.0 * hco * gc * go + hcc * go * go) / det;
        const double sigma = noise.angles[static_cast<std::size_t>(k)].sigma;
        gain += drop * to_ssr / (sigma * sigma);
      }
      rep.held_scaling_gain = gain / static_cast<double>(dof);
      in.held_scaling_gain = rep.held_scaling_gain;
    }
  } else if (rep.noise_unmeasured.empty()) {
    rep.noise_unmeasured = dof > 0 ? "no angle" : "no degrees of freedom";
  }
  in.noise_unmeasured = rep.noise_unmeasured;
  in.robust_loss = rep.loss != "linear";
  const QualityAssessment q = AssessFitQuality(in);
  rep.quality_flag = std::string(ToString(q.flag));
  rep.quality_passed = q.passed;
  // The rules' warnings first, then those of the diagnostics (a gradient collapse), then why
  // the answer is a misfit.
  std::vector<std::string> warnings = q.warnings;
  warnings.insert(warnings.end(), rep.quality_warnings.begin(), rep.quality_warnings.end());
  warnings.insert(warnings.end(), q.misfit.begin(), q.misfit.end());
  rep.quality_warnings = std::move(warnings);
  rep.misfit_reasons = q.misfit;
}

void XpcsFitSession::FillDiagnostics(const SolverSummary& summary, FitReport& rep) {
  Impl& s = *impl_;
  const model::ParameterLayout& layout = *s.layout;
  NlsqDiagnosticsReport& d = rep.diagnostics;
  d.chi2_per_angle = s.problem->Chi2PerAngle(summary.x);
  const int n_scaling = NumScaling(layout);
  const auto& names = layout.names();
  for (int i = n_scaling; i < layout.num_optimised(); ++i) {
    d.parameter_names.push_back(XpcsjaxName(names[static_cast<std::size_t>(i)], s.resolved));
  }
  for (int i = 0; i < n_scaling; ++i) {
    d.parameter_names.push_back(XpcsjaxName(names[static_cast<std::size_t>(i)], s.resolved));
    d.scaling_fitted.push_back(summary.x[static_cast<std::size_t>(i)]);
  }
  switch (s.resolved) {
    case model::ScalingLayout::kFixedConstant:
    case model::ScalingLayout::kConstantAveraged:
      d.scaling_source = "quantile_fixed";
      break;
    case model::ScalingLayout::kAveraged:
      d.scaling_source = "averaged_then_fitted";
      for (const model::ScalingEstimate& e : s.estimates) {
        d.contrast_quantile.push_back(e.contrast);
        d.offset_quantile.push_back(e.offset);
      }
      d.contrast_initial_average = s.x0.at(0);
      d.offset_initial_average = s.x0.at(1);
      break;
    case model::ScalingLayout::kFourier:
      d.scaling_source = "fitted";
      d.fourier_basis_dim = n_scaling / 2;
      d.fourier_order = (d.fourier_basis_dim - 1) / 2;
      break;
    case model::ScalingLayout::kIndividual:
      d.scaling_source = "fitted";
      break;
  }
  d.convergence_reason = std::string(ToString(summary.termination));
  d.message = summary.message;
  d.n_function_evals = summary.evaluations + summary.objective_evaluations;
  d.n_iterations = summary.iterations;
  d.gradient_monitor = summary.gradient_monitor;
  if (!d.gradient_monitor.enabled && d.gradient_monitor.inactive_reason.empty()) {
    d.gradient_monitor.inactive_reason = "the answer did not come from a monitored local solve";
  }
  if (const std::string w = GradientCollapseWarning(d.gradient_monitor); !w.empty()) {
    rep.quality_warnings.push_back(w);
  }
}

NlsqRunResult RunNlsqFit(const Comm& comm, const config::Config& cfg, const NlsqRunOptions& options,
                         const Logger& logger) {
  XpcsFitSession session(comm, cfg, options, logger);
  const SolverSummary summary = session.Solve(session.x0(), options.print_progress);
  NlsqRunResult r = session.Finish(summary);
  for (const auto& w : r.report.quality_warnings) logger.Warn("{}", w);
  for (const auto& w : r.report.degeneracy.warnings) logger.Warn("{}", w);
  return r;
}

}  // namespace homodyne::nlsq
