// Access to the process Environment inside the MPI test binary.
#pragma once

#include "runtime/environment.h"

namespace homodyne::testing {

// The Environment created by the MPI test main (MPI + PETSc + hwloc).
Environment& TestEnvironment();

}  // namespace homodyne::testing
