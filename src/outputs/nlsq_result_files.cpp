#include "outputs/nlsq_result_files.h"

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace homodyne::outputs {

using nlsq::AntiDegeneracyReport;
using nlsq::CorrelatedPair;
using nlsq::DegeneracyDiagnostics;
using nlsq::EquivalentMinimum;
using nlsq::GlobalSearchReport;
using nlsq::GradientMonitorReport;
using nlsq::kCorrelationWarning;
using nlsq::NlsqDiagnosticsReport;
using nlsq::RegularizationReport;
using nlsq::WeakDirection;

namespace {

using nlohmann::json;

double NanMean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (std::isfinite(x)) {
      s += x;
      ++n;
    }
  }
  return n > 0 ? s / n : std::nan("");
}

double Rms(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v) {
    if (std::isfinite(x)) {
      s += x * x;
      ++n;
    }
  }
  return n > 0 ? std::sqrt(s / n) : std::nan("");
}

// JSON has no NaN/Inf: write null for them.
json Number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// The loss in force and the objective the solver minimised (every result file has it).
json LossJson(const FitReport& r) {
  json j = {{"loss", r.loss},
            {"f_scale", Number(r.f_scale)},
            {"objective_minimised", LossObjectiveText(r)},
            {"objective_value", Number(r.loss_objective)}};
  return j;
}

}  // namespace

std::string ParametersJson(const FitReport& r) {
  json params;
  params["contrast"] = {{"value", Number(NanMean(r.contrast))},
                        {"uncertainty", Number(Rms(r.contrast_uncertainty))}};
  params["offset"] = {{"value", Number(NanMean(r.offset))},
                      {"uncertainty", Number(Rms(r.offset_uncertainty))}};
  for (std::size_t i = 0; i < r.physical_names.size(); ++i) {
    // vary false: held at this value by the config, not fitted (uncertainty 0).
    params[r.physical_names[i]] = {{"value", Number(r.physical_values[i])},
                                   {"uncertainty", Number(r.physical_uncertainties[i])},
                                   {"vary", !r.IsHeld(i)}};
  }
  json per_angle;
  per_angle["phi_angles_deg"] = r.phi_deg;
  per_angle["per_angle_mode"] = r.per_angle_mode;
  for (std::size_t k = 0; k < r.phi_deg.size(); ++k) {
    per_angle["contrast"].push_back(
        {{"value", Number(r.contrast[k])}, {"uncertainty", Number(r.contrast_uncertainty[k])}});
    per_angle["offset"].push_back(
        {{"value", Number(r.offset[k])}, {"uncertainty", Number(r.offset_uncertainty[k])}});
  }
  json j = {{"timestamp", r.timestamp},
            {"analysis_mode", r.analysis_mode},
            {"chi_squared", Number(r.chi_squared)},
            {"reduced_chi_squared", Number(r.reduced_chi_squared)},
            {"loss", LossJson(r)},
            {"noise_reduced_chi_squared", Number(r.noise_reduced_chi_squared)},
            {"convergence_status", r.convergence_status},
            {"quality_flag", r.quality_flag},
            {"misfit_reasons", r.misfit_reasons},
            {"parameters", params},
            {"per_angle", per_angle}};
  return j.dump(2) + "\n";
}

// The data's noise level per angle (NaN where not measurable, written as null).
json NoiseLevelJson(const FitReport& r) {
  json sigma = json::array();
  for (double s : r.noise_sigma) sigma.push_back(Number(s));
  json j = {{"method",
             "third differences along the lag-preserving direction: median, then "
             "3-sigma trimmed second moment"},
            {"sigma_per_angle", sigma},
            {"differences_per_angle", r.noise_differences}};
  j["unmeasured_reason"] = r.noise_unmeasured.empty() ? json(nullptr) : json(r.noise_unmeasured);
  return j;
}

json DegeneracyJson(const DegeneracyDiagnostics& d) {
  json correlation = json::array();
  const std::size_t n = d.names.size();
  for (std::size_t i = 0; i < n; ++i) {
    json row = json::array();
    for (std::size_t j = 0; j < n; ++j) row.push_back(Number(d.correlation[i * n + j]));
    correlation.push_back(row);
  }
  json pairs = json::array();
  for (const CorrelatedPair& p : d.correlated) {
    pairs.push_back({{"parameters", {p.first, p.second}}, {"correlation", Number(p.correlation)}});
  }
  json weakest = json::array();
  for (const WeakDirection& w : d.weakest) {
    json components = json::object();
    for (const auto& [name, c] : w.components) components[name] = Number(c);
    weakest.push_back(
        {{"relative_eigenvalue", Number(w.relative_eigenvalue)}, {"parameters", components}});
  }
  json equivalent = json::array();
  for (const EquivalentMinimum& m : d.equivalent_minima) {
    equivalent.push_back({{"parameter", m.parameter},
                          {"value", Number(m.value)},
                          {"answer_value", Number(m.answer_value)},
                          {"objective", Number(m.objective)},
                          {"answer_objective", Number(m.answer_objective)},
                          {"barrier_objective", Number(m.barrier_objective)},
                          {"on_rows", m.on_rows},
                          {"found_by", m.found_by}});
  }
  return {{"parameter_names", d.names},
          {"correlation_matrix", correlation},
          {"correlation_warning_threshold", kCorrelationWarning},
          {"correlated_pairs", pairs},
          {"least_identifiable_directions", weakest},
          {"parameters_at_bounds", d.at_bound},
          {"equivalent_minima", equivalent},
          {"warnings", d.warnings}};
}

