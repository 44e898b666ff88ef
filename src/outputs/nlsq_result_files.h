// The JSON result files of an NLSQ fit, with homodyne's file names and keys
// (physics spec §5.1–5.2), written atomically by the caller's rank 0.
#pragma once

#include <filesystem>
#include <string>

#include "nlsq/fit_report.h"

namespace homodyne::outputs {

using nlsq::FitReport;

// Writes DIR/nlsq/{parameters,analysis_results_nlsq,convergence_metrics}.json and
// DIR/homodyne_results.json. Creates the directories. Atomic per file.
void WriteNlsqResultFiles(const std::filesystem::path& output_dir, const FitReport& report);

// One line naming the objective the solver minimised (the loss, f_scale, what chi_squared is).
std::string LossObjectiveText(const FitReport& r);
// What the stage values named *_chi_squared / *_chi2 (homodyne's field names) hold: the
// plain chi-squared under the linear loss, the robust objective otherwise.
std::string StageValuesText(const FitReport& r);

// The JSON texts (exposed for tests).
std::string ParametersJson(const FitReport& r);
std::string AnalysisResultsJson(const FitReport& r);
std::string ConvergenceMetricsJson(const FitReport& r);
std::string HomodyneResultsJson(const FitReport& r);

}  // namespace homodyne::outputs
