// The `homodyne-topology` command line: --show/--json/--nodes and --autotune (app layer:
// it drives the autotune, which builds a model kernel).
#include "app/topology_cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "app/autotune.h"
#include "app/command_line.h"
#include "core/errors.h"
#include "core/topology_report.h"

namespace homodyne {

namespace {

int RunAutotuneCommand(const Topology& topology, const TopologyDescription& d,
                       const AutotuneOptions& options, bool json) {
  const LibraryVersions versions = QueryLibraryVersions();
  auto progress = [json](const std::string& line) {
    if (!json) std::printf("  %s\n", line.c_str());
    std::fflush(stdout);
  };
  if (!json) {
    std::printf("autotune: laminar_flow, %d angles x %d frames, threads 1..%d\n", options.angles,
                options.frames, topology.process_cores());
  }
  TuneSettings s = RunAutotune(topology, options, progress);
  s.signature = HardwareSignature(d, versions);
  s.signature_text = HardwareSignatureText(d, versions);
  const auto path = TuneCachePath(s.signature);
  WriteTuneCache(path, s);
  if (json) {
    std::fputs(TuneSettingsToJson(s).c_str(), stdout);
  } else {
    std::printf(
        "best: %d thread(s) per rank, chunk %lld points (%.1f M points/s)\n"
        "cached in %s (homodyne uses it when --threads is not given)\n",
        s.threads_per_rank, static_cast<long long>(s.chunk_points), s.points_per_second / 1e6,
        path.c_str());
  }
  return 0;
}

}  // namespace

int TopologyMain(int argc, char** argv) {
  CLI::App app{"homodyne-topology: this node's hardware and the recommended MPI layout",
               "homodyne-topology"};
  bool show = false;
  bool json = false;
  int nodes = 1;
  app.add_flag("--show", show, "print the hardware and the recommended layout (default)");
  app.add_flag("--json", json, "machine-readable output");
  app.add_option("--nodes", nodes, "scale the command lines for N nodes")->check(PositiveCount());
  bool autotune = false;
  AutotuneOptions tune;
  app.add_flag("--autotune", autotune,
               "time the model kernel over threads per rank and chunk sizes and cache the best "
               "settings in $XDG_CACHE_HOME/homodyne (default ~/.cache/homodyne)");
  app.add_option("--autotune-frames", tune.frames, "frames of the synthetic autotune problem")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  if (const auto code = TryParseCommandLine(app, [&] { app.parse(argc, argv); })) return *code;
  try {
    Topology topology;
    const auto d = DescribeTopology(topology);
    if (autotune) return RunAutotuneCommand(topology, d, tune, json);
    const auto r = RecommendLayout(d, nodes);
    const std::string text = json ? FormatTopologyJson(d, r) : FormatTopologyText(d, r);
    std::fputs(text.c_str(), stdout);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ExitCodeOf(e));
  }
}

}  // namespace homodyne
