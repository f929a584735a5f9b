// The hang detector's rules for a group whose members are not all in its
// stuck collective: ranks that never joined it (hang.not_joined), or whose
// host stopped issuing (hang.host_stopped); and for a collective every
// member enqueued and none completed (hang.stuck_collective). Internal to
// analysis/hangs/ (hang_rules.h).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/hangs/hang_rules.h"

namespace laggard::hang_internal {
namespace {

// Ranks that wait in a collective of some group (enqueued past what they
// completed, or timed out). One of them behind in another group is held
// by the collective it waits in (its host blocks on it, or its GPU queues
// behind it), not stopped on its own: it is never named for being behind.
std::set<int32_t> RanksWaiting(const std::vector<HangGroupState>& groups) {
  std::set<int32_t> out;
  for (const HangGroupState& g : groups) {
    for (const HangRankState& s : g.ranks) {
      if (WaitsInCollective(s)) out.insert(s.rank);
    }
  }
  return out;
}

// The ranks of one group that never reached its stuck collective N while
// others wait in it.
struct NotReached {
  const HangGroupState* g = nullptr;
  std::vector<int32_t> missing;  // done with all they enqueued, the last before N; waiting nowhere
  std::vector<int32_t> waiting;  // in N or later
  // Every missing rank's last enqueued is its own dump's (pg_status), not
  // inferred from a line: its host never issued N.
  bool host_side = false;
};

std::optional<NotReached> NotReachedIn(const HangGroupState& g,
                                       const std::set<int32_t>& waiting_anywhere) {
  if (!g.stuck_seq) return std::nullopt;
  const int64_t n = *g.stuck_seq;
  NotReached r;
  r.g = &g;
  r.host_side = true;
  for (const HangRankState& s : g.ranks) {
    if (WaitsInCollective(s)) {
      r.waiting.push_back(s.rank);
    } else if (s.completed && *s.completed < n && !waiting_anywhere.count(s.rank)) {
      r.missing.push_back(s.rank);
      r.host_side = r.host_side && s.from_dump && s.enqueued && *s.enqueued < n;
    }
  }
  if (r.missing.empty() || r.waiting.empty()) return std::nullopt;
  return r;
}

const HangRankState* StateOf(const HangGroupState& g, int32_t rank) {
  for (const HangRankState& s : g.ranks) {
    if (s.rank == rank) return &s;
  }
  return nullptr;
}

// " (nccl:all_reduce)": the op a waiting rank waits in, when known.
std::string WaitedOp(const HangGroupState& g) {
  std::string op;
  for (const HangRankState& s : g.ranks) {
    if (WaitsInCollective(s) && !s.op_waiting.empty()) op = " (" + s.op_waiting + ")";
  }
  return op;
}

Finding NotJoined(const NotReached& r, const HangDetectorOptions& o) {
  const HangGroupState& g = *r.g;
  const int64_t n = *g.stuck_seq;
  Finding f = MakeFinding(FindingCode::kHangNotJoined);
  f.ranks = r.missing;
  f.entity.rank = r.missing.front();
  f.message = fmt::format(
      "{}: {} never reached collective #{}{}, which {} wait in: finished #{} and stopped "
      "before it",
      GroupName(g), Ranks(r.missing, o.max_ranks_listed), n, WaitedOp(g),
      Ranks(r.waiting, o.max_ranks_listed), n - 1);
  f.confidence = ConfidenceOf(g);
  for (int32_t m : r.missing) AddStateEvidence(f, *StateOf(g, m));
  for (int32_t w : r.waiting) {
    if (f.evidence.size() < 8) AddStateEvidence(f, *StateOf(g, w));
  }
  f.next_steps.push_back(fmt::format(
      "see where rank {} is: `py-spy dump --pid PID` on its host (every python process of it); "
      "check its GPU (`dmesg | grep -i xid`, `nvidia-smi -q`) and host (CPU, memory, a stalled "
      "data loader or checkpoint write)",
      r.missing.front()));
  return f;
}

// "#45250", or "#45249-#45250" when the ranks stopped at different ones.
std::string EnqueuedText(const HangGroupState& g, const std::vector<int32_t>& ranks) {
  std::optional<int64_t> lo, hi;
  for (int32_t r : ranks) {
    const HangRankState* s = StateOf(g, r);
    if (s == nullptr || !s->enqueued) continue;
    lo = lo ? std::min(*lo, *s->enqueued) : *s->enqueued;
    hi = hi ? std::max(*hi, *s->enqueued) : *s->enqueued;
  }
  if (!lo) return "?";
  return *lo == *hi ? fmt::format("#{}", *lo) : fmt::format("#{}-#{}", *lo, *hi);
}

// Ranks whose host stopped issuing, from every group that shows them
// behind: one finding, since one stopped rank is behind in each of its
// groups.
Finding HostStopped(const std::vector<NotReached>& all, const HangDetectorOptions& o) {
  constexpr size_t kGroupsSpelled = 3;
  Finding f = MakeFinding(FindingCode::kHangHostStopped);
  std::set<int32_t> named;
  for (const NotReached& r : all) named.insert(r.missing.begin(), r.missing.end());
  f.ranks.assign(named.begin(), named.end());
  f.entity.rank = f.ranks.front();
  std::vector<std::string> parts;
  for (size_t i = 0; i < all.size() && i < kGroupsSpelled; ++i) {
    const NotReached& r = all[i];
    const HangGroupState& g = *r.g;
    parts.push_back(
        fmt::format("{}: {} enqueued up to {}, while {} enqueued up to {} and {} in #{}{}",
                    GroupName(g), Ranks(r.missing, o.max_ranks_listed), EnqueuedText(g, r.missing),
                    Ranks(r.waiting, o.max_ranks_listed), EnqueuedText(g, r.waiting),
                    r.waiting.size() == 1 ? "waits" : "wait", *g.stuck_seq, WaitedOp(g)));
  }
  if (all.size() > kGroupsSpelled) {
    parts.push_back(fmt::format("and in {} more group{}", all.size() - kGroupsSpelled,
                                all.size() - kGroupsSpelled == 1 ? "" : "s"));
  }
  const bool one = f.ranks.size() == 1;
  f.message = fmt::format(
      "{} stopped issuing collectives: {}; everything {} enqueued completed, so {} host "
      "stopped, not {} GPU or the network (Python, the GIL, a data loader, a deadlock, a CPU "
      "hang)",
      Ranks(f.ranks, o.max_ranks_listed), fmt::join(parts, "; "), one ? "it" : "they",
      one ? "its" : "their", one ? "its" : "their");
  f.confidence = ConfidenceOf(*all.front().g);
  // Each named rank's state (with its last entry's stack) in the first
  // group that shows it behind, then the ranks waiting for it there.
  for (int32_t rank : f.ranks) {
    for (const NotReached& r : all) {
      if (std::find(r.missing.begin(), r.missing.end(), rank) == r.missing.end()) continue;
      AddStateEvidence(f, *StateOf(*r.g, rank));
      break;
    }
  }
  for (int32_t w : all.front().waiting) {
    if (f.evidence.size() < 8) AddStateEvidence(f, *StateOf(*all.front().g, w));
  }
  f.next_steps.push_back(
      DefaultNextStep(FindingCode::kHangHostStopped, fmt::arg("rank", f.ranks.front())));
  return f;
}

// Every member reported, enqueued N and waits in it: no rank is missing.
bool AllWaitIn(const HangGroupState& g) {
  if (!g.stuck_seq || g.members.empty() || g.ranks.size() < g.members.size()) return false;
  return std::all_of(g.ranks.begin(), g.ranks.end(), [&](const HangRankState& s) {
    return WaitsInCollective(s) && s.completed && *s.completed + 1 == *g.stuck_seq;
  });
}

// Every member's GPU began N (FR last_started_collective): the transfer
// itself hangs. A member that only enqueued it queues behind earlier work.
bool AllStarted(const HangGroupState& g) {
  return std::all_of(g.ranks.begin(), g.ranks.end(), [&](const HangRankState& s) {
    return s.started && *s.started >= *g.stuck_seq;
  });
}

std::optional<TimeNs> FirstEnqueued(const HangGroupState& g) {
  std::optional<TimeNs> first;
  for (const HangRankState& s : g.ranks) {
    if (s.waiting_created_ns && (!first || *s.waiting_created_ns < *first)) {
      first = s.waiting_created_ns;
    }
  }
  return first;
}

}  // namespace

std::optional<Finding> DecideNotJoined(const std::vector<HangGroupState>& groups,
                                       const HangDetectorOptions& o) {
  const std::set<int32_t> waiting = RanksWaiting(groups);
  std::vector<NotReached> all, host_side;
  for (const HangGroupState& g : groups) {
    if (std::optional<NotReached> r = NotReachedIn(g, waiting)) {
      if (r->host_side) host_side.push_back(*r);
      all.push_back(std::move(*r));
    }
  }
  if (!host_side.empty()) return HostStopped(host_side, o);
  if (!all.empty()) return NotJoined(all.front(), o);
  return std::nullopt;
}

std::optional<Finding> DecideStuck(const std::vector<HangGroupState>& groups, bool started_only,
                                   const HangDetectorOptions& o) {
  std::vector<const HangGroupState*> stuck;
  for (const HangGroupState& g : groups) {
    if (AllWaitIn(g) && (!started_only || AllStarted(g))) stuck.push_back(&g);
  }
  if (stuck.empty()) return std::nullopt;
  auto order = [](const HangGroupState* g) {
    return std::make_pair(!AllStarted(*g), FirstEnqueued(*g).value_or(INT64_MAX));
  };
  const HangGroupState& g = **std::min_element(
      stuck.begin(), stuck.end(),
      [&](const HangGroupState* a, const HangGroupState* b) { return order(a) < order(b); });
  Finding f = MakeFinding(FindingCode::kHangStuckCollective);
  f.entity.job = true;
  f.ranks = g.members;
  f.message = fmt::format(
      "{}: every one of its {} ranks enqueued collective #{}{} and none completed it: the GPU "
      "or the network side holds it (NCCL, a link, a GPU error), no rank is missing",
      GroupName(g), g.members.size(), *g.stuck_seq,
      g.ranks.front().op_waiting.empty() ? "" : " (" + g.ranks.front().op_waiting + ")");
  f.confidence = ConfidenceOf(g);
  for (size_t i = 0; i < g.ranks.size() && i < 4; ++i) AddStateEvidence(f, g.ranks[i]);
  // Which members' GPUs began N, where the dumps say of some that they did.
  const bool some_started =
      std::any_of(g.ranks.begin(), g.ranks.end(),
                  [&](const HangRankState& s) { return s.started && *s.started >= *g.stuck_seq; });
  for (const HangRankState& s : g.ranks) {
    if (!some_started || !s.started || *s.started >= *g.stuck_seq) continue;
    f.evidence.push_back(
        {fmt::format("rank {} enqueued #{} but its GPU had not started it (last started #{}): "
                     "its stream waits on earlier work",
                     s.rank, *g.stuck_seq, *s.started),
         s.src});
  }
  std::vector<std::string> behind;
  for (const HangGroupState* other : stuck) {
    if (other != &g) behind.push_back(GroupName(*other));
  }
  if (!behind.empty()) {
    f.evidence.push_back(
        {fmt::format(
             "{} more group{} wait{} in a collective every member enqueued, queued "
             "behind this one: {}",
             behind.size(), behind.size() == 1 ? "" : "s", behind.size() == 1 ? "s" : "",
             fmt::join(behind.begin(), behind.begin() + std::min<size_t>(behind.size(), 3), "; ")),
         std::nullopt});
  }
  f.next_steps.push_back(
      DefaultNextStep(FindingCode::kHangStuckCollective,
                      fmt::arg("ranks", RankList(g.members, o.max_ranks_listed))));
  f.next_steps.push_back(fmt::format(
      "check the network between ranks {}: NCCL_DEBUG=INFO logs for NET/IB errors, ibstat and "
      "port counters of their hosts, nccl-tests across them",
      RankList(g.members, o.max_ranks_listed)));
  return f;
}

}  // namespace laggard::hang_internal
