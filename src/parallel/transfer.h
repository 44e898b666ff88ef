// Point-to-point transfers of buffers of any size between two ranks (MPI counts are int:
// large buffers travel in pieces). Messages between two ranks on one tag arrive in the order
// they were sent, so a sender and its receiver only have to agree on the sequence.
#pragma once

#include <span>
#include <vector>

#include "parallel/comm.h"

namespace homodyne {

inline constexpr int kTransferTag = 7301;

void SendBytes(const Comm& comm, int dest, std::span<const unsigned char> bytes);
// Receives exactly bytes.size() bytes sent by SendBytes from `source`.
void RecvBytes(const Comm& comm, int source, std::span<unsigned char> bytes);

void SendDoubles(const Comm& comm, int dest, std::span<const double> values);
void RecvDoubles(const Comm& comm, int source, std::span<double> values);

// Buffers of varying sizes (e.g. compressed chunks): their count and sizes, then each.
void SendBuffers(const Comm& comm, int dest, const std::vector<std::vector<unsigned char>>& bufs);
std::vector<std::vector<unsigned char>> RecvBuffers(const Comm& comm, int source);

}  // namespace homodyne
