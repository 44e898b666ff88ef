// Broadcasts of variable-length values from one rank (its size first, then its contents).
#pragma once

#include <string>
#include <vector>

#include "parallel/comm.h"

namespace homodyne {

// Rank `root`'s values on every rank of `comm` (collective; the others' are replaced).
void Broadcast(const Comm& comm, std::vector<double>& values, int root = 0);
void Broadcast(const Comm& comm, std::string& text, int root = 0);

}  // namespace homodyne
