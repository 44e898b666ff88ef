#include "parallel/comm.h"

#include <utility>

#include "core/errors.h"

namespace homodyne {
namespace {
void CheckMpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    ThrowInternal(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(len)));
  }
}
}  // namespace

Comm::Comm(MPI_Comm comm) : Comm(comm, false) {}

Comm::Comm(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  if (comm_ != MPI_COMM_NULL) {
    CheckMpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    CheckMpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
}

Comm::~Comm() { Release(); }

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      owned_(std::exchange(other.owned_, false)),
      rank_(other.rank_),
      size_(other.size_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    Release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
    rank_ = other.rank_;
    size_ = other.size_;
  }
  return *this;
}

void Comm::Release() noexcept {
  if (owned_ && comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);  // a failure here cannot be reported: ignore
  }
  comm_ = MPI_COMM_NULL;
  owned_ = false;
}

Comm Comm::Duplicate(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  CheckMpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  return Comm(dup, true);
}

Comm Comm::Split(int color, int key) const {
  MPI_Comm sub = MPI_COMM_NULL;
  CheckMpi(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
  return Comm(sub, true);
}

void Comm::Barrier() const { CheckMpi(MPI_Barrier(comm_), "MPI_Barrier"); }

}  // namespace homodyne
