// Placement of compute threads on cores (hwloc).
//
// One MPI rank per NUMA domain; inside a rank, one compute thread per core of the CPU
// set that mpirun/srun bound the rank to (or a requested count), each pinned to one PU
// of a distinct core.
#pragma once

#include <string>
#include <vector>

#include "core/topology.h"

namespace homodyne {

struct CoreSlot {
  int core = -1;       // hwloc logical index of the core
  int pu_os = -1;      // OS index of the PU the thread is bound to
  int numa_node = -1;  // OS index of the core's NUMA node (-1 if unknown)
};

struct PlacementPlan {
  std::string cpuset;           // the rank's binding, hwloc list syntax
  std::vector<CoreSlot> slots;  // one per compute thread
  int numa_nodes_spanned = 0;   // NUMA nodes the rank's cpuset touches
  std::vector<std::string> warnings;
  std::string Describe() const;  // "cpuset 0-1, NUMA 0, threads on cores 0,1"
};

// requested_threads ≤ 0: one thread per core of the process cpuset. More threads than
// cores is refused with a warning (threads are capped at the core count: never
// oversubscribe).
PlacementPlan PlanThreads(const Topology& topology, int requested_threads);

// Binds the calling thread to the slot's PU. Returns false (and leaves the thread
// unbound) if the operating system refuses.
bool PinCurrentThread(const Topology& topology, const CoreSlot& slot);

// Binds the calling thread to a whole CPU set (hwloc list syntax, PlacementPlan::cpuset): for
// a helper thread that may run on any core of the rank. Returns false if the set cannot be
// parsed or the operating system refuses.
bool PinCurrentThreadToSet(const Topology& topology, const std::string& cpuset);

// OS index of the PU the calling thread last ran on (-1 if unknown).
int CurrentPu(const Topology& topology);

}  // namespace homodyne
