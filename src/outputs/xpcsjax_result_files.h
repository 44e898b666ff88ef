// xpcsjax's result files of an NLSQ fit (output.layout: xpcsjax; heterodyne spec §7), in the
// output directory itself: nlsq_result.json (schema xpcsjax.nlsq.result/v1),
// nlsq_result.npz, and its flat parameters.json, analysis_results_nlsq.json and
// convergence_metrics.json. Written atomically by the caller's rank 0.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "nlsq/fit_report.h"

namespace homodyne::outputs {

// The optimiser's vector as xpcsjax labels it: the fitted physics, then the fitted scaling,
// under nlsq_diagnostics.parameter_names. Uncertainties that the report does not hold (the
// scaling coefficients of the fourier layout) are NaN.
struct XpcsjaxParameters {
  std::vector<std::string> names;
  std::vector<double> values, uncertainties;
};
XpcsjaxParameters XpcsjaxParameterVector(const nlsq::FitReport& r);

struct XpcsjaxRunInfo {
  std::string config_path;    // the --config file
  std::string analysis_mode;  // as the config spells it
  int n_angles = 0;
  int n_frames = 0;  // N of the loader grid (t = 0 included)
};

std::string XpcsjaxNlsqResultJson(const nlsq::FitReport& r, const XpcsjaxRunInfo& info);
std::string XpcsjaxParametersJson(const nlsq::FitReport& r);
std::string XpcsjaxAnalysisResultsJson(const nlsq::FitReport& r, const XpcsjaxRunInfo& info);
std::string XpcsjaxConvergenceMetricsJson(const nlsq::FitReport& r);

// The names of those five files, nlsq_result.json last: a set is published in this order, so
// that nlsq_result.json present means the set beside it is complete (app/fit_phases.cpp).
const std::vector<std::string>& XpcsjaxTopLevelFiles();

// All five files under `dir`.
void WriteXpcsjaxResultFiles(const std::filesystem::path& dir, const nlsq::FitReport& r,
                             const XpcsjaxRunInfo& info);

}  // namespace homodyne::outputs