json GlobalSearchJson(const GlobalSearchReport& g) {
  return {{"method", g.method},
          {"selected", g.selected},
          {"cmaes_skipped", g.cmaes_skipped},
          {"warmstart_ran", g.warmstart_ran},
          {"warmstart_termination", g.warmstart_termination},
          {"warmstart_chi_squared", Number(g.warmstart_chi_squared)},
          {"warmstart_reduced_chi2", Number(g.warmstart_reduced_chi2)},
          {"scale_ratio", Number(g.scale_ratio)},
          {"generations", g.generations},
          {"evaluations", g.evaluations},
          {"restarts", g.restarts},
          {"convergence_reason", g.convergence_reason},
          {"restart_strategy", g.restart_strategy},
          {"popsize", g.popsize},
          {"run_popsizes", g.run_popsizes},
          {"max_generations", g.max_generations},
          {"sigma", g.sigma},
          {"seed", g.seed},
          {"normalization_enabled", g.normalization_enabled},
          {"global_search_time_s", g.global_search_time_s},
          {"cmaes_chi_squared", Number(g.cmaes_chi_squared)},
          {"search_row_stride", g.search_row_stride},
          {"search_chi_squared_on_rows", Number(g.search_chi_squared_on_rows)},
          {"refinement", g.refinement},
          {"refined_chi_squared", Number(g.refined_chi_squared)},
          {"chi_squared_improvement", Number(g.chi_squared_improvement)}};
}

json Numbers(const std::vector<double>& v) {
  json out = json::array();
  for (double x : v) out.push_back(Number(x));
  return out;
}

// null when the monitor did not watch the answer's solve (the reason is beside it).
json GradientMonitorJson(const GradientMonitorReport& g) {
  if (!g.enabled) return nullptr;
  const bool observed = g.n_observations > 0;
  return {{"collapse_detected", observed ? json(g.collapse_detected()) : json()},
          {"trigger_count", g.trigger_count},
          {"first_collapse_iteration",
           g.first_collapse_iteration >= 0 ? json(g.first_collapse_iteration) : json()},
          {"collapsed_at_last_iteration", observed ? json(g.collapsed_at_end) : json()},
          {"low_ratio_observations", g.low_ratio_observations},
          {"min_gradient_ratio", Number(g.min_gradient_ratio)},
          {"max_gradient_ratio", Number(g.max_gradient_ratio)},
          {"last_gradient_ratio", Number(g.last_gradient_ratio)},
          {"n_observations", g.n_observations},
          {"unobserved_iterations", g.unobserved_iterations},
          {"ratio_threshold", g.ratio_threshold},
          {"consecutive_triggers", g.consecutive_triggers},
          {"response", g.response},
          {"response_executed", false},
          {"mechanism", g.mechanism}};
}

