#include "parallel/task_counter.h"

#include <exception>

#include "core/errors.h"

namespace homodyne {
namespace {
constexpr int kOwner = 0;
}  // namespace

SharedTaskCounter::SharedTaskCounter(const Comm& comm) : comm_(comm) {
  const MPI_Aint bytes = comm.rank() == kOwner ? static_cast<MPI_Aint>(sizeof(std::int64_t)) : 0;
  if (MPI_Win_allocate(bytes, sizeof(std::int64_t), MPI_INFO_NULL, comm.get(), &base_, &win_) !=
      MPI_SUCCESS) {
    ThrowInternal("MPI_Win_allocate failed for the shared task counter");
  }
  if (comm.rank() == kOwner) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, kOwner, 0, win_);
    *base_ = 0;
    MPI_Win_unlock(kOwner, win_);
  }
  // Nobody draws before the owner has initialised the counter.
  MPI_Barrier(comm.get());
}

SharedTaskCounter::~SharedTaskCounter() {
  if (win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
}

std::int64_t SharedTaskCounter::Next() {
  const std::int64_t one = 1;
  std::int64_t previous = 0;
  MPI_Win_lock(MPI_LOCK_SHARED, kOwner, 0, win_);
  MPI_Fetch_and_op(&one, &previous, MPI_INT64_T, kOwner, 0, MPI_SUM, win_);
  MPI_Win_unlock(kOwner, win_);
  return previous;
}

}  // namespace homodyne
