#include "analysis/hang_detector.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include "analysis/hang_episodes.h"
#include "analysis/parallel_layout.h"
#include "base/text.h"

namespace laggard {
namespace {

constexpr double kConfidenceAllDumps = 0.85;
constexpr double kConfidencePartial = 0.6;
constexpr double kConfidenceLines = 0.5;

bool IsDefaultGroup(std::string_view id, std::string_view desc) {
  return id == "0" || desc == "default_pg";
}

std::string RankList(const std::vector<int32_t>& ranks, size_t max) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size() && i < max; ++i) parts.push_back(std::to_string(ranks[i]));
  std::string s = fmt::format("{}", fmt::join(parts, ", "));
  if (ranks.size() > max) s += fmt::format(" (+{} more)", ranks.size() - max);
  return s;
}

// "rank 2" / "ranks 0, 1, 3".
std::string Ranks(const std::vector<int32_t>& ranks, size_t max) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + RankList(ranks, max);
}

std::string SizesText(const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<std::string> parts;
  for (const auto& s : sizes) parts.push_back(fmt::format("[{}]", fmt::join(s, ", ")));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string FramesText(const std::vector<StackFrame>& frames) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < frames.size() && i < 4; ++i) {
    parts.push_back(fmt::format("{} ({}:{})", frames[i].name, frames[i].file, frames[i].line));
  }
  return fmt::format("{}", fmt::join(parts, " <- "));
}

class Collector {
 public:
  Collector(const Run& run, const std::vector<HangEvent>& events) : run_(run), events_(events) {}

  HangRankState& State(const std::string& pg_id, const std::string& desc, int32_t rank) {
    Group& g = groups_[pg_id];
    if (g.desc.empty()) g.desc = desc;
    HangRankState& s = g.ranks[rank];
    s.rank = rank;
    return s;
  }

  void FromDumps() {
    for (const FlightRecorderDump& d : run_.hang.dumps) {
      if (!d.rank) continue;
      for (const GroupProgress& p : d.status) {
        HangRankState& s = State(p.pg_id, "", *d.rank);
        s.from_dump = true;
        s.enqueued = p.last_enqueued;
        s.completed = p.last_completed;
        s.src = SourceRef{d.file, 0};
      }
      // The entry each group waits in (its first not completed), else its
      // last one: op, sizes and stack.
      for (const CollectiveRecord& e : d.entries) {
        if (e.is_p2p.value_or(false) || !e.collective_seq) continue;
        auto git = groups_.find(e.pg_id);
        if (git == groups_.end()) continue;
        auto rit = git->second.ranks.find(*d.rank);
        if (rit == git->second.ranks.end()) continue;
        HangRankState& s = rit->second;
        if (git->second.desc.empty()) git->second.desc = e.pg_desc;
        const int64_t waiting = s.completed.value_or(-1) + 1;
        if (*e.collective_seq == waiting) {
          s.op_waiting = e.op;
          s.sizes_waiting = SizesText(e.input_sizes);
          s.frames = e.frames;
        } else if (s.op_waiting.empty() && *e.collective_seq < waiting) {
          s.frames = e.frames;  // the latest entry before it, until the one waited in shows
        }
      }
    }
  }

  void FromEvents() {
    for (const HangEvent& e : events_) {
      const bool timeout = e.kind == HangEventKind::kWatchdogTimeout ||
                           e.kind == HangEventKind::kWatchdogException ||
                           e.kind == HangEventKind::kBlockingWaitTimeout;
      if (!timeout) continue;
      std::string id = e.pg_id;
      if (id.empty()) id = e.pg_desc == "default_pg" ? "0" : "?";
      std::optional<int32_t> rank = e.rank;
      if (!rank && IsDefaultGroup(id, e.pg_desc)) rank = e.group_rank;
      if (!rank) continue;
      HangRankState& s = State(id, e.pg_desc, *rank);
      if (!s.src) s.src = e.src;
      if (e.seq) s.timed_out = s.timed_out ? std::min(*s.timed_out, *e.seq) : *e.seq;
      if (s.from_dump) continue;  // the dump's numbers are the rank's own, exact
      if (e.last_completed) {
        s.completed = std::max(s.completed.value_or(-1), *e.last_completed);
        s.completed_inferred = false;
      }
      if (e.last_enqueued) s.enqueued = std::max(s.enqueued.value_or(-1), *e.last_enqueued);
      if (e.kind == HangEventKind::kWatchdogTimeout && e.seq) {
        // Collectives of a group complete in order: the ones before the
        // timed-out work had completed, it had been enqueued.
        if (!s.completed) {
          s.completed = *e.seq - 1;
          s.completed_inferred = true;
        }
        s.enqueued = std::max(s.enqueued.value_or(*e.seq), *e.seq);
      }
      if (s.op_waiting.empty() && !e.op.empty()) s.op_waiting = e.op;
    }
  }