json AntiDegeneracyJson(const FitReport& r) {
  const AntiDegeneracyReport& a = r.anti_degeneracy;
  json hierarchical = nullptr;
  if (a.hierarchical_active && a.two_stage_stages > 0) {
    hierarchical = {{"hierarchical_stages", a.two_stage_stages},
                    {"hierarchical_stage1_chi2", Number(a.stage1_chi_squared)},
                    {"hierarchical_stage2_chi2", Number(a.stage2_chi_squared)},
                    {"stage_chi_squared", Number(a.stage_chi_squared)},
                    {"plain_chi_squared", Number(a.plain_chi_squared)},
                    {"chi_squared_fields_hold", StageValuesText(r)},
                    {"selected", a.selected}};
  } else if (a.hierarchical_active) {
    hierarchical = {{"outer_iterations", a.outer_iterations},
                    {"stop", a.stop},
                    {"chi_squared_per_outer_iteration", a.chi2},
                    {"last_physical_change", Number(a.physical_change)},
                    {"stage_chi_squared", Number(a.stage_chi_squared)},
                    {"plain_chi_squared", Number(a.plain_chi_squared)},
                    {"chi_squared_fields_hold", StageValuesText(r)},
                    {"selected", a.selected}};
  }
  json shear = a.inactive_reason.empty() ? json("not weighted") : json(a.inactive_reason);
  if (!a.shear_weights.empty()) {
    shear = {{"phi_deg", r.phi_deg}, {"weights", a.shear_weights}};
  }
  const NlsqDiagnosticsReport& d = r.diagnostics;
  json j = {{"per_angle_mode", r.per_angle_mode},
            {"hierarchical_active", a.hierarchical_active},
            {"hierarchical_inactive_reason", a.inactive_reason},
            {"hierarchical", hierarchical},
            {"regularization_active", r.regularization.active},
            {"shear_weighting", shear},
            {"chi2_per_angle", Numbers(d.chi2_per_angle)},
            {"scaling_source", d.scaling_source},
            {"fourier_basis_dim", d.fourier_basis_dim > 0 ? json(d.fourier_basis_dim) : json()},
            {"parameter_names", d.parameter_names},
            {"convergence_reason", d.convergence_reason},
            {"n_function_evals", d.n_function_evals},
            {"n_iterations", d.n_iterations},
            {"wall_time_seconds", Number(d.wall_time_seconds)},
            {"message", d.message},
            {"gradient_monitor", GradientMonitorJson(d.gradient_monitor)}};
  if (r.regularization.active) {
    const RegularizationReport& g = r.regularization;
    j["regularization_mode"] = g.mode;
    j["regularization_lambda_applied"] = Number(g.lambda);
    j["regularization_penalty_count"] = g.penalty_rows;
    j["regularization_data_residual_ssr"] = Number(g.data_chi_squared);
    j["regularization_total_ssr_with_penalty"] = Number(g.total_chi_squared);
  }
  if (!d.gradient_monitor.enabled) {
    j["gradient_monitor_inactive_reason"] = d.gradient_monitor.inactive_reason;
  }
  // The layout's extras (xpcsjax's names; fixed_constant is its "constant").
  if (d.scaling_source == "quantile_fixed") {
    j["contrast_per_angle_fixed"] = Numbers(r.contrast);
    j["offset_per_angle_fixed"] = Numbers(r.offset);
  } else if (d.scaling_source == "averaged_then_fitted") {
    j["averaged_contrast"] = Number(d.scaling_fitted.at(0));
    j["averaged_offset"] = Number(d.scaling_fitted.at(1));
    j["contrast_per_angle_quantile"] = Numbers(d.contrast_quantile);
    j["offset_per_angle_quantile"] = Numbers(d.offset_quantile);
    j["contrast_initial_average"] = Number(d.contrast_initial_average);
    j["offset_initial_average"] = Number(d.offset_initial_average);
    j["phi_angles"] = r.phi_deg;
    j["n_angles_joint"] = r.phi_deg.size();
  } else if (d.scaling_source == "fitted") {
    j["contrast_per_angle_fitted"] = Numbers(r.contrast);
    j["offset_per_angle_fitted"] = Numbers(r.offset);
    j["phi_angles"] = r.phi_deg;
    j["n_angles_joint"] = r.phi_deg.size();
    if (d.fourier_basis_dim > 0) {
      j["fourier_mode"] = "fourier";
      j["fourier_order"] = d.fourier_order;
      j["fourier_coeffs"] = Numbers(d.scaling_fitted);
      j["fourier_n_coeffs"] = d.scaling_fitted.size();
      j["fourier_reduction"] = static_cast<double>(d.scaling_fitted.size()) /
                               (2.0 * static_cast<double>(r.phi_deg.size()));
    }
  }
  return j;
}

std::string LossObjectiveText(const FitReport& r) {
  if (r.loss == "linear" || r.loss.empty()) {
    return "chi_squared = sum w r^2, r = (c2_exp - c2_model)/sigma (linear loss)";
  }
  return fmt::format(
      "sum w (f_scale/sigma)^2 rho_{}((d/f_scale)^2), d = c2_exp - c2_model, f_scale {:g} (c2 "
      "units, as homodyne applies SciPy's robust losses); chi_squared is the plain sum w "
      "(d/sigma)^2 at the answer",
      r.loss, r.f_scale);
}

std::string StageValuesText(const FitReport& r) {
  if (r.loss == "linear" || r.loss.empty()) return "chi_squared (linear loss)";
  return fmt::format(
      "the {} objective (f_scale {:g}) the fit minimised, not the plain chi_squared; the "
      "fields keep homodyne's names",
      r.loss, r.f_scale);
}

