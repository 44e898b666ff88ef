#include "parallel/placement_report.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace homodyne {
namespace {

std::string HostName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

nlohmann::json ToJson(const std::string& host, const PlacementPlan& plan) {
  nlohmann::json slots = nlohmann::json::array();
  for (const auto& s : plan.slots) slots.push_back({s.core, s.pu_os, s.numa_node});
  return {{"host", host}, {"cpuset", plan.cpuset}, {"slots", slots}};
}

}  // namespace

std::vector<RankPlacement> GatherPlacements(const Comm& comm, const PlacementPlan& local) {
  const std::string mine = ToJson(HostName(), local).dump();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(comm.size()));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm.get());
  std::vector<int> offsets(lengths.size(), 0);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, comm.get());
  std::vector<RankPlacement> out;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const auto j = nlohmann::json::parse(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    RankPlacement p;
    p.rank = static_cast<int>(r);
    p.host = j.at("host").get<std::string>();
    p.plan.cpuset = j.at("cpuset").get<std::string>();
    std::set<int> numas;
    for (const auto& s : j.at("slots")) {
      p.plan.slots.push_back({s.at(0).get<int>(), s.at(1).get<int>(), s.at(2).get<int>()});
      numas.insert(s.at(2).get<int>());
    }
    p.plan.numa_nodes_spanned = static_cast<int>(numas.size());
    out.push_back(std::move(p));
  }
  return out;
}

std::string DescribeRankPlacement(const RankPlacement& p) {
  // NUMA node → its cores (PUs), in slot order.
  std::map<int, std::vector<std::string>> by_numa;
  for (const auto& s : p.plan.slots) {
    by_numa[s.numa_node].push_back(fmt::format("{} (PU {})", s.core, s.pu_os));
  }
  std::vector<std::string> parts;
  for (const auto& [numa, cores] : by_numa) {
    parts.push_back(fmt::format("NUMA {} → cores {}", numa, fmt::join(cores, ", ")));
  }
  return fmt::format("rank {} @ {}: cpuset {}, {}", p.rank, p.host, p.plan.cpuset,
                     fmt::join(parts, "; "));
}

bool RanksShareCores(const std::vector<RankPlacement>& all) {
  std::map<std::string, std::set<int>> used;  // host → PUs taken so far
  for (const auto& p : all) {
    auto& taken = used[p.host];
    for (const auto& s : p.plan.slots) {
      if (!taken.insert(s.pu_os).second) return true;
    }
  }
  return false;
}

std::string IdleCoresNote(const std::vector<RankPlacement>& all, const std::string& host,
                          int host_cores) {
  std::set<int> used;
  int ranks = 0;
  for (const auto& p : all) {
    if (p.host != host) continue;
    ++ranks;
    for (const auto& s : p.plan.slots) used.insert(s.pu_os);
  }
  const int in_use = static_cast<int>(used.size());
  if (ranks == 0 || host_cores <= 0 || in_use >= host_cores) return {};
  const int per_rank = std::max(1, host_cores / ranks);
  return fmt::format(
      "the {} rank(s) on {} compute on {} of its {} cores (mpiexec binds a rank to one core "
      "unless told otherwise); to use them all: mpiexec -n {} --map-by slot:PE={} --bind-to "
      "core homodyne ... --threads {} (homodyne-topology prints the line for a whole node)",
      ranks, host, in_use, host_cores, ranks, per_rank, per_rank);
}

}  // namespace homodyne
