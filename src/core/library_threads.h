// Keeps threaded libraries (OpenMP runtimes, OpenBLAS) at one thread per compute thread:
// homodyne runs its own pinned compute threads, so a library that spawned one thread per
// core under each of them would oversubscribe the cores.
#pragma once

#include <string>
#include <vector>

namespace homodyne {

// For OMP_NUM_THREADS and OPENBLAS_NUM_THREADS: if unset, sets it to 1 (setenv, for
// runtimes that read it later and for child processes) and, when the runtime is already
// loaded in the process, also calls omp_set_num_threads(1) / openblas_set_num_threads(1)
// (looked up with dlsym, no link dependency). A value the user set is kept. Returns one
// note per variable saying what was done, for the log at -v. Call at start-up, before
// MPI/PETSc initialisation and before any compute thread exists.
std::vector<std::string> LimitLibraryThreads();

}  // namespace homodyne
