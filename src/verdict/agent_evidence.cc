// The verdict's word on what `laggard agent` saw on a host_contention
// culprit's cores (analysis/host/host_neighbours.h): the neighbour to stop
// or move, steal, a slow core. Internal to src/verdict/.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {

namespace {

// One neighbour over the culprits: the ranks it shares cores with and
// their cores, its largest share.
struct Seen {
  std::string host;
  const CpuNeighbour* n = nullptr;
  std::set<int32_t> ranks;
  std::set<int32_t> cpus;
  double share = 0;
};

std::string RanksText(const std::set<int32_t>& ranks) {
  return ranks.size() == 1 ? fmt::format("rank {}", *ranks.begin())
                           : "ranks " + RankListText({ranks.begin(), ranks.end()});
}

// "0.36 of a core on cpu 1, where rank 1 runs", or, for a process that
// may run on more cores than the ranks', "1.80 cores' worth in all, on
// cpus 0-7, rank 3's cpu 1 among them".
std::string UseText(double share, const std::vector<int32_t>& allowed,
                    const std::vector<int32_t>& shared, const std::set<int32_t>& ranks) {
  const std::string worth = share < 1.005 ? fmt::format("{:.2f} of a core", share)
                                          : fmt::format("{:.2f} cores' worth", share);
  if (allowed == shared) {
    return fmt::format("{} on cpu {}, where {} run{}", worth, CpuListText(shared), RanksText(ranks),
                       ranks.size() == 1 ? "s" : "");
  }
  return fmt::format("{} in all, on cpus {}, {}'s cpu {} among them", worth, CpuListText(allowed),
                     RanksText(ranks), CpuListText(shared));
}

}  // namespace

void SayWhatTheAgentSaw(Verdict& v, const Analyses& a) {
  if (a.host_cpu.seen_by_agent.empty()) return;
  std::vector<Seen> neighbours;                                        // in the order first said
  std::map<std::string, std::pair<std::set<int32_t>, double>> stolen;  // host -> ranks, steal
  for (Culprit& c : v.culprits) {
    if (c.cause != "host_contention") continue;
    std::vector<int32_t> ranks = c.ranks;
    if (ranks.empty() && c.entity.rank) ranks.push_back(*c.entity.rank);
    std::set<std::pair<std::string, int64_t>> said;
    for (int32_t r : ranks) {
      const RankHostCpu* seen = FindRankHostCpu(a.host_cpu.seen_by_agent, r);
      if (seen == nullptr) continue;
      const std::string host = seen->host.empty() ? "its host" : seen->host;
      for (const CpuNeighbour& n : seen->neighbours) {
        if (said.size() >= kMaxNeighboursSaid || !said.emplace(seen->host, n.pid).second) continue;
        c.evidence.push_back(fmt::format(
            "agent on {}, over {:.0f} s: pid {} ({}), not one of the job's processes, used {}: "
            "`{}`",
            host, seen->window_s, n.pid, n.comm, UseText(n.cpu_share, n.cpus_allowed, n.cpus, {r}),
            n.cmdline.empty() ? n.comm : n.cmdline));
        auto it = std::find_if(neighbours.begin(), neighbours.end(),
                               [&](const Seen& s) { return s.host == host && s.n->pid == n.pid; });
        if (it == neighbours.end()) it = neighbours.insert(neighbours.end(), Seen{host, &n});
        it->ranks.insert(r);
        it->cpus.insert(n.cpus.begin(), n.cpus.end());
        it->share = std::max(it->share, n.cpu_share);
      }
      if (seen->steal && *seen->steal >= kAgentStealFloor) {
        c.evidence.push_back(fmt::format(
            "agent on {}: the hypervisor ran another guest for {:.0f}% of the time of rank {}'s "
            "cpu {} (steal)",
            host, 100 * *seen->steal, r, CpuListText(seen->cpus)));
        auto& [stole_ranks, most] = stolen[host];
        stole_ranks.insert(r);
        most = std::max(most, *seen->steal);
      }
      if (seen->speed && *seen->speed <= kAgentSlowCore) {
        c.evidence.push_back(
            fmt::format("agent on {}: rank {}'s cpu {} ran the agent's probe at {:.2f}x the host's "
                        "fastest core",
                        host, r, CpuListText(seen->cpus), *seen->speed));
      }
    }
  }
  std::vector<std::string> first;
  for (const Seen& s : neighbours) {
    first.push_back(
        fmt::format("stop or move pid {} on {} (`{}`): it used {}", s.n->pid, s.host,
                    s.n->cmdline.empty() ? s.n->comm : s.n->cmdline,
                    UseText(s.share, s.n->cpus_allowed, {s.cpus.begin(), s.cpus.end()}, s.ranks)));
  }
  for (const auto& [host, stole] : stolen) {
    first.push_back(fmt::format(
        "move {} off {}, or ask the provider about its neighbours: the hypervisor ran another "
        "guest for up to {:.0f}% of their cores' time (steal)",
        RanksText(stole.first), host, 100 * stole.second));
  }
  PutStepsFirst(v.next_steps, first);
}

}  // namespace laggard::verdict_internal
