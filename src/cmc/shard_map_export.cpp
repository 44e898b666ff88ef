#include "cmc/shard_map_export.h"

#include <time.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace homodyne::cmc {

double ThreadCpuSeconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void ExportShardMapIfRequested(const ShardMapRecord& record) {
  const char* dir = std::getenv("HOMODYNE_CMC_MAP_DIR");
  if (dir == nullptr || *dir == '\0' || record.setup == nullptr) return;
  const ShardPosteriorSetup& s = *record.setup;
  nlohmann::json j;
  j["shard"] = record.shard;
  j["names"] = record.names;
  // The coordinates u before the whitening: site_i = T_i(u_i) within [lower_i, upper_i]
  // (bounded_transform.h), θ = G(sites) (sampling_geometry.h).
  j["site_lower"] = s.lower;
  j["site_upper"] = s.upper;
  j["theta_lower"] = s.theta_lower;
  j["theta_upper"] = s.theta_upper;
  j["geometry"] = s.sampling_geometry.Describe();
  j["reparameterization_active"] = s.reparam.active();
  j["known_sigma"] = s.known_sigma ? nlohmann::json(*s.known_sigma) : nlohmann::json(nullptr);
  j["mode_search_cpu_seconds"] = record.cpu_seconds;
  if (record.mode != nullptr) {
    j["mode"] = {{"u", record.mode->u},
                 {"theta", record.mode->theta},
                 {"sigma", record.mode->sigma},
                 {"iterations", record.mode->iterations},
                 {"converged", record.mode->converged},
                 {"start_log_density", record.mode->start_log_density},
                 {"log_density", record.mode->log_density}};
  }
  if (record.whitening != nullptr && !record.whitening->empty()) {
    j["whitening"] = {{"centre", record.whitening->centre}, {"chol", record.whitening->chol}};
  }
  const std::string path = fmt::format("{}/shard_map_{}.json", dir, record.shard);
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) ThrowIoError("cannot write the shard map (HOMODYNE_CMC_MAP_DIR)", path);
}

}  // namespace homodyne::cmc
