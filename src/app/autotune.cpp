#include "app/autotune.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/fnv1a.h"
#include "core/placement.h"
#include "model/kernel.h"
#include "nlsq/fit_report.h"

namespace homodyne {
namespace {

// The synthetic problem: laminar_flow, upper triangle of every angle, constant data.
struct Problem {
  model::Geometry geometry{0.0054, 2e6, 1e-3};
  std::vector<double> t, phi, params, data;
  std::vector<model::RowTile> tiles;

  Problem(int frames, int angles) {
    for (int m = 1; m <= frames; ++m) t.push_back(geometry.dt * m);
    for (int k = 0; k < angles; ++k) phi.push_back(-180.0 + 360.0 * k / angles);
    for (int k = 0; k < angles; ++k) params.push_back(0.2 + 0.002 * k);
    for (int k = 0; k < angles; ++k) params.push_back(1.0);
    for (double v : {5e4, 0.5, -50.0, 0.25, 0.1, 1e-3, -2.0}) params.push_back(v);
    data.assign(static_cast<std::size_t>(frames) * static_cast<std::size_t>(frames - 1) / 2 *
                    static_cast<std::size_t>(angles),
                1.1);
    std::size_t offset = 0;
    for (int k = 0; k < angles; ++k) {
      for (int i = 0; i < frames - 1; ++i) {
        model::RowTile tile{k, i, i + 1, frames - 1 - i, data.data() + offset};
        offset += static_cast<std::size_t>(tile.count);
        tiles.push_back(tile);
      }
    }
  }
};

double MedianSeconds(const model::ModelKernel& kernel, const std::vector<double>& params,
                     int repeats) {
  using Clock = std::chrono::steady_clock;
  (void)kernel.Accumulate(params);  // warm-up
  std::vector<double> seconds;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto start = Clock::now();
    volatile double sink = kernel.Chi2(params) + kernel.Accumulate(params).chi2;
    (void)sink;
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

std::string HardwareSignatureText(const TopologyDescription& d, const LibraryVersions& v) {
  std::string text = fmt::format("cpu_model={}\npackages={}\ncores={}\npus={}\n", d.cpu_model,
                                 d.packages, d.cores, d.pus);
  for (const auto& [name, size] : d.caches) text += fmt::format("cache.{}={}\n", name, size);
  text += fmt::format("numa_nodes={}\n", d.numa_nodes.size());
  for (const auto& n : d.numa_nodes) {
    text +=
        fmt::format("numa.{}=cores:{},pus:{},cpuset:{}\n", n.os_index, n.cores, n.pus, n.cpuset);
  }
  text +=
      fmt::format("homodyne={}\nmpi={}\npetsc={}\nhdf5={}\nhwloc={}\ncompiler={}\nbuild_type={}\n",
                  v.homodyne, v.mpi, v.petsc, v.hdf5, v.hwloc, v.compiler, v.build_type);
  return text;
}

std::string HardwareSignature(const TopologyDescription& d, const LibraryVersions& v) {
  return fmt::format("{:016x}", Fnv1a(HardwareSignatureText(d, v)));
}

std::filesystem::path TuneCacheDirectory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::filesystem::path(xdg) / "homodyne";
  const char* home = std::getenv("HOME");
  if (home == nullptr || home[0] == '\0') {
    ThrowBadInput("neither XDG_CACHE_HOME nor HOME is set: no place for the autotune cache", {},
                  "HOME");
  }
  return std::filesystem::path(home) / ".cache" / "homodyne";
}

std::filesystem::path TuneCachePath(const std::string& signature) {
  return TuneCacheDirectory() / fmt::format("tune-{}.json", signature);
}

std::string TuneSettingsToJson(const TuneSettings& s) {
  nlohmann::json timings = nlohmann::json::array();
  for (const auto& t : s.timings) {
    timings.push_back({{"threads", t.threads},
                       {"chunk_points", t.chunk_points},
                       {"seconds_per_pass_pair", t.seconds_per_pass}});
  }
  nlohmann::json j = {{"signature", s.signature},
                      {"signature_text", s.signature_text},
                      {"threads_per_rank", s.threads_per_rank},
                      {"chunk_points", s.chunk_points},
                      {"points_per_second", s.points_per_second},
                      {"created", s.created},
                      {"timings", timings}};
  return j.dump(2) + "\n";
}

TuneSettings TuneSettingsFromJson(const std::string& text, const std::string& file) {
  TuneSettings s;
  try {
    const auto j = nlohmann::json::parse(text);
    s.signature = j.at("signature").get<std::string>();
    s.signature_text = j.value("signature_text", std::string());
    s.threads_per_rank = j.at("threads_per_rank").get<int>();
    s.chunk_points = j.at("chunk_points").get<std::int64_t>();
    s.points_per_second = j.value("points_per_second", 0.0);
    s.created = j.value("created", std::string());
    for (const auto& t : j.value("timings", nlohmann::json::array())) {
      s.timings.push_back({t.at("threads").get<int>(), t.at("chunk_points").get<std::int64_t>(),
                           t.at("seconds_per_pass_pair").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    ThrowBadInput(fmt::format("malformed autotune cache ({}); delete it or rerun "
                              "homodyne-topology --autotune",
                              e.what()),
                  file, "threads_per_rank");
  }
  if (s.threads_per_rank < 1 || s.chunk_points < 1) {
    ThrowBadInput(fmt::format("autotune cache has threads_per_rank {} and chunk_points {}, "
                              "expected both >= 1",
                              s.threads_per_rank, s.chunk_points),
                  file, "threads_per_rank");
  }
  return s;
}

void WriteTuneCache(const std::filesystem::path& path, const TuneSettings& s) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    ThrowIoError(fmt::format("could not create the autotune cache folder {} ({}); expected a "
                             "writable directory (set XDG_CACHE_HOME to choose another)",
                             path.parent_path().string(), ec.message()),
                 path.string());
  }
  WriteFileAtomically(path, TuneSettingsToJson(s));
}

std::optional<TuneSettings> ReadTuneCache(const std::filesystem::path& path,
                                          const std::string& signature, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    if (why) *why = fmt::format("no autotune cache at {}", path.string());
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  TuneSettings s = TuneSettingsFromJson(text.str(), path.string());
  if (s.signature != signature) {
    if (why) {
      *why = fmt::format("autotune cache {} is for hardware signature {}, this machine is {}",
                         path.string(), s.signature, signature);
    }
    return std::nullopt;
  }
  return s;
}

TuneSettings RunAutotune(const Topology& topology, const AutotuneOptions& options,
                         const std::function<void(const std::string&)>& progress) {
  if (options.frames < 2 || options.angles < 1 || options.chunk_points.empty()) {
    ThrowBadInput("autotune needs >= 2 frames, >= 1 angle and at least one chunk size");
  }
  const Problem problem(options.frames, options.angles);
  const PlacementPlan plan = PlanThreads(topology, options.max_threads);
  const double points = static_cast<double>(problem.data.size());
  cpu_set_t original;
  const bool restore = sched_getaffinity(0, sizeof(original), &original) == 0;
  PinCurrentThread(topology, plan.slots.front());  // thread 0, as homodyne does
  TuneSettings best;
  double best_seconds = 0.0;
  for (int threads = 1; threads <= static_cast<int>(plan.slots.size()); ++threads) {
    for (std::int64_t chunk : options.chunk_points) {
      model::KernelOptions ko;
      ko.threads = threads;
      ko.chunk_points = chunk;
      ko.worker_start = [&](int index) {
        PinCurrentThread(topology, plan.slots.at(static_cast<std::size_t>(index)));
      };
      const model::ModelKernel kernel(model::AnalysisMode::kLaminarFlow, problem.geometry,
                                      problem.t, problem.phi, problem.tiles, ko);
      const double seconds = MedianSeconds(kernel, problem.params, options.repeats);
      best.timings.push_back({threads, chunk, seconds});
      if (progress) {
        progress(
            fmt::format("threads {} chunk {:>6}: {:.2f} ms per χ² + normal pass, {:.1f} M "
                        "points/s",
                        threads, chunk, 1e3 * seconds, points / seconds / 1e6));
      }
      if (best_seconds == 0.0 || seconds < best_seconds) {
        best_seconds = seconds;
        best.threads_per_rank = threads;
        best.chunk_points = chunk;
      }
    }
  }
  if (restore) sched_setaffinity(0, sizeof(original), &original);
  best.points_per_second = points / best_seconds;
  best.created = IsoTimestampNow();
  return best;
}

}  // namespace homodyne
