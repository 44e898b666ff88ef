// RAII view of an MPI communicator.
//
// A Comm either borrows a communicator (it is not freed) or owns one created by
// Duplicate/Split (freed in the destructor). Kernels and solvers receive a Comm;
// none of them names MPI_COMM_WORLD.
#pragma once

#include <mpi.h>

namespace homodyne {

class Comm {
 public:
  // Borrows `comm`; the caller keeps ownership.
  explicit Comm(MPI_Comm comm = MPI_COMM_SELF);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;

  // An owned duplicate of `comm` (a separate message space for a library or solver).
  static Comm Duplicate(MPI_Comm comm);

  // An owned sub-communicator: ranks with the same color form one group, ordered by key.
  Comm Split(int color, int key) const;

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  void Barrier() const;

 private:
  Comm(MPI_Comm comm, bool owned);
  void Release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace homodyne
