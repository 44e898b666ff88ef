// PETSc on demand. PETSc/TAO and its libraries (about 60 shared objects: BLAS, LAPACK,
// MUMPS, HYPRE, Trilinos, SuiteSparse, ...) live in a module of their own,
// libhomodyne_petsc.so, that homodyne loads with dlopen only when PETSc is asked for: a TAO
// local method (bnls, bntr, bntl) or PETSc options (the command line's -tao_* and the like,
// PETSC_OPTIONS, an options file). A fit with the default Levenberg–Marquardt and no PETSc
// options never maps PETSc; loading and starting it cost 0.03 s of CPU per process here
// (docs/performance.md, "Fixed costs").
//
// Where the module is looked for, first found wins: $HOMODYNE_PETSC_MODULE; beside the
// object holding this code (an executable in bin/ looks in ../<libdir>/homodyne/, a library
// in its own directory's homodyne/); the install prefix's <libdir>/homodyne/; the build tree.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace homodyne {

// Whether PETSc options reach this process from outside the command line: PETSC_OPTIONS or
// PETSC_OPTIONS_YAML in the environment, or one of the options files PetscInitialize reads
// (~/.petscrc, ./.petscrc, ./petscrc). Local to the calling rank.
bool PetscOptionsFromOutside();

// Loads the module (once) and returns the named entry point; throws an internal error naming
// the paths tried when the module or the entry is missing.
void* PetscModuleEntry(const char* name);

// PetscInitialize on `comm` (PETSC_COMM_WORLD) with PETSc's signal handler off and `args`
// as its options; a no-op once started. Collective on `comm`.
void StartPetsc(const std::vector<std::string>& args, MPI_Comm comm);
// Starts PETSc on MPI_COMM_SELF when it has not been started: for a solver that needs it
// in a process that did not start it (no collective call, so any rank may be the first).
void EnsurePetscStarted();
bool PetscStarted();
// PetscFinalize when this process started PETSc and it is still running.
void StopPetsc();

}  // namespace homodyne
