// Megatron's StragglerDetector in the verdict (verdict_helpers.h):
// ToolReportCulprit() and CiteToolReports().

#include <algorithm>

#include <fmt/format.h>

#include "verdict/verdict_helpers.h"

namespace laggard::verdict_internal {
namespace {

// Step times or traces of two ranks or more: laggard compares the ranks
// itself.
bool ComparesRanks(const Run& run, const Analyses& a) {
  return a.steps.ranks.size() >= 2 || a.traces.ranks.size() >= 2 || run.ranks.size() >= 2;
}

// Whether laggard has step times or a trace of `rank`.
bool Measured(const Analyses& a, int32_t rank) {
  return std::any_of(a.steps.ranks.begin(), a.steps.ranks.end(),
                     [&](const RankStepStats& r) { return r.info.rank == rank; }) ||
         std::any_of(a.traces.ranks.begin(), a.traces.ranks.end(),
                     [&](const auto& r) { return r.rank == rank; });
}

bool Names(const Culprit& c, int32_t rank) {
  return c.entity.rank == rank || std::find(c.ranks.begin(), c.ranks.end(), rank) != c.ranks.end();
}

bool Cites(const Culprit& c, const Finding& f) {
  return std::any_of(c.evidence.begin(), c.evidence.end(),
                     [&](const std::string& e) { return e.rfind(f.message, 0) == 0; });
}

// Warning or critical GPU and network findings: evidence a single healthy
// report does not clear.
bool HardwareOrNetworkWarns(const Analyses& a) {
  for (const auto* list : {&a.hardware.findings, &a.network.findings}) {
    for (const Finding& f : *list) {
      if (f.severity != Severity::kInfo) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<Culprit> ToolReportCulprit(const Verdict& v, const Analyses& a,
                                         std::vector<std::string>& next_steps) {
  const std::optional<ToolSlowestRank>& s = a.tool_reports.slowest;
  if (!s || !s->consistent) return std::nullopt;
  if (v.status != VerdictStatus::kInconclusive &&
      (a.steps.ranks.size() >= 2 || a.traces.ranks.size() >= 2)) {
    return std::nullopt;
  }
  const Finding* f = FirstOf(a.tool_reports.findings, FindingCode::kToolStragglerReport);
  if (f == nullptr) return std::nullopt;
  Culprit c = CulpritOf(*f, CauseClass::kUnknown, kSingleSourceCap);
  c.evidence.push_back(f->message);
  for (const Evidence& e : f->evidence) c.evidence.push_back(e.text);
  const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow);
  if (data != nullptr && data->entity.rank == s->rank) c.evidence.push_back(data->message);
  // Its GPU's and host's findings, as for a culprit of laggard's own.
  EnrichRankCulprit(c, a, next_steps);
  return c;
}

void CiteToolReports(Verdict& v, const Run& run, const Analyses& a,
                     std::vector<std::string>& next_steps) {
  const Finding* f = FirstOf(a.tool_reports.findings, FindingCode::kToolStragglerReport);
  const std::optional<ToolSlowestRank>& s = a.tool_reports.slowest;
  if (const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow)) {
    AddSteps(next_steps, data->next_steps);
  }
  if (f == nullptr || !s) return;
  if (v.status == VerdictStatus::kStraggler) {
    bool said_other = false;
    for (Culprit& c : v.culprits) {
      if (Cites(c, *f) || !(c.entity.rank || !c.ranks.empty())) continue;
      if (s->even) {
        if (!said_other) {
          said_other = true;
          c.evidence.push_back(
              fmt::format("{} — it disagrees on the size: laggard measured its own evidence above",
                          f->message));
        }
      } else if (Names(c, s->rank)) {
        c.evidence.push_back(
            fmt::format("{} (agrees){}", f->message,
                        s->consistent ? "" : "; alone it would not name a straggler"));
      } else if (!said_other) {
        said_other = true;
        c.evidence.push_back(fmt::format(
            "{} — it disagrees: {}", f->message,
            Measured(a, s->rank)
                ? "laggard's evidence above names this culprit, and the detector's reports give "
                  "only each interval's slowest and fastest rank"
                : fmt::format("laggard has no step times or trace of rank {} to weigh it",
                              s->rank)));
      }
    }
    return;
  }
  AddSteps(next_steps, f->next_steps);
  if (!ComparesRanks(run, a) && !HardwareOrNetworkWarns(a)) {
    // Nothing else speaks about the ranks: the detector's reading is the
    // verdict. Its extremes bound every rank of the intervals reported.
    if (s->even) {
      v.status = VerdictStatus::kNoStraggler;
      v.summary = "verdict: no straggler found — " + f->message;
    } else {
      v.status = VerdictStatus::kInconclusive;
      v.summary = "verdict: inconclusive — " + f->message;
    }
    return;
  }
  v.summary += fmt::format("; {}", f->message);
  if (s->even) return;
  if (!Measured(a, s->rank)) {
    v.summary += fmt::format(
        " — laggard has no step times or trace of rank {}: add them to weigh it", s->rank);
  } else if (s->consistent && v.status == VerdictStatus::kNoStraggler) {
    v.summary += fmt::format(
        " — laggard's own comparison of the ranks, which holds rank {} too, finds none", s->rank);
  }
}

}  // namespace laggard::verdict_internal
