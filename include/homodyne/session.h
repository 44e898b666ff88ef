// The process-wide libraries homodyne needs, started and stopped in the right order.
#pragma once

#include <mpi.h>

#include <memory>

#include "homodyne/export.h"

namespace homodyne {

// What the API needs before its first collective call: FitNlsq and FitCmc run on MPI (and
// PETSc for TAO's local methods), and the data files are read with HDF5. A Session does all
// of it. Construct one at the top of main(), before any other homodyne call, and let it end
// after the last:
//
//   int main(int argc, char** argv) {
//     homodyne::Session session(&argc, &argv);  // HDF5, MPI_Init_thread
//     ...                                      // FitNlsq(session.world(), …)
//   }                                          // PetscFinalize if started, HDF5, MPI_Finalize
//
// It calls MPI_Init_thread with MPI_THREAD_FUNNELED (the compute threads never call MPI).
// PETSc is loaded and started only when needed: on MPI_COMM_WORLD at once when PETSc options
// reach the process (PETSC_OPTIONS, an options file), else by the first fit with a TAO local
// method (on MPI_COMM_SELF), always with PETSc's signal handler off and no options from the
// command line; the destructor finalises them in reverse order. MPI must not be
// initialised before (homodyne::Error, kInternal, if it is). EvaluateC2 needs no Session.
// Not copyable; one per process.
class HOMODYNE_API Session {
 public:
  Session(int* argc, char*** argv);
  // For a library or an interpreter (Python with or without mpi4py): initialises MPI as
  // above when nothing has, else uses the MPI the caller initialised (thread level
  // FUNNELED or higher, else kInternal) and leaves MPI_Finalize to the caller.
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  MPI_Comm world() const;  // MPI_COMM_WORLD
  int rank() const;
  int size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace homodyne
