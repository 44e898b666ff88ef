#include "app/run_app.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/errors.h"
#include "core/library_threads.h"
#include "core/log.h"

namespace homodyne {
namespace {

int ReportLocalFailure(Environment& env, const std::string& text, ExitCode code) {
  const std::string line =
      fmt::format("[rank {}] error: {} (aborting all {} ranks)\n", env.rank(), text, env.size());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  if (env.size() > 1) MPI_Abort(env.world().get(), static_cast<int>(code));
  return static_cast<int>(code);
}

// One line on rank 0 at the end of a run whose body itemised its fixed costs: every item
// of this rank, the shutdown's included (the run report, written before, cannot hold those).
void LogFixedCosts(const FixedCosts& before, const ShutdownTimes& shutdown, int rank,
                   LogLevel level) {
  FixedCosts all = before;
  all.Add("topology_free", shutdown.topology_seconds);
  all.Add("petsc_finalize", shutdown.petsc_finalize_seconds);
  all.Add("mpi_finalize", shutdown.mpi_finalize_seconds);
  std::string items;
  for (const auto& [name, seconds] : all.items) {
    items += fmt::format("{}{} {:.3f}", items.empty() ? "" : ", ", name, seconds);
  }
  Logger(rank, level).Info("fixed costs (rank 0, s): {}; total {:.3f} s", items, all.total());
}

}  // namespace

int RunMpiApp(int argc, char** argv, const AppBody& body, EnvironmentOptions options) {
  // The launch's two parts: process start to here (exec, loading) and here to MPI's start.
  options.main_entry = std::chrono::steady_clock::now();
  options.process_start_to_main_seconds = SecondsSinceProcessStart();
  // Before MPI/PETSc start (and before any compute thread): libraries stay single-threaded.
  for (auto& note : LimitLibraryThreads()) options.startup_notes.push_back(std::move(note));
  SplitArguments split = SplitPetscArguments(argc, argv);
  options.petsc_args.insert(options.petsc_args.end(), split.petsc_args.begin(),
                            split.petsc_args.end());
  std::unique_ptr<Environment> env;
  try {
    env = std::make_unique<Environment>(&argc, &argv, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: cannot initialise the environment: %s\n", e.what());
    return static_cast<int>(ExitCode::kInternalError);
  }

  const std::size_t startup_items = env->fixed_costs().items.size();
  int code = 0;
  try {
    code = body(*env, split.program_args);
  } catch (const Error& e) {
    if (IsAgreed(e) || env->size() == 1) {
      if (e.kind() == ErrorKind::kCheckpointed) {
        env->logger().Info("{}", e.what());
      } else {
        // Agreed errors carry the originating rank; rank 0 prints for everybody.
        if (env->rank() == 0) {
          std::fprintf(stderr, "error: %s\n", e.what());
          std::fflush(stderr);
        }
      }
      code = static_cast<int>(ExitCodeOf(e));
    } else {
      code = ReportLocalFailure(*env, e.what(), ExitCodeOf(e));
    }
  } catch (const std::exception& e) {
    code = ReportLocalFailure(*env, e.what(), ExitCode::kInternalError);
  } catch (...) {
    code = ReportLocalFailure(*env, "unknown exception", ExitCode::kInternalError);
  }
  // Finalise PETSc and MPI before returning from main.
  const int rank = env->rank();
  const LogLevel level = env->logger().level();
  const ShutdownTimes shutdown = env->Shutdown();
  // Only a body that added its own items (a fit) ran long enough for the line to matter.
  if (rank == 0 && env->fixed_costs().items.size() > startup_items) {
    LogFixedCosts(env->fixed_costs(), shutdown, rank, level);
  }
  env.reset();
  return code;
}

}  // namespace homodyne
