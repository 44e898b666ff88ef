// Shared helpers of the MPI tests that fit laminar_flow data from a file: the config for a
// start, quiet run options and a bitwise comparison of answers.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_reader.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::testing {

// A laminar_flow config for the data file `file` (q 0.0054, L 2e6, dt 0.1, all frames),
// started at `values` (the seven physical parameters), with `nlsq_block` (YAML indented
// by four spaces) under optimization.nlsq.
inline config::Config LaminarFileConfig(const std::string& values, const std::string& file,
                                        const std::string& nlsq_block) {
  const auto path = std::filesystem::path(file);
  const std::string yaml =
      "analysis_mode: laminar_flow\nanalyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n"
      "  end_frame: -1\n  scattering:\n    wavevector_q: 0.0054\n"
      "  geometry:\n    stator_rotor_gap: 2000000\n"
      "experimental_data:\n  data_folder_path: " +
      path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
      "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, "
      "gamma_dot_t_offset, phi0]\n  values: [" +
      values + "]\noptimization:\n  nlsq:\n" + nlsq_block;
  return config::ReadConfigString(yaml, "laminar-file-test-config", config::ReadOptions{});
}

// No progress lines; in core, or streamed in windows of `window` points (0: the plan's).
inline nlsq::NlsqRunOptions QuietRun(nlsq::FitStrategy strategy = nlsq::FitStrategy::kInCore,
                                     std::int64_t window = 0) {
  nlsq::NlsqRunOptions o;
  o.print_progress = false;
  o.strategy = strategy;
  o.stream_window_points = window;
  return o;
}

inline bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace homodyne::testing
