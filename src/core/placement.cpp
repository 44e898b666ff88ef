#include "core/placement.h"

#include <hwloc.h>

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace homodyne {
namespace {

hwloc_topology_t Native(const Topology& t) {
  return static_cast<hwloc_topology_t>(t.native_handle());
}

struct BitmapOwner {
  hwloc_bitmap_t map = hwloc_bitmap_alloc();
  ~BitmapOwner() { hwloc_bitmap_free(map); }
  BitmapOwner() = default;
  BitmapOwner(const BitmapOwner&) = delete;
  BitmapOwner& operator=(const BitmapOwner&) = delete;
};

int NumaOfCore(hwloc_topology_t topo, hwloc_obj_t core) {
  const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (numa->cpuset != nullptr && hwloc_bitmap_intersects(numa->cpuset, core->cpuset)) {
      return static_cast<int>(numa->os_index);
    }
  }
  return -1;
}

}  // namespace

std::string PlacementPlan::Describe() const {
  std::vector<int> pus;
  std::set<int> numas;
  for (const auto& s : slots) {
    pus.push_back(s.pu_os);
    numas.insert(s.numa_node);
  }
  return fmt::format("cpuset {}, NUMA node(s) {}, {} compute thread(s) pinned to PU(s) {}", cpuset,
                     fmt::join(numas, ","), slots.size(), fmt::join(pus, ","));
}

PlacementPlan PlanThreads(const Topology& topology, int requested_threads) {
  hwloc_topology_t topo = Native(topology);
  PlacementPlan plan;
  plan.cpuset = topology.process_cpuset();
  BitmapOwner set;
  if (hwloc_get_cpubind(topo, set.map, HWLOC_CPUBIND_PROCESS) != 0) {
    hwloc_bitmap_copy(set.map, hwloc_topology_get_allowed_cpuset(topo));
  }
  std::set<int> numas;
  const int n_cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set.map, HWLOC_OBJ_CORE);
  for (int i = 0; i < n_cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, set.map, HWLOC_OBJ_CORE,
                                                           static_cast<unsigned>(i));
    BitmapOwner pu;
    hwloc_bitmap_and(pu.map, core->cpuset, set.map);
    hwloc_bitmap_singlify(pu.map);
    CoreSlot slot{static_cast<int>(core->logical_index), hwloc_bitmap_first(pu.map),
                  NumaOfCore(topo, core)};
    numas.insert(slot.numa_node);
    plan.slots.push_back(slot);
  }
  if (plan.slots.empty()) {
    // No core objects (unusual platforms): one slot on the first PU of the set.
    plan.slots.push_back({-1, hwloc_bitmap_first(set.map), -1});
  }
  plan.numa_nodes_spanned = static_cast<int>(numas.size());
  if (plan.numa_nodes_spanned > 1) {
    plan.warnings.push_back(
        fmt::format("this rank's cpuset {} spans {} NUMA nodes; run one rank per NUMA domain "
                    "(see homodyne-topology --show)",
                    plan.cpuset, plan.numa_nodes_spanned));
  }
  if (requested_threads > 0) {
    if (requested_threads > static_cast<int>(plan.slots.size())) {
      plan.warnings.push_back(
          fmt::format("--threads {} exceeds the {} core(s) this rank is bound to; using {}",
                      requested_threads, plan.slots.size(), plan.slots.size()));
    } else {
      plan.slots.resize(static_cast<std::size_t>(requested_threads));
    }
  }
  return plan;
}

bool PinCurrentThread(const Topology& topology, const CoreSlot& slot) {
  if (slot.pu_os < 0) return false;
  BitmapOwner set;
  hwloc_bitmap_only(set.map, static_cast<unsigned>(slot.pu_os));
  return hwloc_set_cpubind(Native(topology), set.map, HWLOC_CPUBIND_THREAD) == 0;
}

bool PinCurrentThreadToSet(const Topology& topology, const std::string& cpuset) {
  BitmapOwner set;
  if (hwloc_bitmap_list_sscanf(set.map, cpuset.c_str()) != 0 || hwloc_bitmap_iszero(set.map)) {
    return false;
  }
  return hwloc_set_cpubind(Native(topology), set.map, HWLOC_CPUBIND_THREAD) == 0;
}

int CurrentPu(const Topology& topology) {
  BitmapOwner set;
  if (hwloc_get_last_cpu_location(Native(topology), set.map, HWLOC_CPUBIND_THREAD) != 0) return -1;
  return hwloc_bitmap_first(set.map);
}

}  // namespace homodyne
