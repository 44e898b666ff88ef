// Google Benchmark main for MPI runs: every rank runs every benchmark (they may
// contain collectives), only rank 0 reports and writes --benchmark_out files.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench_env.h"
#include "runtime/environment.h"

namespace homodyne::bench {
namespace {
Environment* g_env = nullptr;

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

Environment& BenchEnvironment() { return *g_env; }
}  // namespace homodyne::bench

int main(int argc, char** argv) {
  homodyne::EnvironmentOptions options;
  options.log_level = homodyne::LogLevel::kWarning;
  homodyne::Environment env(&argc, &argv, options);
  homodyne::bench::g_env = &env;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    // Ranks other than 0 must not write the output file.
    if (env.rank() != 0 && std::strncmp(argv[i], "--benchmark_out", 15) == 0) continue;
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (env.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    homodyne::bench::SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  homodyne::bench::g_env = nullptr;
  return 0;
}
