#include "analysis/hangs/hang_ras.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace laggard {
namespace {

const RasCommGroup* RasGroupOf(const RasReport& r, const RasCommunicator& c) {
  for (const RasCommGroup& g : r.comm_groups) {
    if (g.index == c.group) return &g;
  }
  return nullptr;
}

std::optional<int32_t> RasGlobalRank(const RasReport& r, const RasCommunicator& c,
                                     int32_t comm_rank, std::optional<int32_t> world) {
  const RasCommGroup* g = RasGroupOf(r, c);
  if (g == nullptr || !world || g->ranks_per_comm != *world) return std::nullopt;
  return comm_rank;
}

std::string RasRankName(const RasReport& r, const RasCommunicator& c, int32_t comm_rank,
                        std::optional<int32_t> world) {
  if (RasGlobalRank(r, c, comm_rank, world)) return fmt::format("rank {}", comm_rank);
  return fmt::format("rank {} of communicator {}", comm_rank, c.hash);
}

// "pid 3748990 on node1, GPU 3"
std::string RasWhere(std::optional<int64_t> pid, const std::string& node,
                     std::optional<int32_t> gpu) {
  std::vector<std::string> parts;
  if (pid) parts.push_back(fmt::format("pid {}", *pid));
  if (!node.empty()) parts.push_back("on " + node);
  std::string s = fmt::format("{}", fmt::join(parts, " "));
  if (gpu) s += fmt::format("{}GPU {}", s.empty() ? "" : ", ", *gpu);
  return s;
}

}  // namespace

bool RasShowsProblem(const Run& run) {
  for (const RasReport& r : run.hang.ras) {
    if (!r.processes_lost.empty() || r.processes_missing.value_or(0) > 0 ||
        r.processes_dead.value_or(0) > 0) {
      return true;
    }
    for (const RasCommunicator& c : r.comms) {
      for (const std::string& p : c.problems) {
        if (p != "MISMATCH") return true;
      }
    }
  }
  return false;
}