std::string AnalysisResultsJson(const FitReport& r) {
  json j = {
      {"method", "nlsq"},
      {"timestamp", r.timestamp},
      {"analysis_mode", r.analysis_mode},
      {"fit_quality",
       {{"chi_squared", Number(r.chi_squared)},
        {"reduced_chi_squared", Number(r.reduced_chi_squared)},
        {"degrees_of_freedom", r.n_data - r.n_params},
        {"n_parameters", r.n_params},
        {"held_parameters", r.HeldNames()},
        {"noise_reduced_chi_squared", Number(r.noise_reduced_chi_squared)},
        {"noise_degrees_of_freedom", r.noise_degrees_of_freedom},
        {"noise_misfit_threshold", Number(r.noise_misfit_threshold)},
        {"noise_level", NoiseLevelJson(r)},
        {"held_scaling_gain", Number(r.held_scaling_gain)},
        {"quality_flag", r.quality_flag},
        {"misfit_reasons", r.misfit_reasons}}},
      {"loss", LossJson(r)},
      {"dataset_info",
       {{"n_angles", r.phi_deg.size()},
        // homodyne's saver counts the frames with t = 0 (N = fit grid + 1).
        {"n_time_points", static_cast<std::int64_t>(r.n_time_points + 1) * (r.n_time_points + 1)},
        {"total_data_points", static_cast<std::int64_t>(r.phi_deg.size()) * (r.n_time_points + 1) *
                                  (r.n_time_points + 1)},
        {"q_value", r.q}}},
      {"optimization_summary",
       {{"convergence_status", r.convergence_status},
        {"iterations", r.iterations},
        {"execution_time", r.execution_time}}},
      {"degeneracy", DegeneracyJson(r.degeneracy)},
      {"nlsq_diagnostics", AntiDegeneracyJson(r)},
      {"recovery_actions", r.recovery_actions}};
  if (r.global_search) {
    j["global_search"] = GlobalSearchJson(*r.global_search);
    j["global_search"]["chi_squared_fields_hold"] = StageValuesText(r);
  }
  return j.dump(2) + "\n";
}

std::string ConvergenceMetricsJson(const FitReport& r) {
  const double reduction = r.reduced_chi_squared < 1.0 ? 1.0 - r.reduced_chi_squared : 0.0;
  json j = {{"convergence",
             {{"status", r.convergence_status},
              {"iterations", r.iterations},
              {"execution_time", r.execution_time},
              {"final_chi_squared", Number(r.chi_squared)},
              {"chi_squared_reduction", Number(reduction)}}},
            {"loss", LossJson(r)},
            {"recovery_actions", r.recovery_actions},
            {"quality_flag", r.quality_flag},
            {"device_info",
             {{"platform", "cpu"},
              {"device", r.hostname},
              {"device_kind", r.cpu_model},
              {"n_devices", r.mpi_ranks},
              {"mpi_ranks", r.mpi_ranks},
              {"threads_per_rank", r.threads_per_rank},
              {"placement", r.placement}}},
            {"quality_validation_passed", r.quality_passed},
            {"quality_warnings", r.quality_warnings},
            {"quality_checks",
             {{"reduced_chi_squared", Number(r.reduced_chi_squared)},
              {"noise_reduced_chi_squared", Number(r.noise_reduced_chi_squared)},
              {"converged", r.convergence_status == "converged"},
              {"misfit", !r.misfit_reasons.empty()}}},
            {"misfit_reasons", r.misfit_reasons}};
  return j.dump(2) + "\n";
}

std::string HomodyneResultsJson(const FitReport& r) {
  json j = {
      {"method", "nlsq"},
      {"analysis_mode", r.analysis_mode},
      {"success", r.convergence_status != "failed"},
      {"optimization_time", r.execution_time},
      {"device_config",
       {{"platform", "cpu"}, {"mpi_ranks", r.mpi_ranks}, {"threads_per_rank", r.threads_per_rank}}},
      {"parameters", r.FullVector()},
      {"diagnostics",
       {{"chi_squared", Number(r.chi_squared)},
        {"converged", r.convergence_status == "converged"}}},
      {"loss", LossJson(r)}};
  return j.dump(2) + "\n";
}

void WriteNlsqResultFiles(const std::filesystem::path& output_dir, const FitReport& report) {
  HOMODYNE_CHECK(report.contrast.size() == report.phi_deg.size() &&
                     report.offset.size() == report.phi_deg.size() &&
                     report.physical_names.size() == report.physical_values.size(),
                 "inconsistent fit report");
  const auto nlsq_dir = output_dir / "nlsq";
  EnsureDirectory(nlsq_dir);
  WriteFileAtomically(nlsq_dir / "parameters.json", ParametersJson(report));
  WriteFileAtomically(nlsq_dir / "analysis_results_nlsq.json", AnalysisResultsJson(report));
  WriteFileAtomically(nlsq_dir / "convergence_metrics.json", ConvergenceMetricsJson(report));
  WriteFileAtomically(output_dir / "homodyne_results.json", HomodyneResultsJson(report));
}

}  // namespace homodyne::outputs
