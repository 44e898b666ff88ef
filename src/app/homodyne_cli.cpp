#include "homodyne/app/homodyne_cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "homodyne/app/run_app.h"
#include "homodyne/error.h"
#include "homodyne/fault_injection.h"
#include "homodyne/parallel/collective.h"
#include "homodyne/version.h"

namespace homodyne {
namespace {

struct HomodyneCliOptions {
  bool show_version = false;
  int verbosity = 0;
  bool quiet = false;
};

// Parses on every rank (the result is identical everywhere); rank 0 prints help and
// parse errors. Returns an exit code when the program should stop right away.
std::optional<int> ParseCommandLine(Environment& env, const std::vector<std::string>& args,
                                    HomodyneCliOptions& opts) {
  CLI::App app{"homodyne-hpc: fit XPCS two-time correlation data with the homodyne model",
               "homodyne"};
  app.add_flag("--version", opts.show_version,
               "print the versions of homodyne-hpc, MPI, PETSc, HDF5, yaml-cpp and hwloc");
  app.add_flag("-v,--verbose", opts.verbosity, "more output (repeat for more)");
  app.add_flag("-q,--quiet", opts.quiet, "errors only");
  app.footer(
      "PETSc options (-tao_monitor, -tao_type bnls, -tao_gatol 1e-9, -log_view, ...) are\n"
      "passed to PETSc. Exit codes: 0 ok, 1 internal error, 2 bad input, 75 checkpointed.");

  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 wants reverse order
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    if (env.rank() == 0) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (env.rank() == 0) {
      std::fprintf(stderr, "error: %s\nRun with --help for the list of options.\n", e.what());
    }
    return static_cast<int>(ExitCode::kBadInput);
  }
  return std::nullopt;
}

int RunHomodyne(Environment& env, const std::vector<std::string>& args) {
  HomodyneCliOptions opts;
  if (auto code = ParseCommandLine(env, args, opts)) return *code;
  env.logger().set_level(LogLevelFromVerbosity(opts.verbosity, opts.quiet));

  RunCollectively(env.world(), [&] { MaybeInjectFailure("startup", env.rank()); });

  if (opts.show_version) {
    const std::string report = FormatVersionReport(QueryLibraryVersions());
    if (env.rank() == 0) {
      std::fputs(report.c_str(), stdout);
      std::fflush(stdout);
    }
    env.logger().Debug("running on {} MPI rank(s), MPI thread level {}", env.size(),
                       env.thread_level());
    return 0;
  }
  RunCollectively(env.world(), [] {
    ThrowBadInput("nothing to do: give --version (run --help for the options)", {}, "command line");
  });
  return static_cast<int>(ExitCode::kBadInput);
}

}  // namespace

int HomodyneMain(int argc, char** argv) { return RunMpiApp(argc, argv, RunHomodyne); }

}  // namespace homodyne