  // The groups, with members and the stuck collective.
  std::vector<HangGroupState> Finish(std::optional<int32_t> world) const {
    std::vector<HangGroupState> out;
    for (const auto& [id, g] : groups_) {
      HangGroupState gs;
      gs.pg_id = id;
      gs.pg_desc = g.desc;
      for (const auto& [rank, s] : g.ranks) gs.ranks.push_back(s);
      for (const ProcessGroupInfo& info : run_.hang.groups) {
        if (info.id == id && !info.ranks.empty()) gs.members = info.ranks;
        if (gs.pg_desc.empty() && info.id == id) gs.pg_desc = info.desc;
      }
      if (gs.members.empty() && world && IsDefaultGroup(id, gs.pg_desc)) {
        for (int32_t r = 0; r < *world; ++r) gs.members.push_back(r);
      }
      gs.stuck_seq = StuckSeq(gs.ranks);
      out.push_back(std::move(gs));
    }
    DropRepeatedUnnamed(out);
    return out;
  }

  // torch 2.x prints a timeout's "[Rank 0] Watchdog caught ..." without
  // its group and the "[PG 1 Rank 0] Exception ..." beside it with it: a
  // rank's state in the unnamed group that a named group holds with the
  // same collective is that group's, said twice.
  static void DropRepeatedUnnamed(std::vector<HangGroupState>& groups) {
    auto unnamed = std::find_if(groups.begin(), groups.end(),
                                [](const HangGroupState& g) { return g.pg_id == "?"; });
    if (unnamed == groups.end()) return;
    auto waiting_in = [](const HangRankState& s) -> std::optional<int64_t> {
      if (s.timed_out) return s.timed_out;
      if (Waiting(s) && s.completed) return *s.completed + 1;
      return std::nullopt;
    };
    // The named groups' collectives per rank, looked up once per unnamed
    // state (10^4-rank logs: not every group's ranks for every state).
    std::multimap<int32_t, int64_t> named;
    for (const HangGroupState& g : groups) {
      if (&g == &*unnamed) continue;
      for (const HangRankState& t : g.ranks) {
        if (auto n = waiting_in(t)) named.emplace(t.rank, *n);
      }
    }
    std::erase_if(unnamed->ranks, [&](const HangRankState& s) {
      const std::optional<int64_t> n = waiting_in(s);
      if (!n) return false;
      auto [lo, hi] = named.equal_range(s.rank);
      return std::any_of(lo, hi, [&](const auto& kv) { return kv.second == n; });
    });
    if (unnamed->ranks.empty()) {
      groups.erase(unnamed);
    } else {
      unnamed->stuck_seq = StuckSeq(unnamed->ranks);
    }
  }

  // The smallest collective a rank waits in.
  static std::optional<int64_t> StuckSeq(const std::vector<HangRankState>& ranks) {
    std::optional<int64_t> stuck;
    for (const HangRankState& s : ranks) {
      if (!Waiting(s)) continue;
      int64_t n = s.completed ? *s.completed + 1 : *s.timed_out;
      stuck = stuck ? std::min(*stuck, n) : n;
    }
    return stuck;
  }

  // Waiting in a collective: enqueued past what it completed, or timed out.
  static bool Waiting(const HangRankState& s) {
    if (s.enqueued && s.completed) return *s.enqueued > *s.completed;
    return s.timed_out.has_value();
  }

 private:
  struct Group {
    std::string desc;
    std::map<int32_t, HangRankState> ranks;
  };
  const Run& run_;
  const std::vector<HangEvent>& events_;  // the latest stop's (hang_episodes.h)
  std::map<std::string, Group> groups_;
};

