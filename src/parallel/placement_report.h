// Every rank's thread placement, gathered over MPI: the run log at -v prints it
// (rank → host → NUMA node → cores/PUs) and the run report records it.
#pragma once

#include <string>
#include <vector>

#include "core/placement.h"
#include "parallel/comm.h"

namespace homodyne {

struct RankPlacement {
  int rank = 0;
  std::string host;
  PlacementPlan plan;  // cpuset and slots (warnings are not gathered)
};

// Collective over `comm`: every rank receives every rank's placement, in rank order.
std::vector<RankPlacement> GatherPlacements(const Comm& comm, const PlacementPlan& local);

// "rank 1 @ host: cpuset 1, NUMA 0 → cores 1 (PU 1)".
std::string DescribeRankPlacement(const RankPlacement& p);

// True when two ranks on the same host have a PU in common among their slots (e.g. the
// ranks were started unbound and each sees the whole machine): pinning would then put
// several ranks' threads on the same cores, so the caller leaves the threads unpinned.
bool RanksShareCores(const std::vector<RankPlacement>& all);

// When the ranks on `host` run compute threads on fewer of its cores than it has
// (`host_cores`), e.g. `mpiexec -n 1` (Open MPI binds a lone rank to one core): a message
// with the command line that gives them every core; empty otherwise.
std::string IdleCoresNote(const std::vector<RankPlacement>& all, const std::string& host,
                          int host_cores);

}  // namespace homodyne
