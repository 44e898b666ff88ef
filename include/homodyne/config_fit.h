// Fits of a homodyne YAML config as `homodyne --config FILE` runs them (the same data
// selection, global stage and local fits: the same numbers), without writing result files;
// and the stop request that ends a running fit early.
//
//   homodyne::ConfigFitOptions options{.config_file = "my_config.yaml"};
//   homodyne::NlsqSummary fit = homodyne::FitNlsqConfig(session.world(), options);
#pragma once

#include <mpi.h>

#include <map>
#include <string>

#include "homodyne/cmc.h"
#include "homodyne/data.h"
#include "homodyne/export.h"
#include "homodyne/nlsq.h"

namespace homodyne {

struct ConfigFitOptions {
  std::string config_file;  // a homodyne YAML config
  // Its text instead of a file when not empty (config_file then only names it in messages).
  std::string config_yaml;
  std::string data_file;  // not empty: this data file instead of the config's (--data-file)
  std::map<std::string, double> initial;  // physical name → start (--initial-NAME)
  bool strict = false;                    // an unknown key is an error (--strict)
  int threads = 1;                        // compute threads per rank (≥ 1)
  bool print_progress = false;            // rank 0 prints the fit's progress
  // RequestStop() ends the fit at its next safe point with homodyne::Error of kind
  // kCheckpointed on every rank; the state is written to stop_directory (empty: a folder
  // "homodyne-stop-<pid of rank 0>" in the system's temporary directory).
  bool stop_on_request = false;
  std::string stop_directory;
};

// The matrices the config selects (experimental_data, analyzer_parameters, phi_filtering),
// read by this process alone. Errors name the config or data file and the key.
HOMODYNE_API XpcsData LoadConfigData(const ConfigFitOptions& options);

// "static", "laminar_flow" or "two_component": the analysis mode the config asks for.
HOMODYNE_API AnalysisMode ConfigAnalysisMode(const ConfigFitOptions& options);

// Collective over `comm`: the NLSQ fit `homodyne --config` runs (--method nlsq). Every rank
// passes the same options; rank 0's summary is the answer (with multi_start the other ranks
// hold their group's best solve). Bad input throws homodyne::Error on every rank alike.
HOMODYNE_API NlsqSummary FitNlsqConfig(MPI_Comm comm, const ConfigFitOptions& options);

// Collective over `comm`: `homodyne --method cmc --config` (the NLSQ fit as warm start, then
// the sampling the config's optimization.cmc section describes). Every rank receives the
// same summary; `nlsq`, when given, receives the warm start's summary (rank 0's is the
// answer).
HOMODYNE_API CmcSummary FitCmcConfig(MPI_Comm comm, const ConfigFitOptions& options,
                                     NlsqSummary* nlsq = nullptr);

// Asks a fit run with stop_on_request to end at its next safe point. Async-signal-safe
// (a signal handler may call it): it only sets this process's stop flag, which a fit
// started afterwards also sees until ClearStopRequest().
HOMODYNE_API void RequestStop() noexcept;
HOMODYNE_API void ClearStopRequest() noexcept;

}  // namespace homodyne