std::optional<int32_t> WorldOf(const Run& run, const std::vector<HangEvent>& events) {
  int32_t world = RanksSeen(run);
  for (const RankTrace& t : run.traces) {
    if (t.world_size) world = std::max(world, *t.world_size);
  }
  for (const ProcessGroupInfo& g : run.hang.groups) {
    if (IsDefaultGroup(g.id, g.desc) && g.size) world = std::max(world, *g.size);
    for (int32_t r : g.ranks) world = std::max(world, r + 1);
  }
  for (const FlightRecorderDump& d : run.hang.dumps) {
    if (d.rank) world = std::max(world, *d.rank + 1);
  }
  for (const HangEvent& e : events) {
    if (e.rank) world = std::max(world, *e.rank + 1);
  }
  // A RAS report's largest communicator: every rank of the job is in the
  // world communicator.
  for (const RasReport& r : run.hang.ras) {
    for (const RasCommGroup& g : r.comm_groups) world = std::max(world, g.ranks_per_comm);
  }
  if (world <= 0) return std::nullopt;
  return world;
}

std::string GroupName(const HangGroupState& g) {
  if (g.pg_id == "?") return "a process group the lines do not name";
  return g.pg_desc.empty() ? fmt::format("process group {}", g.pg_id)
                           : fmt::format("process group {} ({})", g.pg_id, g.pg_desc);
}

Finding Base(FindingCode code) {
  Finding f;
  f.code = code;
  f.severity = Describe(code).severity;
  return f;
}

double ConfidenceOf(const HangGroupState& g) {
  bool dumps = std::all_of(g.ranks.begin(), g.ranks.end(),
                           [](const HangRankState& s) { return s.from_dump; });
  if (!dumps) return kConfidenceLines;
  return !g.members.empty() && g.ranks.size() == g.members.size() ? kConfidenceAllDumps
                                                                  : kConfidencePartial;
}

void AddStateEvidence(Finding& f, const HangRankState& s) {
  std::string where = fmt::format("rank {}: last enqueued #{}, last completed #{}", s.rank,
                                  s.enqueued ? std::to_string(*s.enqueued) : "?",
                                  s.completed ? std::to_string(*s.completed) : "?");
  if (!s.op_waiting.empty()) {
    where += fmt::format(", waiting in {}", s.op_waiting);
    if (!s.sizes_waiting.empty() && s.sizes_waiting != "[]") where += " " + s.sizes_waiting;
  }
  if (s.timed_out) where += fmt::format(", watchdog on #{}", *s.timed_out);
  f.evidence.push_back({where, s.src});
  if (!s.frames.empty()) {
    f.evidence.push_back(
        {fmt::format("rank {}'s last entry's stack: {}", s.rank, FramesText(s.frames)), s.src});
  }
}

