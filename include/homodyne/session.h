// The process-wide libraries homodyne needs, started and stopped in the right order.
#pragma once

#include <mpi.h>

#include <memory>

namespace homodyne {

// Construct one Session at the top of main(), before any other homodyne call, and let it
// end after the last: it starts HDF5, MPI (with thread support for the compute threads)
// and PETSc, and finalises them in reverse order. Not copyable; one per process.
class Session {
 public:
  Session(int* argc, char*** argv);
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
