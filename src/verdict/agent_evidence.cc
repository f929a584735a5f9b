// The verdict's word on what `laggard agent` saw on a host_contention
// culprit's cores (analysis/host/host_neighbours.h): the neighbour to stop
// or move, steal, a slow core. Internal to src/verdict/.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {

void SayWhatTheAgentSaw(Verdict& v, const Analyses& a) {
  if (a.host_cpu.seen_by_agent.empty()) return;
  std::vector<std::string> first;
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
        first.push_back(fmt::format(
            "stop or move pid {} on {} (`{}`): it used {:.2f} of a core on cpu {}, rank {}'s",
            n.pid, host, what, n.cpu_share, CpuListText(n.cpus), r));
      }
      if (seen->steal && *seen->steal >= kAgentStealFloor) {
        c.evidence.push_back(fmt::format(
            "agent on {}: the hypervisor gave {:.0f}% of rank {}'s cpu {} to another guest (steal)",
            host, 100 * *seen->steal, r, CpuListText(seen->cpus)));
        first.push_back(fmt::format(
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
  PutStepsFirst(v.next_steps, first);
}

}  // namespace laggard::verdict_internal