std::optional<Finding> DecideDesync(const HangGroupState& g, const HangDetectorOptions& o) {
  if (!g.stuck_seq) return std::nullopt;
  const int64_t n = *g.stuck_seq;
  // Different ops or sizes at N.
  std::map<std::string, std::vector<int32_t>> by_op;
  for (const HangRankState& s : g.ranks) {
    if (!Collector::Waiting(s) || !s.completed || *s.completed + 1 != n) continue;
    if (!s.from_dump || s.op_waiting.empty()) continue;
    by_op[s.op_waiting + " " + s.sizes_waiting].push_back(s.rank);
  }
  if (by_op.size() > 1) {
    auto majority = std::max_element(by_op.begin(), by_op.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    Finding f = Base(FindingCode::kHangDesync);
    for (const auto& [op, ranks] : by_op) {
      if (&op == &majority->first) continue;
      f.ranks.insert(f.ranks.end(), ranks.begin(), ranks.end());
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.entity.rank = f.ranks.front();
    std::vector<std::string> ops;
    for (const auto& [op, ranks] : by_op) {
      ops.push_back(fmt::format("{} on rank {}", op, RankList(ranks, o.max_ranks_listed)));
    }
    f.message = fmt::format(
        "{}: collective #{} is not the same on every rank ({}): {} called a different op",
        GroupName(g), n, fmt::join(ops, "; "), Ranks(f.ranks, o.max_ranks_listed));
    f.confidence = ConfidenceOf(g);
    for (const HangRankState& s : g.ranks) AddStateEvidence(f, s);
    f.next_steps.push_back(fmt::format(
        "find where rank {} calls {} differently: a collective under a condition only some ranks "
        "take, or tensors of rank-dependent shape; TORCH_DISTRIBUTED_DEBUG=DETAIL catches the "
        "mismatch at its call",
        f.ranks.front(), majority->first));
    return f;
  }
  // Ranks past N (they completed it) while others wait in it.
  std::vector<int32_t> behind, ahead;
  int64_t furthest = n - 1;
  for (const HangRankState& s : g.ranks) {
    if (!s.completed) continue;
    if (*s.completed >= n && !s.completed_inferred) {
      ahead.push_back(s.rank);
      furthest = std::max(furthest, *s.completed);
    } else if (Collector::Waiting(s) && *s.completed + 1 == n) {
      behind.push_back(s.rank);
    }
  }
  if (ahead.empty() || behind.empty()) return std::nullopt;
  Finding f = Base(FindingCode::kHangDesync);
  f.ranks = behind;
  f.entity.rank = behind.front();
  f.message = fmt::format(
      "{}: {} {} in collective #{} while {} completed it and went on (up to #{}): the "
      "ranks are at different collectives; {} behind by {}",
      GroupName(g), Ranks(behind, o.max_ranks_listed), behind.size() == 1 ? "waits" : "wait", n,
      Ranks(ahead, o.max_ranks_listed), furthest, Ranks(behind, o.max_ranks_listed),
      furthest - (n - 1));
  f.confidence = ConfidenceOf(g);
  for (const HangRankState& s : g.ranks) AddStateEvidence(f, s);
  f.next_steps.push_back(fmt::format(
      "the ranks' collective sequences differ: compare the code paths of ranks {} and {} (a "
      "collective some ranks skip, an uneven number of batches); rerun with "
      "TORCH_DISTRIBUTED_DEBUG=DETAIL",
      RankList(behind, 4), RankList(ahead, 4)));
  return f;
}

std::optional<Finding> DecideNotJoined(const HangGroupState& g, const HangDetectorOptions& o) {
  if (!g.stuck_seq) return std::nullopt;
  const int64_t n = *g.stuck_seq;
  std::vector<int32_t> missing, waiting;
  for (const HangRankState& s : g.ranks) {
    if (Collector::Waiting(s)) {
      waiting.push_back(s.rank);
    } else if (s.completed && *s.completed < n) {
      missing.push_back(s.rank);  // done with all it enqueued, never enqueued #n
    }
  }
  if (missing.empty() || waiting.empty()) return std::nullopt;
  Finding f = Base(FindingCode::kHangNotJoined);
  f.ranks = missing;
  f.entity.rank = missing.front();
  std::string op;
  for (const HangRankState& s : g.ranks) {
    if (Collector::Waiting(s) && !s.op_waiting.empty()) op = " (" + s.op_waiting + ")";
  }
  f.message = fmt::format(
      "{}: {} never reached collective #{}{}, which {} wait in: finished #{} and stopped "
      "before it",
      GroupName(g), Ranks(missing, o.max_ranks_listed), n, op, Ranks(waiting, o.max_ranks_listed),
      n - 1);
  f.confidence = ConfidenceOf(g);
  for (const HangRankState& s : g.ranks) {
    if (std::find(missing.begin(), missing.end(), s.rank) != missing.end()) AddStateEvidence(f, s);
  }
  for (const HangRankState& s : g.ranks) {
    if (Collector::Waiting(s) && f.evidence.size() < 8) AddStateEvidence(f, s);
  }
  f.next_steps.push_back(fmt::format(
      "see where rank {} is: `py-spy dump --pid PID` on its host (every python process of it); "
      "check its GPU (`dmesg | grep -i xid`, `nvidia-smi -q`) and host (CPU, memory, a stalled "
      "data loader or checkpoint write)",
      missing.front()));
  return f;
}

std::optional<Finding> DecideStuck(const HangGroupState& g, const HangDetectorOptions& o) {
  if (!g.stuck_seq || g.members.empty() || g.ranks.size() < g.members.size()) return std::nullopt;
  for (const HangRankState& s : g.ranks) {
    if (!Collector::Waiting(s) || !s.completed || *s.completed + 1 != *g.stuck_seq) {
      return std::nullopt;
    }
  }
  Finding f = Base(FindingCode::kHangStuckCollective);
  f.entity.job = true;
  f.ranks = g.members;
  f.message = fmt::format(
      "{}: every one of its {} ranks joined collective #{}{} and none completed it: the "
      "transfer itself is stuck (network or NCCL), no rank is missing",
      GroupName(g), g.members.size(), *g.stuck_seq,
      g.ranks.front().op_waiting.empty() ? "" : " (" + g.ranks.front().op_waiting + ")");
  f.confidence = ConfidenceOf(g);
  for (size_t i = 0; i < g.ranks.size() && i < 4; ++i) AddStateEvidence(f, g.ranks[i]);
  f.next_steps.push_back(fmt::format(
      "check the network between ranks {}: NCCL_DEBUG=INFO logs for NET/IB errors, ibstat and "
      "port counters of their hosts, nccl-tests across them",
      RankList(g.members, o.max_ranks_listed)));
  return f;
}

// PyTorch's own desync report names the ranks that did not join.
std::optional<Finding> DecideFromReports(const std::vector<HangEvent>& events,
                                         const HangDetectorOptions& o) {
  for (FindingCode code : {FindingCode::kHangDesync, FindingCode::kHangNotJoined}) {
    const HangEventKind kind = code == FindingCode::kHangDesync ? HangEventKind::kCollectiveMismatch
                                                                : HangEventKind::kDesyncReport;
    std::set<int32_t> named;
    std::vector<const HangEvent*> lines;
    for (const HangEvent& e : events) {
      if (e.kind != kind || e.ranks_named.empty()) continue;
      named.insert(e.ranks_named.begin(), e.ranks_named.end());
      lines.push_back(&e);
    }
    if (named.empty()) continue;
    Finding f = Base(code);
    f.ranks.assign(named.begin(), named.end());
    f.entity.rank = f.ranks.front();
    f.message = code == FindingCode::kHangDesync
                    ? fmt::format(
                          "torch.distributed's collective check (TORCH_DISTRIBUTED_DEBUG=DETAIL) "
                          "found {} running different collectives at one sequence number{} ({} "
                          "check{}; each names both sides of a pair, which side took the wrong "
                          "path is in the code)",
                          Ranks(f.ranks, o.max_ranks_listed),
                          lines.front()->seq ? fmt::format(", first #{}", *lines.front()->seq)
                                             : std::string(),
                          lines.size(), lines.size() == 1 ? "" : "s")
                    : fmt::format(
                          "PyTorch's desync report names {} as not joining the collective "
                          "the others wait in",
                          Ranks(f.ranks, o.max_ranks_listed));
    f.confidence = kConfidenceLines + 0.1;
    for (size_t i = 0; i < lines.size() && i < 4; ++i) {
      f.evidence.push_back({lines[i]->text, lines[i]->src});
    }
    f.next_steps.push_back(
        code == FindingCode::kHangDesync
            ? fmt::format("find where rank {} calls a different collective than its peers (the "
                          "mismatch message gives both)",
                          f.ranks.front())
            : fmt::format("see where rank {} is: `py-spy dump --pid PID` on its host; check its "
                          "GPU (`dmesg | grep -i xid`) and host",
                          f.ranks.front()));
    return f;
  }
  return std::nullopt;
}

std::optional<Finding> DecideProcessMissing(const std::vector<HangEvent>& events,
                                            const HangDetectorOptions& o) {
  // The watchdog aborts its own process (SIGABRT, exit -6) after a
  // timeout: that exit is the hang's consequence, not its cause.
  std::map<int32_t, const HangEvent*> exited;
  for (const HangEvent& e : events) {
    if (e.kind != HangEventKind::kProcessExited || !e.rank) continue;
    if (e.exit_code && *e.exit_code == -6) continue;
    exited.emplace(*e.rank, &e);
  }
  if (exited.empty()) return std::nullopt;
  Finding f = Base(FindingCode::kHangProcessMissing);
  for (const auto& [rank, e] : exited) {
    f.ranks.push_back(rank);
    f.evidence.push_back({e->text, e->src});
  }
  f.entity.rank = f.ranks.front();
  const HangEvent& first = *exited.begin()->second;
  if (!first.host.empty()) f.entity.host = first.host;
  f.message = fmt::format("the process of rank {} exited{}{} while its peers waited for it",
                          RankList(f.ranks, o.max_ranks_listed),
                          first.exit_code ? fmt::format(" (exit code {})", *first.exit_code) : "",
                          first.host.empty() ? "" : " on " + first.host);
  f.confidence = kConfidenceLines;
  f.next_steps.push_back(fmt::format(
      "read rank {}'s stderr for the error before it exited; exit -9 is a kill (the OOM "
      "killer: `dmesg | grep -i oom`), a negative code -N is signal N",
      f.ranks.front()));
  return f;
}

// The rank of an NCCL line's process: its own, or the one NCCL_DEBUG=INFO's
// comm init lines of the same host and pid gave (model/network.h), when
// that communicator is the largest seen (a rank of a smaller one is not
// the global rank).
std::optional<int32_t> NcclLineRank(const Run& run, const HangEvent& e) {
  if (e.rank) return e.rank;
  if (!e.pid || e.host.empty()) return std::nullopt;
  int32_t largest = 0;
  for (const NcclRankInfo& r : run.network.nccl_ranks)
    largest = std::max(largest, r.nranks.value_or(0));
  for (const NcclRankInfo& r : run.network.nccl_ranks) {
    if (r.rank && r.pid == e.pid && r.host == e.host && r.nranks == largest) return r.rank;
  }
  return std::nullopt;
}

std::optional<Finding> DecideTransport(const Run& run, const std::vector<HangEvent>& events,
                                       const HangDetectorOptions& o) {
  std::vector<const HangEvent*> lines;
  std::set<int32_t> ranks;
  for (const HangEvent& e : events) {
    if (e.kind != HangEventKind::kTransportError && e.kind != HangEventKind::kRemoteError) continue;
    lines.push_back(&e);
    if (auto r = NcclLineRank(run, e)) ranks.insert(*r);
  }
  if (lines.empty()) return std::nullopt;
  Finding f = Base(FindingCode::kHangTransportError);
  f.ranks.assign(ranks.begin(), ranks.end());
  const HangEvent* first = lines.front();
  for (const HangEvent* e : lines) {
    if (e->kind == HangEventKind::kTransportError) {
      first = e;
      break;
    }
  }
  // The hosts that printed them, in order of their first line: errors on
  // several hosts are not one host's link.
  std::vector<std::pair<std::string, size_t>> hosts;
  for (const HangEvent* e : lines) {
    if (e->host.empty()) continue;
    auto it =
        std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == e->host; });
    if (it == hosts.end()) {
      hosts.emplace_back(e->host, 1);
    } else {
      ++it->second;
    }
  }
  const std::string detail =
      fmt::format("{}{}", first->peer.empty() ? "" : ", peer " + first->peer,
                  first->error_code ? fmt::format(", error {}", *first->error_code) : "");
  if (hosts.size() <= 1) {
    if (!first->host.empty()) f.entity.host = first->host;
    if (!first->peer.empty()) f.entity.nic = first->peer;
    f.message = fmt::format("{} transport error{}{}{}", lines.size(), lines.size() == 1 ? "" : "s",
                            first->host.empty() ? "" : " on " + first->host, detail);
  } else {
    std::vector<std::string> each;
    for (const auto& [host, n] : hosts) {
      if (each.size() == 4) {
        each.push_back(fmt::format("{} more", hosts.size() - 4));
        break;
      }
      each.push_back(fmt::format("{} ({})", host, n));
    }
    f.message = fmt::format("{} transport errors on {} hosts: {}; the first NET error{}{}",
                            lines.size(), hosts.size(), fmt::join(each, ", "),
                            first->host.empty() ? "" : " on " + first->host, detail);
  }
  if (f.ranks.size() == 1) f.entity.rank = f.ranks.front();
  if (!f.entity.host && !f.entity.rank) f.entity.job = true;
  if (!ranks.empty()) f.message += ", " + Ranks(f.ranks, o.max_ranks_listed);
  f.confidence = kConfidenceLines;
  for (size_t i = 0; i < lines.size() && i < 4; ++i) {
    f.evidence.push_back({lines[i]->text, lines[i]->src});
  }
  f.next_steps.push_back(fmt::format(
      "check the NIC and link{}{}: ibstat, port counters (symbol errors, link downed), "
      "`dmesg | grep -i mlx5`; IB error 12 (retry exceeded) means the peer stopped answering: "
      "check the peer host too",
      first->host.empty() ? "" : " of " + first->host,
      first->peer.empty() ? "" : " towards " + first->peer));
  return f;
}

