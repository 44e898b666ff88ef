// Shared helpers for tests that need a synthetic dataset: a config for a mode and the
// comparison of loaded data with the reference model at the truth.
#pragma once

#include <string>

#include "config/config.h"
#include "config/config_reader.h"

namespace homodyne::testing {

// A minimal homodyne config (no data file) for `mode` ("static" | "laminar_flow") with
// q = 0.0054 (or `q`), L = 2e6, dt = 0.1 and the given physical initial values.
inline config::Config SynthConfig(const std::string& mode, const std::string& values,
                                  double q = 0.0054, double dt = 0.1) {
  const bool laminar = mode == "laminar_flow";
  std::string yaml = "analysis_mode: " + mode + "\n" +
                     "analyzer_parameters:\n"
                     "  dt: " +
                     std::to_string(dt) +
                     "\n"
                     "  start_frame: 1\n"
                     "  end_frame: -1\n"
                     "  scattering:\n"
                     "    wavevector_q: " +
                     std::to_string(q) +
                     "\n"
                     "  geometry:\n"
                     "    stator_rotor_gap: 2000000\n"
                     "initial_parameters:\n"
                     "  parameter_names: [D0, alpha, D_offset" +
                     std::string(laminar ? ", gamma_dot_t0, beta, gamma_dot_t_offset, phi0" : "") +
                     "]\n"
                     "  values: [" +
                     values + "]\n";
  config::ReadOptions ro;
  ro.require_data_file = false;
  return config::ReadConfigString(yaml, "synth-test-config", ro);
}

}  // namespace homodyne::testing
