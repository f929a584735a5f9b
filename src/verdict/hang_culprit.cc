// The verdict of a stopped job: a hang outranks any slowness, since the job
// makes no progress at all. The hang detector's decided finding
// (analysis/hangs/hang_detector.h) is the culprit, else, live, the stall
// detector's (analysis/hangs/stall_detector.h: every stalled rank a culprit); a rank that the step
// times showed slow before it stopped is said to be (the straggler that became a hang), and an
// inconclusive hang says what to collect.

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// hang.host_stopped: its host stopped issuing work (FR pg_status), the
// host side; hang.stuck_collective: every member enqueued, none
// completed, the GPU or network side (its transfer, communication).
CauseClass ClassOf(FindingCode code) {
  switch (code) {
    case FindingCode::kHangStuckCollective:
    case FindingCode::kHangTransportError: return CauseClass::kCommunication;
    case FindingCode::kHangHostStopped: return CauseClass::kHostStall;
    default: return CauseClass::kUnknown;
  }
}

std::string_view CauseOf(FindingCode code) {
  switch (code) {
    case FindingCode::kHangNotJoined: return "not_joined";
    case FindingCode::kHangDesync: return "desync";
    case FindingCode::kHangStuckCollective: return "stuck_collective";
    case FindingCode::kHangTransportError: return "transport_error";
    case FindingCode::kHangProcessMissing: return "process_missing";
    case FindingCode::kHangRankStalled: return "stalled";
    case FindingCode::kHangHostStopped: return "host_stopped";
    default: return "hang";
  }
}

// The earliest dated hang line (a watchdog, a timeout): when the job was
// seen stopped.
std::optional<TimeNs> FirstHangLine(const Run& run) {
  std::optional<TimeNs> first;
  for (const HangEvent& e : run.hang.events) {
    if (e.time_ns && (!first || *e.time_ns < *first)) first = e.time_ns;
  }
  return first;
}

// The network beside the hang, on one timeline: network findings on the
// hosts the hang finding names (the culprit's; a group's hosts for a stuck
// collective or a transport error, every host when none is known), each
// with its time against the first hang line. A stuck collective or a
// transport error with the network's own evidence beside it gains
// confidence and takes that finding's next step first; a stuck collective
// takes the GPU errors (gpu.errors: Xid, ECC) of those hosts the same way.
void AddNetworkEvidence(const Run& run, const Analyses& a, const Finding& f, Culprit& c,
                        Verdict& v) {
  bool network_class =
      f.code == FindingCode::kHangStuckCollective || f.code == FindingCode::kHangTransportError;
  std::set<std::string> hosts;
  if (f.entity.host) hosts.insert(*f.entity.host);
  std::vector<int32_t> ranks = f.ranks;
  if (f.entity.rank) ranks.push_back(*f.entity.rank);
  for (int32_t r : ranks) {
    if (auto g = a.ranks.GpuOf(r)) hosts.insert(g->first);
  }
  if (hosts.empty() && !network_class) return;
  std::optional<TimeNs> hung = FirstHangLine(run);
  size_t added = 0;
  for (const Finding& n : a.network.findings) {
    if (n.severity == Severity::kInfo) continue;
    if (!hosts.empty() && (!n.entity.host || !hosts.count(*n.entity.host))) continue;
    std::string when;
    if (n.onset_time && hung) {
      double s = ToSeconds(*hung - *n.onset_time);
      when = s >= 0 ? fmt::format(" ({:.0f} s before the first hang line)", s)
                    : fmt::format(" ({:.0f} s after the first hang line)", -s);
    }
    c.evidence.push_back(fmt::format("network beside the hang: {}{}", n.message, when));
    if (network_class && added == 0) {
      c.confidence = Raised(c.confidence, 0.1);
      std::vector<std::string> first = n.next_steps;
      AddSteps(first, v.next_steps);
      v.next_steps = std::move(first);
    }
    if (++added == 4) break;
  }
  // A GPU error on the hosts of a collective none completed is the GPU
  // side of it.
  if (f.code != FindingCode::kHangStuckCollective) return;
  size_t gpus = 0;
  for (const Finding& g : a.hardware.findings) {
    if (g.code != FindingCode::kGpuErrors || !g.entity.host) continue;
    if (!hosts.empty() && !hosts.count(*g.entity.host)) continue;
    c.evidence.push_back("GPU beside the hang: " + g.message);
    if (gpus == 0) {
      c.confidence = Raised(c.confidence, 0.1);
      PutStepsFirst(v.next_steps, g.next_steps);
    }
    if (++gpus == 4) break;
  }
}

}  // namespace

