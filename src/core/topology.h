// Hardware topology of the node this rank runs on (hwloc), owned by Environment.
//
// The hwloc handle is hidden behind a pimpl so this header does not pull in hwloc.h.
#pragma once

#include <memory>
#include <string>

namespace homodyne {

struct TopologyCounts {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
};

class Topology {
 public:
  Topology();  // loads the topology of this machine; throws homodyne::Error on failure
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  TopologyCounts counts() const;

  // The CPU set this process is bound to (what mpirun/srun gave it), as hwloc's list
  // syntax ("0-1"), and the number of cores it covers.
  std::string process_cpuset() const;
  int process_cores() const;

  // The opaque hwloc_topology_t, for the placement module (cast inside src/ only).
  void* native_handle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace homodyne
