// Shared by the full-run benchmarks (bench_nlsq_fit, bench_cmc): sizes from the environment
// and the laminar_flow YAML config of a synthetic dataset.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "config/config_reader.h"

namespace homodyne::bench {

// The integer in environment variable `name`, else `fallback`.
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

// laminar_flow at q = 0.0054, dt = 0.1, gap 2e6 reading `data`, initial values `values`
// ("D0, alpha, …, phi0"), then the `optimization` block (YAML, indented by two spaces).
inline config::Config LaminarBenchConfig(const std::string& data, const std::string& values,
                                         const std::string& optimization,
                                         const std::string& source) {
  const auto p = std::filesystem::path(data);
  const std::string yaml = fmt::format(
      "analysis_mode: laminar_flow\n"
      "analyzer_parameters:\n  dt: 0.1\n  scattering: {{wavevector_q: 0.0054}}\n"
      "  geometry: {{stator_rotor_gap: 2000000}}\n"
      "experimental_data:\n  data_folder_path: {}\n  data_file_name: {}\n"
      "initial_parameters:\n"
      "  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]\n"
      "  values: [{}]\n"
      "optimization:\n{}",
      p.parent_path().string(), p.filename().string(), values, optimization);
  return config::ReadConfigString(yaml, source);
}

}  // namespace homodyne::bench
