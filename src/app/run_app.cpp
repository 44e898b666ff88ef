#include "app/run_app.h"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/library_threads.h"

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

}  // namespace

int RunMpiApp(int argc, char** argv, const AppBody& body, EnvironmentOptions options) {
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
  env.reset();  // finalise PETSc and MPI before returning from main
  return code;
}

}  // namespace homodyne
