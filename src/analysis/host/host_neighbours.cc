#include "analysis/host/host_neighbours.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/process.h"

namespace laggard {
namespace {

bool Meets(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
           std::vector<int32_t>* both = nullptr) {
  std::vector<int32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  if (both != nullptr) *both = out;
  return !out.empty();
}

// A process's cores: those it may run on, else those it was seen on.
std::vector<int32_t> CoresOf(const std::vector<const HostProcReading*>& records) {
  std::set<int32_t> cores;
  for (const HostProcReading* p : records)
    cores.insert(p->cpus_allowed.begin(), p->cpus_allowed.end());
  if (cores.empty()) {
    for (const HostProcReading* p : records) {
      if (p->last_cpu) cores.insert(*p->last_cpu);
    }
  }
  return {cores.begin(), cores.end()};
}

// One host's records, from every file that logged it.
struct HostRecords {
  std::vector<const HostProcReading*> procs;
  std::vector<const HostCpuRound*> rounds;
};

void ReadHost(const std::string& host, const HostRecords& h, std::vector<RankHostCpu>& out) {
  std::map<int32_t, std::map<int64_t, std::vector<const HostProcReading*>>> by_rank;
  std::set<int64_t> job;
  std::map<int64_t, std::vector<const HostProcReading*>> by_pid;
  std::map<int64_t, int64_t> parent;
  for (const HostProcReading* p : h.procs) {
    by_pid[p->pid].push_back(p);
    if (p->ppid) parent[p->pid] = *p->ppid;
    if (p->rank) {
      by_rank[*p->rank][p->pid].push_back(p);
      job.insert(p->pid);
    }
  }
  auto last = [](const std::vector<const HostProcReading*>& records) {
    TimeNs t = records.front()->time_ns;
    for (const HostProcReading* p : records) t = std::max(t, p->time_ns);
    return t;
  };
  for (const auto& [rank, pids] : by_rank) {
    // The pid it reported from last, when it restarted (files in any order).
    const std::vector<const HostProcReading*>* mine = nullptr;
    for (const auto& [pid, records] : pids) {
      if (mine == nullptr || last(records) > last(*mine)) mine = &records;
    }
    RankHostCpu r;
    r.rank = rank;
    r.host = host;
    r.pid = mine->front()->pid;
    r.cpus = CoresOf(*mine);
    TimeNs from = mine->front()->time_ns, to = mine->front()->time_ns;
    for (const HostProcReading* p : *mine) {
      from = std::min(from, p->time_ns);
      to = std::max(to, p->time_ns);
    }
    auto inside = [&](TimeNs t) { return t >= from && t <= to; };
    std::set<TimeNs> scans;
    for (const HostProcReading* p : h.procs) {
      if (inside(p->time_ns)) scans.insert(p->time_ns);
    }
    r.scans = scans.size();
    r.window_s = static_cast<double>(to - from) / 1e9;
    for (const auto& [pid, records] : by_pid) {
      if (job.count(pid) > 0 || DescendsFrom(pid, parent, job)) continue;
      std::vector<int32_t> allowed = CoresOf(records), shared;
      if (!Meets(allowed, r.cpus, &shared)) continue;
      double sum = 0;
      const HostProcReading* busiest = nullptr;
      for (const HostProcReading* p : records) {
        if (!inside(p->time_ns)) continue;
        sum += p->cpu_share;
        if (busiest == nullptr || p->cpu_share > busiest->cpu_share) busiest = p;
      }
      if (busiest == nullptr || r.scans == 0) continue;
      const double share = sum / static_cast<double>(r.scans);
      if (share < kMinNeighbourShare) continue;
      r.neighbours.push_back(CpuNeighbour{.pid = pid,
                                          .comm = busiest->comm,
                                          .cmdline = busiest->cmdline,
                                          .cpu_share = share,
                                          .cpus = std::move(shared),
                                          .cpus_allowed = std::move(allowed),
                                          .src = busiest->src});
    }
    std::sort(r.neighbours.begin(), r.neighbours.end(),
              [](const CpuNeighbour& a, const CpuNeighbour& b) {
                return a.cpu_share != b.cpu_share ? a.cpu_share > b.cpu_share : a.pid < b.pid;
              });
    double steal = 0, speed = 0;
    size_t steals = 0, speeds = 0;
    for (const HostCpuRound* round : h.rounds) {
      if (!inside(round->time_ns)) continue;
      for (const CoreReading& c : round->cores) {
        if (!std::binary_search(r.cpus.begin(), r.cpus.end(), c.cpu)) continue;
        if (c.steal) {
          steal += *c.steal;
          ++steals;
        }
        if (c.speed) {
          speed += *c.speed;
          ++speeds;
        }
      }
    }
    if (steals > 0) r.steal = steal / static_cast<double>(steals);
    if (speeds > 0) r.speed = speed / static_cast<double>(speeds);
    out.push_back(std::move(r));
  }
}

}  // namespace

namespace {

// A host's name up to its first dot, in lower case: "Node-1.cluster" and
// "node-1" are one host. An address ("10.0.0.1": its first part digits)
// stays whole: 10.0.0.1 and 10.0.0.2 are two.
std::string ShortHostName(const std::string& host) {
  std::string out = host.substr(0, host.find('.'));
  if (!out.empty() &&
      std::all_of(out.begin(), out.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }))
    out = host;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

// The host `rank`'s step records name (or the agent's where one host tied
// it), else its trace's.
std::optional<std::string> RankHost(const Run& run, int32_t rank) {
  const StepSeries* s = run.FindRank(rank);
  if (s != nullptr && s->info.host) return s->info.host;
  for (const RankTrace& t : run.traces) {
    if (t.rank == rank && t.host) return t.host;
  }
  return std::nullopt;
}

}  // namespace

std::vector<RankHostCpu> RanksOnHostCpus(const Run& run) {
  if (run.hardware.host_cpu.empty()) return {};  // no agent log: no pass over the steps
  const std::optional<StepTimeSpan> span = StepTimesOf(run);
  std::map<std::string, HostRecords> hosts;
  for (const HostCpuLog& log : run.hardware.host_cpu) {
    HostRecords& h = hosts[log.host];
    for (const HostProcReading& p : log.procs) {
      if (InJobSpan(span, p.time_ns)) h.procs.push_back(&p);
    }
    for (const HostCpuRound& r : log.rounds) {
      if (InJobSpan(span, r.time_ns)) h.rounds.push_back(&r);
    }
  }
  std::vector<RankHostCpu> out;
  for (const auto& [host, h] : hosts) ReadHost(host, h, out);
  // A rank two hosts tie to (two jobs numbering their ranks alike, a host
  // label changed mid-run): the one on the rank's own host (its step
  // records', its trace's, or the agent's where one host tied it,
  // RunBuilder's HostsFromAgent), else none: another host's neighbours are
  // not its own. One tie stays as it is (a host spelled two ways).
  std::stable_sort(out.begin(), out.end(),
                   [](const RankHostCpu& a, const RankHostCpu& b) { return a.rank < b.rank; });
  std::vector<RankHostCpu> kept;
  for (size_t i = 0; i < out.size();) {
    size_t j = i;
    while (j < out.size() && out[j].rank == out[i].rank) ++j;
    if (j - i == 1) {
      kept.push_back(std::move(out[i]));
    } else {
      const std::optional<std::string> own = RankHost(run, out[i].rank);
      // Its name as the agent spells it, else the one host whose short
      // name matches (node-1 and node-1.cluster.local), else none.
      size_t pick = j, alike = 0;
      for (size_t k = i; k < j && own; ++k) {
        if (out[k].host == *own) {
          pick = k;
          alike = 1;
          break;
        }
        if (ShortHostName(out[k].host) == ShortHostName(*own)) pick = k, ++alike;
      }
      if (alike == 1) kept.push_back(std::move(out[pick]));
    }
    i = j;
  }
  return kept;
}

const RankHostCpu* FindRankHostCpu(const std::vector<RankHostCpu>& all, int32_t rank) {
  auto it = std::lower_bound(all.begin(), all.end(), rank,
                             [](const RankHostCpu& r, int32_t x) { return r.rank < x; });
  return it != all.end() && it->rank == rank ? &*it : nullptr;
}

std::string CpuListText(const std::vector<int32_t>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace laggard
