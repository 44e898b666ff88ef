#include "core/topology_report.h"

#include <hwloc.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/library_versions.h"

namespace homodyne {
namespace {

std::string ListCpuset(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set);
  std::string out = text != nullptr ? text : "";
  std::free(text);
  return out;
}

std::string HumanBytes(std::uint64_t b) {
  if (b >= (1ULL << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ULL << 30));
  if (b >= (1ULL << 20)) return fmt::format("{:.0f} MiB", static_cast<double>(b) / (1ULL << 20));
  return fmt::format("{:.0f} KiB", static_cast<double>(b) / 1024.0);
}

}  // namespace

TopologyDescription DescribeTopology(const Topology& topology) {
  auto* topo = static_cast<hwloc_topology_t>(topology.native_handle());
  TopologyDescription d;
  const auto counts = topology.counts();
  d.packages = counts.packages;
  d.cores = counts.cores;
  d.pus = counts.pus;
  if (hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0)) {
    if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel")) d.cpu_model = model;
  }
  const int n_numa = std::max(1, counts.numa_nodes);
  for (int i = 0; i < counts.numa_nodes; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaNodeInfo info;
    info.os_index = static_cast<int>(numa->os_index);
    info.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_CORE);
    info.pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_PU);
    info.memory_bytes = numa->attr != nullptr ? numa->attr->numanode.local_memory : 0;
    info.cpuset = ListCpuset(numa->cpuset);
    d.numa_nodes.push_back(info);
  }
  if (d.numa_nodes.empty()) {
    d.numa_nodes.push_back(
        {0, d.cores, d.pus, 0, ListCpuset(hwloc_topology_get_topology_cpuset(topo))});
  }
  (void)n_numa;
  const std::pair<hwloc_obj_type_t, const char*> cache_types[] = {
      {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L3CACHE, "L3"}};
  for (auto [type, name] : cache_types) {
    if (hwloc_obj_t c = hwloc_get_obj_by_type(topo, type, 0); c != nullptr && c->attr != nullptr) {
      d.caches.emplace_back(name, c->attr->cache.size);
    }
  }
  struct sysinfo si {};
  if (sysinfo(&si) == 0)
    d.total_memory_bytes = static_cast<std::uint64_t>(si.totalram) * si.mem_unit;
  d.process_cpuset = topology.process_cpuset();
  return d;
}

LayoutRecommendation RecommendLayout(const TopologyDescription& d, int nodes,
                                     const std::string& program) {
  if (nodes < 1) ThrowBadInput(fmt::format("--nodes must be ≥ 1 (got {})", nodes), {}, "--nodes");
  LayoutRecommendation r;
  r.nodes = nodes;
  r.ranks_per_node = static_cast<int>(d.numa_nodes.size());
  int min_cores = d.numa_nodes.front().cores;
  for (const auto& n : d.numa_nodes) min_cores = std::min(min_cores, n.cores);
  r.threads_per_rank = std::max(1, min_cores);
  const int total_ranks = nodes * r.ranks_per_node;
  const int t = r.threads_per_rank;
  r.mpirun_command = fmt::format(
      "mpirun -np {} --map-by ppr:1:numa:PE={} --bind-to core --report-bindings {} --threads {}",
      total_ranks, t, program, t);
  r.srun_command = fmt::format(
      "srun --mpi=pmix --nodes={} --ntasks-per-node={} --cpus-per-task={} --cpu-bind=cores "
      "--mem-bind=local {} --threads {}",
      nodes, r.ranks_per_node, t, program, t);
  r.sbatch_lines = {fmt::format("#SBATCH --nodes={}", nodes),
                    fmt::format("#SBATCH --ntasks-per-node={}", r.ranks_per_node),
                    fmt::format("#SBATCH --cpus-per-task={}", t)};
  r.environment = {"export OMP_NUM_THREADS=1       # libraries stay single-threaded",
                   "export OPENBLAS_NUM_THREADS=1  # under homodyne's own pinned threads",
                   "export HDF5_USE_FILE_LOCKING=FALSE  # parallel file systems without flock"};
  if (d.numa_nodes.size() == 1) {
    r.notes.push_back(
        "one NUMA domain per node: one rank per node with one thread per core; with Open MPI "
        "the rank shows as \"not bound\" when its domain is the whole node");
  }
  if (d.pus > d.cores) {
    r.notes.push_back("SMT is on: one thread per core (not per hardware thread) is used");
  }
  return r;
}