// NCCL RAS reports (model/hang.h RasReport). RAS names ranks within a
// communicator; they are global ranks only in a communicator of the whole
// job (its size is the world's), else they are said as "rank N of
// communicator H".
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

// What of a RAS report is hang evidence: a process it could not reach, an
// NCCL error, a communicator it could not complete. A MISMATCH of operation
// counts in one query is not: NCCL's collectives outrun RAS's own query
// (the RAS documentation's sample shows 6 ranks one operation behind on a
// job that runs well); it is when the same counts show in two queries, or
// beside other hang evidence.
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
  Finding f = Base(FindingCode::kHangProcessMissing);
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
    f.confidence = dead ? 0.8 : 0.6;
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
    f.confidence = 0.5;
    f.next_steps.push_back(
        "query RAS verbosely (`ncclras -v`, or `echo verbose status | nc localhost 28028`): it "
        "then names every process it cannot reach");
  }
  (void)o;
  return f;
}

// Ranks whose operation count is behind the communicator's highest: they
// never launched the collectives the others launched. From the latest
// report that details the communicator; "persists" when an earlier report
// gave it the same counts, "resolved" when a later complete report no
// longer details it.
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
    Finding f = Base(FindingCode::kHangNotJoined);
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
    f.confidence = l.same >= 2 ? 0.7 : 0.4;
    f.next_steps.push_back(fmt::format(
        "see where {} is{}: `py-spy dump --pid {}`; query RAS again (`ncclras`): counts that do "
        "not move mean it is stuck before the collective, counts that move mean it is only slow",
        names.front(), first.node.empty() ? "" : " on " + first.node,
        first.pid ? std::to_string(*first.pid) : "PID"));
    return f;
  }
  return std::nullopt;
}

