#include "outputs/xpcsjax_result_files.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "outputs/nlsq_result_files.h"
#include "outputs/npz_file.h"

namespace homodyne::outputs {
namespace {

// In insertion order, as Python writes its dicts (parameters in the vector's order).
using json = nlohmann::ordered_json;

json Number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json ParametersObject(const XpcsjaxParameters& p) {
  json out = json::object();
  for (std::size_t i = 0; i < p.names.size(); ++i) {
    out[p.names[i]] = {{"value", Number(p.values[i])}, {"uncertainty", Number(p.uncertainties[i])}};
  }
  return out;
}

json DeviceInfo(const nlsq::FitReport& r) {
  return {{"platform", "cpu"},
          {"device", r.hostname},
          {"device_kind", r.cpu_model},
          {"mpi_ranks", r.mpi_ranks},
          {"threads_per_rank", r.threads_per_rank}};
}

// xpcsjax's metadata block (its result's fit-quality fields), nlsq_diagnostics as in
// analysis_results_nlsq.json.
json Metadata(const nlsq::FitReport& r) {
  json m = {{"success", r.convergence_status != "failed"},
            {"convergence_status", r.convergence_status},
            {"message", r.diagnostics.message},
            {"iterations", r.iterations},
            {"chi_squared", Number(r.chi_squared)},
            {"reduced_chi_squared", Number(r.reduced_chi_squared)},
            {"execution_time", r.execution_time},
            {"quality_flag", r.quality_flag}};
  if (!r.recovery_actions.empty()) m["recovery_actions"] = r.recovery_actions;
  m["device_info"] = DeviceInfo(r);
  m["nlsq_diagnostics"] = json::parse(AnalysisResultsJson(r))["nlsq_diagnostics"];
  return m;
}

json ConfigSummary(const XpcsjaxParameters& p, const XpcsjaxRunInfo& info) {
  return {{"mode", info.analysis_mode},
          {"config_path", info.config_path},
          {"parameter_names", p.names}};
}

}  // namespace

XpcsjaxParameters XpcsjaxParameterVector(const nlsq::FitReport& r) {
  XpcsjaxParameters p;
  for (std::size_t i = 0; i < r.physical_names.size(); ++i) {
    if (r.IsHeld(i)) continue;
    p.values.push_back(r.physical_values[i]);
    p.uncertainties.push_back(r.physical_uncertainties[i]);
  }
  const std::vector<double>& scaling = r.diagnostics.scaling_fitted;
  const std::size_t n = r.phi_deg.size();
  for (std::size_t k = 0; k < scaling.size(); ++k) {
    p.values.push_back(scaling[k]);
    // individual: contrast_k then offset_k, the per-angle uncertainties; averaged: one pair,
    // shared by every angle; other layouts: not held per coefficient.
    double u = std::nan("");
    if (scaling.size() == 2 * n) {
      u = k < n ? r.contrast_uncertainty[k] : r.offset_uncertainty[k - n];
    } else if (scaling.size() == 2 && n > 0) {
      u = k == 0 ? r.contrast_uncertainty[0] : r.offset_uncertainty[0];
    }
    p.uncertainties.push_back(u);
  }
  p.names = r.diagnostics.parameter_names;
  if (p.names.size() != p.values.size()) {  // xpcsjax's own fallback
    p.names.clear();
    for (std::size_t i = 0; i < p.values.size(); ++i) p.names.push_back(fmt::format("param_{}", i));
  }
  return p;
}

std::string XpcsjaxNlsqResultJson(const nlsq::FitReport& r, const XpcsjaxRunInfo& info) {
  const XpcsjaxParameters p = XpcsjaxParameterVector(r);
  const json j = {{"schema", "xpcsjax.nlsq.result/v1"},
                  {"timestamp", r.timestamp},
                  {"config", ConfigSummary(p, info)},
                  {"parameters", ParametersObject(p)},
                  {"metadata", Metadata(r)}};
  return j.dump(2) + "\n";
}

std::string XpcsjaxParametersJson(const nlsq::FitReport& r) {
  return ParametersObject(XpcsjaxParameterVector(r)).dump(2) + "\n";
}

std::string XpcsjaxAnalysisResultsJson(const nlsq::FitReport& r, const XpcsjaxRunInfo& info) {
  const std::int64_t n = info.n_angles, nf = info.n_frames;
  const json j = {{"method", "nlsq"},
                  {"analysis_mode", info.analysis_mode},
                  {"fit_quality",
                   {{"chi_squared", Number(r.chi_squared)},
                    {"reduced_chi_squared", Number(r.reduced_chi_squared)},
                    {"quality_flag", r.quality_flag}}},
                  {"dataset_info", {{"shape", {n, nf, nf}}, {"n_points", n * nf * nf}}}};
  return j.dump(2) + "\n";
}

std::string XpcsjaxConvergenceMetricsJson(const nlsq::FitReport& r) {
  const json j = {{"status", r.convergence_status},
                  {"iterations", r.iterations},
                  {"execution_time_s", r.execution_time},
                  {"recovery_actions", r.recovery_actions},
                  {"device_info", DeviceInfo(r)}};
  return j.dump(2) + "\n";
}

const std::vector<std::string>& XpcsjaxTopLevelFiles() {
  static const std::vector<std::string> names = {"parameters.json", "analysis_results_nlsq.json",
                                                 "convergence_metrics.json", "nlsq_result.npz",
                                                 "nlsq_result.json"};
  return names;
}

void WriteXpcsjaxResultFiles(const std::filesystem::path& dir, const nlsq::FitReport& r,
                             const XpcsjaxRunInfo& info) {
  EnsureDirectory(dir);
  const XpcsjaxParameters p = XpcsjaxParameterVector(r);
  WriteFileAtomically(dir / "nlsq_result.json", XpcsjaxNlsqResultJson(r, info));
  WriteFileAtomically(dir / "parameters.json", XpcsjaxParametersJson(r));
  WriteFileAtomically(dir / "analysis_results_nlsq.json", XpcsjaxAnalysisResultsJson(r, info));
  WriteFileAtomically(dir / "convergence_metrics.json", XpcsjaxConvergenceMetricsJson(r));
  // nlsq_result.npz: xpcsjax's arrays but the covariance (the report holds the correlation of
  // the physics only); names and JSON blobs as str arrays (xpcsjax stores object arrays,
  // which need allow_pickle).
  NpzArchive npz(dir / "nlsq_result.npz");
  const std::uint64_t n = p.values.size();
  npz.AddDoubles("parameters", {n}, p.values);
  npz.AddDoubles("uncertainties", {n}, p.uncertainties);
  npz.AddDoubles("chi_squared", {}, std::vector<double>{r.chi_squared});
  npz.AddDoubles("reduced_chi_squared", {}, std::vector<double>{r.reduced_chi_squared});
  npz.AddInt64("iterations", {}, std::vector<std::int64_t>{r.iterations});
  npz.AddDoubles("execution_time", {}, std::vector<double>{r.execution_time});
  npz.AddStrings("parameter_names", p.names);
  npz.AddStrings("metadata_json", {Metadata(r).dump()}, /*scalar=*/true);
  npz.AddStrings("config_json", {ConfigSummary(p, info).dump()}, /*scalar=*/true);
  npz.Commit();
}

}  // namespace homodyne::outputs
