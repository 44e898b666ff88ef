// What `homodyne-topology --show` prints: the node's hardware and the recommended MPI
// layout (one rank per NUMA domain, one pinned thread per core) with ready-to-paste
// Open MPI and SLURM command lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/topology.h"

namespace homodyne {

struct NumaNodeInfo {
  int os_index = 0;
  int cores = 0;
  int pus = 0;
  std::uint64_t memory_bytes = 0;  // as hwloc reports it (unreliable inside VMs)
  std::string cpuset;
};

struct TopologyDescription {
  std::string cpu_model;
  int packages = 0;
  int cores = 0;
  int pus = 0;
  std::vector<NumaNodeInfo> numa_nodes;
  std::vector<std::pair<std::string, std::uint64_t>> caches;  // ("L1d", bytes per instance)
  std::uint64_t total_memory_bytes = 0;                       // from the OS
  std::string process_cpuset;
};

struct LayoutRecommendation {
  int nodes = 1;
  int ranks_per_node = 1;
  int threads_per_rank = 1;
  std::string mpirun_command;
  std::string srun_command;
  std::vector<std::string> sbatch_lines;
  std::vector<std::string> environment;  // "export X=Y" lines
  std::vector<std::string> notes;
};

TopologyDescription DescribeTopology(const Topology& topology);
LayoutRecommendation RecommendLayout(const TopologyDescription& description, int nodes,
                                     const std::string& program = "homodyne --config CONFIG.yaml");

std::string FormatTopologyText(const TopologyDescription& d, const LayoutRecommendation& r);
std::string FormatTopologyJson(const TopologyDescription& d, const LayoutRecommendation& r);

}  // namespace homodyne