std::optional<Finding> DecideRasLost(const Run& run, std::optional<int32_t> world,
                                     const HangDetectorOptions& o) {
  // The latest word on each process: DEAD outlasts INCOMPLETE.
  std::map<std::pair<std::string, int64_t>, const RasProcess*> lost;
  const RasReport* counts_only = nullptr;
  for (const RasReport& r : run.hang.ras) {
    for (const RasProcess& p : r.processes_lost) {
      const RasProcess*& seen = lost[{p.node, p.pid}];
      if (seen == nullptr || p.dead || !seen->dead) seen = &p;
    }
    if (r.processes_lost.empty() &&
        (r.processes_missing.value_or(0) > 0 || r.processes_dead.value_or(0) > 0)) {
      counts_only = &r;
    }
  }
  if (lost.empty() && counts_only == nullptr) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kHangProcessMissing);
  bool dead = false;
  std::vector<std::string> names;
  for (const auto& [key, p] : lost) {
    dead = dead || p->dead;
    // The ranks of that process that RAS lists as missing (2.26+ names
    // the process of each).
    std::vector<std::string> ranks;
    for (const RasReport& r : run.hang.ras) {
      for (const RasCommunicator& c : r.comms) {
        for (const RasRank& k : c.ranks) {
          if (k.issue != RasRankIssue::kMissing || k.pid != p->pid || k.node != p->node) continue;
          std::string name = RasRankName(r, c, k.comm_rank, world);
          if (std::find(ranks.begin(), ranks.end(), name) != ranks.end()) continue;
          ranks.push_back(name);
          if (auto g = RasGlobalRank(r, c, k.comm_rank, world)) f.ranks.push_back(*g);
          if (f.evidence.size() < 8) {
            f.evidence.push_back({fmt::format("RAS, communicator {} ({}): {} missing ({})", c.id,
                                              c.hash, name, RasWhere(k.pid, k.node, k.gpu)),
                                  k.src});
          }
        }
      }
    }
    std::string gpus = fmt::format("{}", fmt::join(p->gpus, ","));
    names.push_back(fmt::format("{}pid {} on {} (GPU{} {})",
                                ranks.empty() ? "" : fmt::format("{}: ", fmt::join(ranks, ", ")),
                                p->pid, p->node, p->gpus.size() == 1 ? "" : "s", gpus));
    f.evidence.insert(f.evidence.begin(),
                      {fmt::format("RAS: process {} on node {} managing GPU{} {}: {}", p->pid,
                                   p->node, p->gpus.size() == 1 ? "" : "s", gpus,
                                   p->dead ? "considered dead (no answer for 60 s)"
                                           : "did not answer (INCOMPLETE)"),
                       p->src});
  }
  std::sort(f.ranks.begin(), f.ranks.end());
  f.ranks.erase(std::unique(f.ranks.begin(), f.ranks.end()), f.ranks.end());
  if (f.ranks.size() == 1) f.entity.rank = f.ranks.front();
  if (!lost.empty()) {
    const RasProcess& first = *lost.begin()->second;
    f.entity.host = first.node;
    if (first.gpus.size() == 1) f.entity.gpu = first.gpus.front();
    f.message = fmt::format(
        "NCCL RAS {} the process{} of {}: {} while its peers wait for it",
        dead ? "lost" : "could not reach", lost.size() == 1 ? "" : "es", fmt::join(names, "; "),
        dead ? "no answer for 60 s, RAS considers it dead (crashed, killed or hung)"
             : "it did not answer RAS's query (stopped, hung or exiting)");
    f.confidence = dead ? o.confidence.ras_dead : o.confidence.ras_unreachable;
    f.next_steps.push_back(fmt::format(
        "on {0}, check process {1}: `ps -o pid,stat,etime -p {1}`; gone: read its stderr for the "
        "error before it exited and `dmesg | grep -i -e oom -e xid`; there but stopped (T) or "
        "stuck (D): `py-spy dump --pid {1}`",
        first.node, first.pid));
  } else {
    f.entity.job = true;
    int32_t missing = counts_only->processes_missing.value_or(0);
    int32_t gone = counts_only->processes_dead.value_or(0);
    f.message = fmt::format(
        "NCCL RAS could not reach {} of the job's processes{}: too many for it to name them",
        missing + gone, gone > 0 ? fmt::format(" ({} considered dead)", gone) : "");
    f.evidence.push_back({"RAS report's Errors section", counts_only->src});
    f.confidence = o.confidence.ras_counts_only;
    f.next_steps.push_back(
        "query RAS verbosely (`ncclras -v`, or `echo verbose status | nc localhost 28028`): it "
        "then names every process it cannot reach");
  }
  return f;
}

