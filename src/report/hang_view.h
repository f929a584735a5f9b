// How the reports read the hang detector's result (analysis/hangs/hang_detector.h)
// for display, shared by the merged trace (perfetto_hang.cc), the HTML
// report's Hang section (html_hang.cc) and the JSON report's `hang`
// section (json_report.cc). Nothing here decides a hang: it only says which
// of the detector's groups its decided finding is about and how each rank
// of a group reads against that finding. Not part of the public report API.
//
// Pure functions of their arguments; safe from any thread.

#ifndef LAGGARD_REPORT_HANG_VIEW_H_
#define LAGGARD_REPORT_HANG_VIEW_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/hangs/hang_detector.h"

namespace laggard::report_hang {

// The collective a rank waits in, by the detector's rule: it enqueued past
// what it completed (it waits in completed + 1), or its watchdog timed out
// on a work (that one). nullopt: it is not waiting.
inline std::optional<int64_t> WaitingIn(const HangRankState& s) {
  if (s.enqueued && s.completed) {
    if (*s.enqueued > *s.completed) return *s.completed + 1;
    return std::nullopt;
  }
  return s.timed_out;
}

// The detector's decided finding (its first), when it found a hang.
inline const Finding* DecidedFinding(const HangAnalysis& a) {
  if (!a.hang || a.findings.empty()) return nullptr;
  return &a.findings.front();
}

// Findings decided about one group's sequence numbers: their ranks are
// culprits in that group only. The others (a process that exited, a
// transport error) name ranks wherever they are members.
inline bool IsGroupFinding(FindingCode c) {
  return c == FindingCode::kHangNotJoined || c == FindingCode::kHangDesync ||
         c == FindingCode::kHangStuckCollective || c == FindingCode::kHangHostStopped;
}

// The id `rank`'s process gave group `g` (the one its dump's entries and
// lines use): its own state's, else the group's id when every rank shares
// it (a group known by id); nullptr for a rank of a matched group that
// did not report.
inline const std::string* IdOnRank(const HangGroupState& g, std::optional<int32_t> rank) {
  if (rank) {
    for (const HangRankState& s : g.ranks) {
      if (s.rank == *rank && !s.pg_id.empty()) return &s.pg_id;
    }
  }
  return g.matched ? nullptr : &g.pg_id;
}

// The group the decided finding is about: the first group with a stuck
// collective that holds the finding's rank among its reporting ranks, else
// among its members; a stuck collective's group is the one whose members
// are the finding's ranks; else the first group with a stuck collective.
// nullptr when no group has one.
inline const HangGroupState* DecidedGroup(const HangAnalysis& a, const Finding& f) {
  std::vector<const HangGroupState*> stuck;
  for (const HangGroupState& g : a.groups) {
    if (g.stuck_seq) stuck.push_back(&g);
  }
  if (stuck.empty()) return nullptr;
  if (f.entity.rank) {
    const int32_t r = *f.entity.rank;
    for (const HangGroupState* g : stuck) {
      if (std::any_of(g->ranks.begin(), g->ranks.end(),
                      [&](const HangRankState& s) { return s.rank == r; })) {
        return g;
      }
    }
    for (const HangGroupState* g : stuck) {
      if (std::find(g->members.begin(), g->members.end(), r) != g->members.end()) return g;
    }
  }
  if (f.code == FindingCode::kHangStuckCollective) {
    for (const HangGroupState* g : stuck) {
      if (g->members == f.ranks) return g;
    }
  }
  return stuck.front();
}

// How a member of a group reads against the decided finding.
enum class RankMark : uint8_t {
  kCulprit,     // a rank the decided finding names (about this group, for group findings)
  kAhead,       // it completed the group's stuck collective (stated, not inferred) and went on
  kStuck,       // it waits in the stuck collective with every other member (stuck_collective)
  kWaiting,     // it waits in a collective of the group
  kReported,    // it reported progress and is none of the above
  kNoEvidence,  // a member that said nothing: no dump, no hang line. Never blamed
};

inline std::string_view RankMarkName(RankMark m) {
  switch (m) {
    case RankMark::kCulprit: return "culprit";
    case RankMark::kAhead: return "ahead";
    case RankMark::kStuck: return "stuck";
    case RankMark::kWaiting: return "waiting";
    case RankMark::kReported: return "reported";
    case RankMark::kNoEvidence: return "no_evidence";
  }
  return "reported";
}

// `s` is the rank's state in `g`, nullptr for a member that did not report.
// `decided_group`: whether `g` is DecidedGroup().
inline RankMark MarkOf(const HangGroupState& g, int32_t rank, const HangRankState* s,
                       const Finding* decided, bool decided_group) {
  if (s == nullptr) return RankMark::kNoEvidence;
  if (decided != nullptr && decided->code != FindingCode::kHangStuckCollective &&
      decided->code != FindingCode::kHangInconclusive &&
      (decided_group || !IsGroupFinding(decided->code)) &&
      std::find(decided->ranks.begin(), decided->ranks.end(), rank) != decided->ranks.end()) {
    return RankMark::kCulprit;
  }
  if (g.stuck_seq && s->completed && *s->completed >= *g.stuck_seq && !s->completed_inferred) {
    return RankMark::kAhead;
  }
  if (std::optional<int64_t> n = WaitingIn(*s)) {
    bool stuck = decided != nullptr && decided->code == FindingCode::kHangStuckCollective &&
                 decided_group && g.stuck_seq && *n == *g.stuck_seq;
    return stuck ? RankMark::kStuck : RankMark::kWaiting;
  }
  return RankMark::kReported;
}

}  // namespace laggard::report_hang

#endif  // LAGGARD_REPORT_HANG_VIEW_H_