std::optional<Verdict> HangVerdict(const Run& run, const Analyses& a) {
  // The ranks' own word (dumps, watchdog lines) first; then the steps that
  // stopped (analysis/hangs/stall_detector.h): a stalled rank outranks a hang the
  // lines could not place.
  bool hang = a.hang.hang && !a.hang.findings.empty();
  bool placed = hang && a.hang.findings.front().code != FindingCode::kHangInconclusive;
  bool stalled =
      !a.stall.findings.empty() && a.stall.findings.front().code == FindingCode::kHangRankStalled;
  const std::vector<Finding>* findings = nullptr;
  if (placed || (hang && !stalled)) {
    findings = &a.hang.findings;
  } else if (!a.stall.findings.empty()) {
    findings = &a.stall.findings;
  } else {
    return std::nullopt;
  }
  const Finding& f = findings->front();
  Verdict v;
  if (f.code == FindingCode::kHangInconclusive || f.code == FindingCode::kHangJobStalled) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = std::string(f.code == FindingCode::kHangJobStalled
                                ? "verdict: the job stopped; inconclusive — "
                                : "verdict: the job hung; inconclusive — ") +
                f.message;
    v.next_steps = f.next_steps;
    return v;
  }
  v.status = VerdictStatus::kHang;
  Culprit c;
  c.entity = f.entity;
  c.cause_class = ClassOf(f.code);
  c.cause = std::string(CauseOf(f.code));
  c.confidence = f.confidence;
  if (f.ranks.size() > 1) c.ranks = f.ranks;
  c.evidence.push_back(f.message);
  for (const Evidence& e : f.evidence) c.evidence.push_back(e.text);
  if (hang && findings == &a.stall.findings) {
    c.evidence.push_back("the ranks' lines: " + a.hang.findings.front().message);
  }
  // The straggler before the hang.
  std::vector<int32_t> named = f.ranks;
  if (named.empty() && f.entity.rank) named.push_back(*f.entity.rank);
  std::string before;
  for (const Finding& s : a.steps.findings) {
    if (s.code != FindingCode::kStepStraggler || !s.entity.rank) continue;
    if (std::find(named.begin(), named.end(), *s.entity.rank) == named.end()) continue;
    if (StepStragglerTooWeak(s, a.steps)) continue;  // noise, or minor: no straggler
    before = fmt::format("rank {} was a straggler before the hang{}", *s.entity.rank,
                         s.slowdown ? fmt::format(" (steps {:+.0f}%)", 100 * *s.slowdown) : "");
    c.evidence.push_back(before + ": " + s.message);
    c.confidence = Raised(c.confidence, 0.1);
    break;
  }
  v.next_steps = f.next_steps;
  AddNetworkEvidence(run, a, f, c, v);
  v.summary =
      fmt::format("verdict: hang — {}, confidence {}", f.message, ConfidenceWord(c.confidence));
  if (!before.empty()) v.summary += "; " + before;
  v.culprits.push_back(std::move(c));
  for (size_t i = 1; i < findings->size(); ++i) {
    const Finding& g = (*findings)[i];
    AddSteps(v.next_steps, g.next_steps);
    // Every stalled rank is a culprit: ranks of one host hang together.
    if (g.code != FindingCode::kHangRankStalled) continue;
    Culprit more;
    more.entity = g.entity;
    more.cause_class = ClassOf(g.code);
    more.cause = std::string(CauseOf(g.code));
    more.confidence = g.confidence;
    more.evidence.push_back(g.message);
    for (const Evidence& e : g.evidence) more.evidence.push_back(e.text);
    v.culprits.push_back(std::move(more));
  }
  return v;
}

}  // namespace laggard::verdict_internal
