#include "parallel/transfer.h"

#include <algorithm>
#include <cstdint>

#include "core/errors.h"

namespace homodyne {
namespace {

constexpr std::size_t kPieceBytes = std::size_t{1} << 30;

}  // namespace

void SendBytes(const Comm& comm, int dest, std::span<const unsigned char> bytes) {
  for (std::size_t at = 0; at < bytes.size(); at += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, bytes.size() - at);
    MPI_Send(bytes.data() + at, static_cast<int>(n), MPI_UNSIGNED_CHAR, dest, kTransferTag,
             comm.get());
  }
}

void RecvBytes(const Comm& comm, int source, std::span<unsigned char> bytes) {
  for (std::size_t at = 0; at < bytes.size(); at += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, bytes.size() - at);
    MPI_Status status;
    MPI_Recv(bytes.data() + at, static_cast<int>(n), MPI_UNSIGNED_CHAR, source, kTransferTag,
             comm.get(), &status);
    int got = 0;
    MPI_Get_count(&status, MPI_UNSIGNED_CHAR, &got);
    HOMODYNE_CHECK(static_cast<std::size_t>(got) == n, "a transfer's piece has the wrong size");
  }
}

void SendDoubles(const Comm& comm, int dest, std::span<const double> values) {
  SendBytes(
      comm, dest,
      {reinterpret_cast<const unsigned char*>(values.data()), values.size() * sizeof(double)});
}

void RecvDoubles(const Comm& comm, int source, std::span<double> values) {
  RecvBytes(comm, source,
            {reinterpret_cast<unsigned char*>(values.data()), values.size() * sizeof(double)});
}

void SendBuffers(const Comm& comm, int dest, const std::vector<std::vector<unsigned char>>& bufs) {
  std::vector<std::uint64_t> sizes{bufs.size()};
  for (const auto& b : bufs) sizes.push_back(b.size());
  SendBytes(
      comm, dest,
      {reinterpret_cast<const unsigned char*>(sizes.data()), sizes.size() * sizeof(sizes[0])});
  for (const auto& b : bufs) SendBytes(comm, dest, b);
}

std::vector<std::vector<unsigned char>> RecvBuffers(const Comm& comm, int source) {
  // The sizes message's length is not known in advance: probe it.
  MPI_Status status;
  MPI_Probe(source, kTransferTag, comm.get(), &status);
  int got = 0;
  MPI_Get_count(&status, MPI_UNSIGNED_CHAR, &got);
  HOMODYNE_CHECK(got >= 8 && got % 8 == 0, "a transfer's sizes message is malformed");
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(got) / 8);
  RecvBytes(comm, source,
            {reinterpret_cast<unsigned char*>(sizes.data()), sizes.size() * sizeof(sizes[0])});
  HOMODYNE_CHECK(sizes[0] + 1 == sizes.size(), "a transfer's sizes message is malformed");
  std::vector<std::vector<unsigned char>> bufs(sizes[0]);
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    bufs[i].resize(sizes[i + 1]);
    RecvBytes(comm, source, bufs[i]);
  }
  return bufs;
}

}  // namespace homodyne