std::string FormatTopologyText(const TopologyDescription& d, const LayoutRecommendation& r) {
  std::string out = "Hardware\n";
  out += fmt::format("  CPU            {}\n", d.cpu_model.empty() ? "(unknown)" : d.cpu_model);
  out += fmt::format(
      "  packages       {}\n  NUMA nodes     {}\n  cores          {}\n  PUs            {}\n",
      d.packages, d.numa_nodes.size(), d.cores, d.pus);
  for (const auto& [name, size] : d.caches)
    out += fmt::format("  {:<14} {}\n", name, HumanBytes(size));
  out += fmt::format("  memory (OS)    {}\n", HumanBytes(d.total_memory_bytes));
  for (const auto& n : d.numa_nodes) {
    out += fmt::format("  NUMA node {}    cores {}, PUs {}, cpuset {}, memory {} (hwloc)\n",
                       n.os_index, n.cores, n.pus, n.cpuset, HumanBytes(n.memory_bytes));
  }
  out += fmt::format("  this process   bound to {}\n", d.process_cpuset);
  out += fmt::format("\nRecommended layout for {} node(s)\n", r.nodes);
  out += fmt::format("  ranks per node   {}  (one per NUMA domain)\n", r.ranks_per_node);
  out += fmt::format("  threads per rank {}  (one per core, pinned)\n", r.threads_per_rank);
  out += fmt::format("  total ranks      {}\n", r.nodes * r.ranks_per_node);
  out += "\nOpen MPI\n  " + r.mpirun_command + "\n";
  out += "\nSLURM\n";
  for (const auto& l : r.sbatch_lines) out += "  " + l + "\n";
  out += "  " + r.srun_command + "\n";
  out += "\nEnvironment\n";
  for (const auto& e : r.environment) out += "  " + e + "\n";
  if (!r.notes.empty()) {
    out += "\nNotes\n";
    for (const auto& n : r.notes) out += "  - " + n + "\n";
  }
  return out;
}

std::string FormatTopologyJson(const TopologyDescription& d, const LayoutRecommendation& r) {
  nlohmann::json j;
  j["hardware"] = {{"cpu_model", d.cpu_model},
                   {"packages", d.packages},
                   {"numa_nodes", d.numa_nodes.size()},
                   {"cores", d.cores},
                   {"pus", d.pus},
                   {"memory_bytes", d.total_memory_bytes},
                   {"process_cpuset", d.process_cpuset}};
  for (const auto& [name, size] : d.caches) j["hardware"]["caches"][name] = size;
  for (const auto& n : d.numa_nodes) {
    j["hardware"]["numa"].push_back({{"os_index", n.os_index},
                                     {"cores", n.cores},
                                     {"pus", n.pus},
                                     {"cpuset", n.cpuset},
                                     {"memory_bytes_hwloc", n.memory_bytes}});
  }
  j["recommendation"] = {{"nodes", r.nodes},
                         {"ranks_per_node", r.ranks_per_node},
                         {"threads_per_rank", r.threads_per_rank},
                         {"total_ranks", r.nodes * r.ranks_per_node},
                         {"mpirun", r.mpirun_command},
                         {"srun", r.srun_command},
                         {"sbatch", r.sbatch_lines},
                         {"environment", r.environment},
                         {"notes", r.notes}};
  return j.dump(2) + "\n";
}

}  // namespace homodyne