std::optional<Finding> DecideRasBehind(const Run& run, std::optional<int32_t> world, bool other,
                                       const HangDetectorOptions& o) {
  struct Latest {
    const RasReport* report = nullptr;
    const RasCommunicator* comm = nullptr;
    size_t report_index = 0;
    int same = 1;  // queries with these counts
  };
  std::map<std::string, Latest> by_hash;
  auto signature = [](const RasCommunicator& c) {
    std::vector<std::pair<std::string, int64_t>> s;
    for (const RasOpCount& oc : c.op_counts) s.emplace_back(oc.op, oc.ops_launched);
    for (const RasRank& k : c.ranks) {
      if (k.issue == RasRankIssue::kOpCount) s.emplace_back(k.op, k.ops_launched.value_or(-1));
    }
    std::sort(s.begin(), s.end());
    return s;
  };
  for (size_t i = 0; i < run.hang.ras.size(); ++i) {
    const RasReport& r = run.hang.ras[i];
    for (const RasCommunicator& c : r.comms) {
      if (c.op_counts.empty() && c.ranks.empty()) continue;
      Latest& l = by_hash[c.hash];
      if (l.comm && signature(*l.comm) == signature(c)) ++l.same;
      else if (l.comm) l.same = 1;
      l = Latest{&r, &c, i, l.comm ? l.same : 1};
    }
  }
  for (const auto& [hash, l] : by_hash) {
    bool resolved = false;
    for (size_t i = l.report_index + 1; i < run.hang.ras.size(); ++i) {
      const RasReport& later = run.hang.ras[i];
      resolved = resolved || (later.complete && std::none_of(later.comms.begin(), later.comms.end(),
                                                             [&](const RasCommunicator& c) {
                                                               return c.hash == hash;
                                                             }));
    }
    if (resolved || (l.same < 2 && !other)) continue;
    const RasCommunicator& c = *l.comm;
    std::map<std::string, int64_t> highest;
    for (const RasOpCount& oc : c.op_counts) {
      highest[oc.op] = std::max(highest[oc.op], oc.ops_launched);
    }
    for (const RasRank& k : c.ranks) {
      if (k.issue == RasRankIssue::kOpCount) {
        highest[k.op] = std::max(highest[k.op], k.ops_launched.value_or(0));
      }
    }
    std::vector<const RasRank*> behind;
    for (const RasRank& k : c.ranks) {
      if (k.issue == RasRankIssue::kOpCount && k.ops_launched.value_or(0) < highest[k.op]) {
        behind.push_back(&k);
      }
    }
    if (behind.empty()) continue;  // the ranks RAS named are ahead, or none: no one to name
    Finding f = MakeFinding(FindingCode::kHangNotJoined);
    const RasRank& first = *behind.front();
    std::vector<std::string> names;
    for (const RasRank* k : behind) {
      if (auto g = RasGlobalRank(*l.report, c, k->comm_rank, world)) f.ranks.push_back(*g);
      if (names.size() < o.max_ranks_listed) {
        names.push_back(RasRankName(*l.report, c, k->comm_rank, world));
      }
      f.evidence.push_back(
          {fmt::format("RAS, communicator {} ({}): {} has launched {} up to operation {} ({})",
                       c.id, c.hash, RasRankName(*l.report, c, k->comm_rank, world), k->op,
                       *k->ops_launched, RasWhere(k->pid, k->node, k->gpu)),
           k->src});
    }
    for (const RasOpCount& oc : c.op_counts) {
      f.evidence.push_back({fmt::format("RAS: {} ranks have launched {} up to operation {}",
                                        oc.ranks, oc.op, oc.ops_launched),
                            oc.src});
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    if (!f.ranks.empty()) f.entity.rank = f.ranks.front();
    if (!first.node.empty()) f.entity.host = first.node;
    if (first.gpu) f.entity.gpu = first.gpu;
    if (f.ranks.empty() && !f.entity.host) f.entity.job = true;
    const std::string op = first.op == "collective" ? "collective" : first.op;
    f.message = fmt::format(
        "NCCL RAS, communicator {}: {} launched {} operations only up to #{} while others "
        "launched up to #{}: {} never called the next {}{}",
        c.hash, fmt::join(names, ", "), op, *first.ops_launched, highest[first.op],
        behind.size() == 1 ? "it" : "they", op,
        l.same >= 2 ? fmt::format(" (the same counts in {} queries)", l.same)
                    : " (one query: RAS counts launches, a rank behind by a few may only be late)");
    f.confidence = l.same >= 2 ? o.confidence.ras_behind : o.confidence.ras_behind_once;
    f.next_steps.push_back(fmt::format(
        "see where {} is{}: `py-spy dump --pid {}`; query RAS again (`ncclras`): counts that do "
        "not move mean it is stuck before the collective, counts that move mean it is only slow",
        names.front(), first.node.empty() ? "" : " on " + first.node,
        first.pid ? std::to_string(*first.pid) : "PID"));
    return f;
  }
  return std::nullopt;
}

}  // namespace laggard
