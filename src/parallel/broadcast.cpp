#include "parallel/broadcast.h"

#include <cstdint>

namespace homodyne {
namespace {

template <typename Container>
void BroadcastContainer(const Comm& comm, Container& c, MPI_Datatype type, int root) {
  std::uint64_t n = c.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm.get());
  c.resize(static_cast<std::size_t>(n));
  if (n > 0) MPI_Bcast(c.data(), static_cast<int>(n), type, root, comm.get());
}

}  // namespace

void Broadcast(const Comm& comm, std::vector<double>& values, int root) {
  BroadcastContainer(comm, values, MPI_DOUBLE, root);
}

void Broadcast(const Comm& comm, std::string& text, int root) {
  BroadcastContainer(comm, text, MPI_CHAR, root);
}

}  // namespace homodyne
