// The common frame of every MPI executable: environment set-up, error → exit code.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/environment.h"

namespace homodyne {

// What an application body receives: the environment and its own arguments
// (argv[0] first, PETSc options already removed and handed to PETSc).
using AppBody = std::function<int(Environment& env, const std::vector<std::string>& args)>;

// Creates the Environment, runs `body`, and turns failures into exit codes:
//  - an agreed homodyne::Error (raised on every rank together): printed once by
//    rank 0, every rank returns its exit code (2 bad input, 1 internal, 75 checkpointed);
//  - any other exception (raised on some ranks only): printed by the failing rank,
//    which then calls MPI_Abort so that no rank is left waiting in a collective.
int RunMpiApp(int argc, char** argv, const AppBody& body, EnvironmentOptions options = {});

}  // namespace homodyne
