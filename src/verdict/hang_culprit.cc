// The verdict of a stopped job: a hang outranks any slowness, since the job
// makes no progress at all. The hang detector's decided finding
// (analysis/hang_detector.h) is the culprit, else, live, the stall
// detector's (analysis/stall_detector.h: every stalled rank a culprit); a rank that the step times
// showed slow before it stopped is said to be (the straggler that became a
// hang), and an inconclusive hang says what to collect.

#include <fmt/format.h>

#include <algorithm>

#include "verdict/verdict_helpers.h"

namespace laggard::verdict_internal {
namespace {

CauseClass ClassOf(FindingCode code) {
  switch (code) {
    case FindingCode::kHangStuckCollective:
    case FindingCode::kHangTransportError: return CauseClass::kCommunication;
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
    default: return "hang";
  }
}

}  // namespace

std::optional<Verdict> HangVerdict(const Analyses& a) {
  // The ranks' own word (dumps, watchdog lines) first; live, the steps that
  // stopped (analysis/stall_detector.h).
  // stopped (analysis/stall_detector.h); a stalled rank outranks a hang the
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
    before = fmt::format("rank {} was a straggler before the hang{}", *s.entity.rank,
                         s.slowdown ? fmt::format(" (steps {:+.0f}%)", 100 * *s.slowdown) : "");
    c.evidence.push_back(before + ": " + s.message);
    c.confidence = Raised(c.confidence, 0.1);
    break;
  }
  v.summary =
      fmt::format("verdict: hang — {}, confidence {}", f.message, ConfidenceWord(c.confidence));
  if (!before.empty()) v.summary += "; " + before;
  v.next_steps = f.next_steps;
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
