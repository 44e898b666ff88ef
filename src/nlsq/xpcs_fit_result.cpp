// XpcsFitSession's result: the answer with its covariance, the report's fields, the noise
// level of the data and the quality verdict.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/choices.h"
#include "core/clock.h"
#include "lsq/covariance.h"
#include "lsq/optimality.h"
#include "nlsq/degeneracy.h"
#include "nlsq/fit_quality.h"
#include "nlsq/xpcs_fit_impl.h"

namespace homodyne::nlsq {
namespace {

std::string CpuModel() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
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

// The report's physical parameters and per-angle scaling: values, uncertainties, held flags.
void FillParameterValues(const XpcsFitSession::Impl& s, const NlsqRunResult& r, FitReport& rep) {
  const model::ParameterLayout& layout = *s.layout;
  const model::ExpandedIndex& index = s.index;
  const int n_phi = static_cast<int>(s.phi.size());
  rep.physical_names = model::PhysicalParameterNames(s.mode);
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
}

// The closing line of the data passes: a streamed fit's cost is their number times a read.
void LogPasses(const PassLedger& ledger, const Logger& logger) {
  std::string stages;
  for (const StagePasses& st : ledger.stages()) {
    stages += (stages.empty() ? "" : "; ") + DescribePasses(st);
  }
  const int steps = ledger.accepted_steps();
  logger.Info("NLSQ data passes: {} for {} accepted steps ({} per accepted step): {}",
              ledger.total(), steps,
              steps > 0 ? fmt::format("{:.2f}", static_cast<double>(ledger.total()) / steps)
                        : std::string("n/a"),
              stages);
}

// The plain χ² at the answer (the objective itself under the linear loss). Streamed under a
// robust loss, the plain χ² and the χ² per angle share one read of the data.
struct PlainAtAnswer {
  double chi2 = 0.0;
  std::optional<std::vector<double>> per_angle;
};

PlainAtAnswer PlainChi2AtAnswer(XpcsFitSession::Impl& s, const std::vector<double>& x,
                                double data_objective) {
  PlainAtAnswer out{data_objective, std::nullopt};
  const model::RobustLoss& loss = s.problem->loss();
  if (!loss.robust()) return out;
  if (s.stream) {
    XpcsProblem::PlainAndPerAngle both = s.problem->PlainChi2AndPerAngle(x);
    out.chi2 = both.plain_chi2;
    out.per_angle = std::move(both.per_angle);
  } else {
    out.chi2 = s.problem->PlainChi2(x);
  }
  // The progress lines gave the objective; here the plain χ² beside it, once.
  s.logger.Info("NLSQ: {} {:.10g} at the answer; plain chi2 {:.10g} (reduced {:.6g})",
                model::ObjectiveName(loss), data_objective, out.chi2,
                out.chi2 / static_cast<double>(s.n_data - s.p_eff));
  return out;
}

}  // namespace

NlsqRunResult XpcsFitSession::Finish(const SolverSummary& summary) {
  Impl& s = *impl_;
  const PassLedger::Label report_passes(*s.ledger, "report");
  const model::ParameterLayout& layout = *s.layout;
  const model::ExpandedIndex& index = s.index;
  const io::DatasetMetadata& meta = s.local.meta;

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
  PlainAtAnswer plain = PlainChi2AtAnswer(s, summary.x, data_objective);
  const double data_chi2 = plain.chi2;
  std::optional<std::vector<double>> chi2_per_angle = std::move(plain.per_angle);
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
  FillParameterValues(s, r, rep);
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
    reg.mode = std::string(
        config::ChoiceName(s.cfg.optimization.nlsq.anti_degeneracy.regularization_mode));
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
  FillDiagnostics(summary, rep, std::move(chi2_per_angle));
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
  r.pass_stages = s.ledger->stages();
  if (s.stream) {
    r.stream_reads = detail::StreamReadsSince(*s.stream, 0);
    r.stream_passes = s.stream->pass_timings();
  }
  LogPasses(*s.ledger, s.logger);
  return r;
}

const NoiseLevel& XpcsFitSession::DataNoise() {
  Impl& s = *impl_;
  if (!s.noise) {
    PhaseTimes::Scope t(s.phases, "noise_level");
    const std::int64_t before = s.stream ? s.stream->windows_loaded() : 0;
    s.noise = s.stream ? EstimateNoiseStreaming(s.comm, s.local, *s.stream)
                       : EstimateNoise(s.comm, s.local);
    s.ledger->CountIn("noise_level", PassKind::kData,
                      s.stream ? detail::StreamReadsSince(*s.stream, before) : 1);
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

void XpcsFitSession::FillDiagnostics(const SolverSummary& summary, FitReport& rep,
                                     std::optional<std::vector<double>> chi2_per_angle) {
  Impl& s = *impl_;
  const model::ParameterLayout& layout = *s.layout;
  NlsqDiagnosticsReport& d = rep.diagnostics;
  d.chi2_per_angle =
      chi2_per_angle ? std::move(*chi2_per_angle) : s.problem->Chi2PerAngle(summary.x);
  const int n_scaling = detail::NumScaling(layout);
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

}  // namespace homodyne::nlsq
