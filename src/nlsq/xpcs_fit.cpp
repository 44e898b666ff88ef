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
#include "config/key_paths.h"
#include "core/clock.h"
#include "core/errors.h"
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
#include "nlsq/xpcs_fit_impl.h"
#include "nlsq/xpcs_problem.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {

int detail::NumScaling(const model::ParameterLayout& layout) {
  return layout.num_optimised() - layout.num_physical_varying();
}

namespace {

using detail::NumScaling;

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

}  // namespace

lsq::SolverOptions SolverOptionsOf(const config::NlsqOptions& n) {
  lsq::SolverOptions so;
  so.max_iterations = n.max_iterations;
  so.ftol = n.tolerance;
  so.xtol = n.xtol;
  so.gtol = n.gtol;
  so.method = n.local_solver;
  if (auto msg = so.Validate(); !msg.empty())
    ThrowBadInput(msg, {}, std::string(config::keys::kNlsq));
  return so;
}

namespace {

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
  void StepAccepted() override { data_.StepAccepted(); }
  // The stop check is the data problem's (XpcsFitSession::SetStopCheck sets it there).

 private:
  XpcsProblem& data_;
  model::ParameterLayout layout_;
};
std::string PerAngleModeKey() {
  return config::keys::Key(config::keys::kNlsqAntiDegeneracy, "per_angle_mode");
}

}  // namespace

model::RobustLoss FitLossFromConfig(const config::Config& cfg, double sigma) {
  model::RobustLoss loss;
  loss.kind = cfg.optimization.nlsq.loss;
  const double f_scale = cfg.optimization.nlsq.f_scale;
  if (!(std::isfinite(f_scale) && f_scale > 0.0)) {
    ThrowBadInput(fmt::format("f_scale must be a positive finite number (got {})", f_scale),
                  cfg.source, config::keys::Key(config::keys::kNlsq, "f_scale"));
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
  o.mode = ad.enable ? ad.per_angle_mode : model::PerAngleMode::kIndividual;
  o.constant_scaling_threshold = ad.constant_scaling_threshold;
  o.fourier_order = ad.fourier_order;
  if (o.mode == model::PerAngleMode::kConstantAveraged) {
    ThrowBadInput("constant_averaged is a CMC mode; use individual, auto, constant or fourier",
                  cfg.source, PerAngleModeKey());
  }
  o.Validate();
  return o;
}

std::vector<model::ScalingEstimate> XpcsFitSession::EstimateScalingOf(
    model::ScalingQuantiles rule) {
  return detail::EstimateScaling(*impl_, rule);
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
    const std::int64_t before = s.stream ? s.stream->windows_loaded() : 0;
    s.content_digest = s.stream ? DigestStreamedData(s.comm, s.local, *s.stream)
                                : io::DigestLocalData(s.comm, s.local);
    s.ledger->CountIn("checkpoint_digest", PassKind::kData,
                      s.stream ? detail::StreamReadsSince(*s.stream, before) : 1);
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

double XpcsFitSession::TimedSeconds() const {
  double sum = 0.0;
  for (const auto& [phase, seconds] : impl_->phases.seconds()) sum += seconds;
  return sum;
}

void XpcsFitSession::AddFitSeconds(double seconds) { impl_->phases.Add("fit", seconds); }

std::int64_t XpcsFitSession::time_points() const { return impl_->n_t; }

bool XpcsFitSession::streamed() const { return impl_->stream != nullptr; }

// The problem on every stride-th row (built once per stride; a streamed fit reads its rows
// into memory then); the whole problem for stride ≤ 1.
XpcsProblem& XpcsFitSession::RowsProblem(int stride) {
  Impl& s = *impl_;
  if (stride <= 1) return *s.problem;
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
  // Under a robust loss the solver's value is the loss objective, not χ²: the lines name it
  // (the plain χ² takes a pass of its own, done once at the end, XpcsFitSession::Finish).
  const std::string value_name = model::ObjectiveName(s.problem->loss());
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
  so.method = lsq::LocalMethod::kLm;
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

SolverSummary XpcsFitSession::SolveOnRows(const std::vector<double>& x0, int stride) {
  Impl& s = *impl_;
  lsq::SolverOptions so = SolverOptionsOf(s.cfg.optimization.nlsq);
  so.parameter_names = s.layout->names();
  XpcsProblem& rows = RowsProblem(stride);
  PhaseTimes::Scope t(s.phases, "fit");
  return SolveOn(rows, x0, s.bounds.lower, s.bounds.upper, so, {}, std::nullopt);
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
