// Figures: the inputs homodyne writes for homodyne-plot (the Python/matplotlib script
// installed beside the executables) and the call of that script.
//
//   plots/experimental_data.h5  --plot-experimental-data: /c2_exp (angles × N × N, the
//                               loader's diagonal-corrected matrices), /t1, /t2 (s, from 0),
//                               /phi_angles (deg), /q (1/Å)
//   plots/simulated_data.h5     --plot-simulated-data: /c2_simulated = offset + contrast·g1²
//                               from the config's initial parameters on t = dt·[1..n]
//                               (homodyne's grid), /t1, /t2, /phi_angles, /q, /parameters
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/log.h"

namespace homodyne {

// Rank 0 only: loads the selected data serially. Atomic.
void WriteExperimentalPlotData(const std::filesystem::path& path, const config::Config& cfg,
                               const std::string& data_file);

struct SimulatedPlotOptions {
  std::vector<double> phi_deg;  // empty: the data file's angles if its metadata are readable,
                                // else homodyne's 8 angles linspace(0, 180, 8)
  double contrast = 0.3;        // homodyne's --contrast default
  double offset = 1.0;          // homodyne's --offset default
  std::map<std::string, double> overrides;  // --initial-* values
  void Validate() const;                    // bad input naming the option
};

// The model from the config without any fit: physical parameters from
// initial_parameters.values (homodyne's fallbacks D0 100, alpha -0.5, D_offset 0,
// gamma_dot_t0 0.01, beta 0.5, gamma_dot_t_offset 0, phi0 0 for values the file does not
// give), n = end_frame - start_frame + 1 frames (or the data file's, else 100). Reads no
// matrix data. Atomic.
void WriteSimulatedPlotData(const std::filesystem::path& path, const config::Config& cfg,
                            const std::string& data_file, const SimulatedPlotOptions& options,
                            const Logger& logger);

// What homodyne's plot flags ask for.
struct PlotRequest {
  bool save_plots = false;     // --save-plots: figures of the results
  bool experimental = false;   // --plot-experimental-data
  bool simulated = false;      // --plot-simulated-data
  std::string format = "png";  // --plot-format png|pdf
  SimulatedPlotOptions simulated_options;
  // The data/simulation flags without --save-plots: plots only, no fit (homodyne's rule).
  bool PlotOnly() const { return (experimental || simulated) && !save_plots; }
  bool Any() const { return save_plots || experimental || simulated; }
};

// Rank 0: writes plots/experimental_data.h5 and plots/simulated_data.h5 under `dir` as
// requested (throws on bad input, e.g. an unreadable data file).
void WritePlotInputs(const std::filesystem::path& dir, const PlotRequest& request,
                     const config::Config& cfg, const std::string& data_file, const Logger& logger);

// Rank 0: runs homodyne-plot for the request (only the data/simulation groups when
// PlotOnly()). Never throws; returns "written", "failed" (a warning said why) or
// "not requested".
std::string DrawPlots(const std::filesystem::path& dir, const PlotRequest& request,
                      const Logger& logger);

// homodyne-plot: $HOMODYNE_PLOT, else beside the running executable, else on PATH; empty
// when not found.
std::filesystem::path FindHomodynePlot();

// Runs homodyne-plot on `results_dir` (extra `args` before it) and waits. On any failure
// (script not found, Python modules missing, script error) logs a warning saying why and
// what to do, and returns false: plots never fail a run.
bool RunHomodynePlot(const std::filesystem::path& results_dir, const std::vector<std::string>& args,
                     const Logger& logger);

}  // namespace homodyne