// What hang lines that place no rank in a group show: "2 watchdog
// timeouts, 3 process exits (exit codes -6, 1)", and the first line of
// each kind as evidence.
std::string UnplacedLines(const std::vector<HangEvent>& events, Finding& f) {
  static constexpr std::string_view kWords[] = {
      "watchdog timeout",    "watchdog exception", "blocking-wait timeout", "desync report",
      "collective mismatch", "gloo error",         "NCCL transport error",  "remote error",
      "process exit",        "watchdog abort line"};
  static_assert(std::size(kWords) == static_cast<size_t>(HangEventKind::kCount));
  std::array<size_t, std::size(kWords)> count{};
  std::array<const HangEvent*, std::size(kWords)> first{};
  std::set<int32_t> exits;
  for (const HangEvent& e : events) {
    size_t k = static_cast<size_t>(e.kind);
    if (count[k]++ == 0) first[k] = &e;
    if (e.exit_code) exits.insert(*e.exit_code);
  }
  std::vector<std::string> parts;
  for (size_t k = 0; k < count.size(); ++k) {
    if (count[k] == 0) continue;
    std::string p = fmt::format("{} {}{}", count[k], kWords[k], count[k] == 1 ? "" : "s");
    if (static_cast<HangEventKind>(k) == HangEventKind::kProcessExited && !exits.empty()) {
      p += fmt::format(" (exit code{} {})", exits.size() == 1 ? "" : "s", fmt::join(exits, ", "));
    }
    parts.push_back(std::move(p));
    if (f.evidence.size() < 6) {
      f.evidence.push_back(
          {fmt::format("first {}: {}", kWords[k], Printable(first[k]->text, 160)), first[k]->src});
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

Finding Inconclusive(const Run& run, const std::vector<HangEvent>& events,
                     const std::vector<HangGroupState>& groups, const HangDetectorOptions& o) {
  Finding f = Base(FindingCode::kHangInconclusive);
  f.entity.job = true;
  std::vector<std::string> parts;
  for (const HangGroupState& g : groups) {
    std::vector<int32_t> silent;
    for (int32_t m : g.members) {
      if (std::none_of(g.ranks.begin(), g.ranks.end(),
                       [&](const HangRankState& s) { return s.rank == m; })) {
        silent.push_back(m);
      }
    }
    std::vector<int32_t> reported;
    for (const HangRankState& s : g.ranks) reported.push_back(s.rank);
    std::string p =
        fmt::format("{}: {} reported", GroupName(g), Ranks(reported, o.max_ranks_listed));
    if (g.stuck_seq) p += fmt::format(", waiting in #{}", *g.stuck_seq);
    if (!silent.empty()) {
      p += fmt::format(
          "; {} said nothing (no dump, no hang line): not evidence that {} the ones "
          "missing",
          Ranks(silent, o.max_ranks_listed), silent.size() == 1 ? "it is" : "they are");
    }
    parts.push_back(p);
  }
  if (parts.empty()) {
    // No line names a global rank or the group its rank belongs to
    // (torch 1.x's "[Rank M]" is the rank in a group it does not name;
    // torchrun names local ranks): what the lines are, not who held it.
    const std::string lines = events.empty() ? std::string() : UnplacedLines(events, f);
    f.message = lines.empty()
                    ? std::string(
                          "the inputs show a hang but no rank's progress in a process "
                          "group")
                    : fmt::format(
                          "the inputs show a hang, but no line places a rank in a process "
                          "group (no global rank, no group named): {}",
                          lines);
  } else {
    f.message = fmt::format("the evidence does not tell which rank held the job: {}",
                            fmt::join(parts, "; "));
  }
  for (const HangLogInfo& log : run.hang.logs) {
    if (!log.truncated) continue;
    f.evidence.push_back(
        {fmt::format("log cut short ({}): the ranks it no longer shows may be there",
                     log.truncation),
         SourceRef{log.file, 0}});
  }
  for (const HangGroupState& g : groups) {
    for (size_t i = 0; i < g.ranks.size() && f.evidence.size() < 8; ++i) {
      AddStateEvidence(f, g.ranks[i]);
    }
  }
  f.confidence = 0.3;
  f.next_steps.push_back(std::string(Describe(FindingCode::kHangInconclusive).next_step));
  return f;
}

}  // namespace

HangAnalysis AnalyzeHang(const Run& run, const HangDetectorOptions& o) {
  HangAnalysis a;
  // The latest stop's lines only: a log appended across restarts holds
  // several, with sequence numbers that start again.
  const HangEpisodeChoice episodes = LatestHangEpisode(run.hang.events);
  std::vector<HangEvent> latest;
  if (episodes.episodes() > 1) {
    latest.reserve(episodes.chosen.size());
    for (size_t i : episodes.chosen) latest.push_back(run.hang.events[i]);
  }
  const std::vector<HangEvent>& events = episodes.episodes() > 1 ? latest : run.hang.events;
  a.episodes = episodes.episodes();
  a.events_left_out = run.hang.events.size() - events.size();

  const bool other = !run.hang.dumps.empty() || !events.empty();
  a.hang = other || RasShowsProblem(run);
  std::optional<int32_t> world = WorldOf(run, events);
  std::optional<Finding> ras_behind = DecideRasBehind(run, world, other || a.hang, o);
  a.hang = a.hang || ras_behind.has_value();
  if (!a.hang) return a;
  a.world = world;
  Collector c(run, events);
  c.FromDumps();
  c.FromEvents();
  a.groups = c.Finish(a.world);

  // The decided finding first: per group desync, then not joined; then
  // PyTorch's own reports; a process that died; a process RAS lost; ranks
  // behind in RAS's operation counts; transport errors; a collective stuck
  // with everyone in it; else inconclusive.
  std::optional<Finding> decided;
  for (const HangGroupState& g : a.groups) {
    if ((decided = DecideDesync(g, o))) break;
  }
  if (!decided) {
    for (const HangGroupState& g : a.groups) {
      if ((decided = DecideNotJoined(g, o))) break;
    }
  }
  if (!decided) decided = DecideFromReports(events, o);
  std::optional<Finding> exited = DecideProcessMissing(events, o);
  std::optional<Finding> transport = DecideTransport(run, events, o);
  std::optional<Finding> stuck;
  for (const HangGroupState& g : a.groups) {
    if ((stuck = DecideStuck(g, o))) break;
  }
  std::optional<Finding> ras_lost = DecideRasLost(run, a.world, o);
  if (!decided && exited) decided = std::exchange(exited, std::nullopt);
  if (!decided && ras_lost) decided = std::exchange(ras_lost, std::nullopt);
  if (!decided && ras_behind) decided = std::exchange(ras_behind, std::nullopt);
  if (!decided && transport) {
    // A stuck collective with transport errors beside it: the errors name
    // where.
    decided = std::exchange(transport, std::nullopt);
    if (stuck) {
      decided->evidence.insert(decided->evidence.begin(), {stuck->message, std::nullopt});
      stuck.reset();
    }
  }
  if (!decided && stuck) decided = std::exchange(stuck, std::nullopt);
  if (!decided) decided = Inconclusive(run, events, a.groups, o);
  AddEpisodeEvidence(episodes, *decided);
  a.findings.push_back(std::move(*decided));
  for (auto* extra : {&exited, &ras_lost, &ras_behind, &transport, &stuck}) {
    if (*extra) a.findings.push_back(std::move(**extra));
  }
  return a;
}

}  // namespace laggard
