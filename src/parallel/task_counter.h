// A shared task counter for dynamic scheduling without a busy coordinator.
//
// The counter lives in an MPI window on one rank (the owner, rank 0 of `comm`); any rank
// takes the next index with an atomic fetch-and-add (MPI_Fetch_and_op under a passive
// shared lock). Nobody has to answer requests, so the owner can do its own work while
// the others draw tasks: with shared memory or RDMA atomics the draw completes without
// the owner; on transports that emulate atomics it completes at the owner's next MPI
// call (e.g. the next reduction of its own fit), never later than its next draw.
#pragma once

#include <cstdint>

#include "parallel/comm.h"

namespace homodyne {

class SharedTaskCounter {
 public:
  // Collective over `comm` (which must outlive the counter). The counter starts at 0.
  explicit SharedTaskCounter(const Comm& comm);
  // Frees the window (collective) unless an exception is in flight: a failing rank must
  // not wait for the others here (the job is then aborted by the caller).
  ~SharedTaskCounter();
  SharedTaskCounter(const SharedTaskCounter&) = delete;
  SharedTaskCounter& operator=(const SharedTaskCounter&) = delete;

  // Not collective: returns the current value and adds 1 (each value is returned to
  // exactly one caller across all ranks).
  std::int64_t Next();

 private:
  const Comm& comm_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::int64_t* base_ = nullptr;
};

}  // namespace homodyne
