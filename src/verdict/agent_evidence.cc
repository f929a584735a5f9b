// The verdict's word on what `laggard agent` saw on a host_contention
// culprit's cores (analysis/host/host_neighbours.h): the neighbour to stop
// or move, steal, a slow core. Internal to src/verdict/.

#include <algorithm>
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
  std::vector<int32_t> ranks;
  std::set<int32_t> cpus;
  double share = 0;
};

std::string RanksText(const std::vector<int32_t>& ranks) {
  return ranks.size() == 1 ? fmt::format("rank {}", ranks[0]) : "ranks " + RankListText(ranks);
}

}  // namespace

void SayWhatTheAgentSaw(Verdict& v, const Analyses& a) {
  if (a.host_cpu.seen_by_agent.empty()) return;
  std::vector<Seen> neighbours;  // in the order first said
  std::vector<std::string> stolen;
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
        const std::string what = n.cmdline.empty() ? n.comm : n.cmdline;
        c.evidence.push_back(fmt::format(
            "agent on {}: pid {} ({}), not the job's, used {:.2f} of a core on cpu {} where rank "
            "{} runs, over {} scans: `{}`",
            host, n.pid, n.comm, n.cpu_share, CpuListText(n.cpus), r, seen->scans, what));
        auto it = std::find_if(neighbours.begin(), neighbours.end(),
                               [&](const Seen& s) { return s.host == host && s.n->pid == n.pid; });
        if (it == neighbours.end()) it = neighbours.insert(neighbours.end(), Seen{host, &n});
        it->ranks.push_back(r);
        it->cpus.insert(n.cpus.begin(), n.cpus.end());
        it->share = std::max(it->share, n.cpu_share);
      }
      if (seen->steal && *seen->steal >= kAgentStealFloor) {
        c.evidence.push_back(fmt::format(
            "agent on {}: the hypervisor gave {:.0f}% of rank {}'s cpu {} to another guest (steal)",
            host, 100 * *seen->steal, r, CpuListText(seen->cpus)));
        stolen.push_back(fmt::format(
            "move rank {} off {}, or ask its provider about the neighbour: {:.0f}% of its cores "
            "stolen",
            r, host, 100 * *seen->steal));
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
  for (Seen& s : neighbours) {
    std::sort(s.ranks.begin(), s.ranks.end());
    first.push_back(fmt::format(
        "stop or move pid {} on {} (`{}`): it used up to {:.2f} of a core on cpu {}, where {} "
        "run{}",
        s.n->pid, s.host, s.n->cmdline.empty() ? s.n->comm : s.n->cmdline, s.share,
        CpuListText({s.cpus.begin(), s.cpus.end()}), RanksText(s.ranks),
        s.ranks.size() == 1 ? "s" : ""));
  }
  first.insert(first.end(), stolen.begin(), stolen.end());
  PutStepsFirst(v.next_steps, first);
}

}  // namespace laggard::verdict_internal
