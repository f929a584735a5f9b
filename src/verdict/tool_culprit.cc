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

bool Names(const Culprit& c, int32_t rank) {
  return c.entity.rank == rank || std::find(c.ranks.begin(), c.ranks.end(), rank) != c.ranks.end();
}

bool Cites(const Culprit& c, const Finding& f) {
  return std::find(c.evidence.begin(), c.evidence.end(), f.message) != c.evidence.end();
}

}  // namespace

std::optional<Culprit> ToolReportCulprit(const Verdict& v, const Analyses& a) {
  const std::optional<ToolSlowestRank>& s = a.tool_reports.slowest;
  if (!s || !s->consistent) return std::nullopt;
  if (v.status != VerdictStatus::kInconclusive &&
      (a.steps.ranks.size() >= 2 || a.traces.ranks.size() >= 2)) {
    return std::nullopt;
  }
  const Finding* f = FirstOf(a.tool_reports.findings, FindingCode::kToolStragglerReport);
  if (f == nullptr) return std::nullopt;
  Culprit c = CulpritOf(*f, CauseClass::kUnknown, kSingleSourceCap);
  for (const Evidence& e : f->evidence) c.evidence.push_back(e.text);
  const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow);
  if (data != nullptr && data->entity.rank == s->rank && data->severity != Severity::kInfo) {
    c.cause_class = CauseClass::kHostStall;
    c.cause = "data_loader";
    c.confidence = Raised(c.confidence, kAgreeingSignalGain);
    c.evidence.push_back(data->message);
  }
  return c;
}

void CiteToolReports(Verdict& v, const Run& run, const Analyses& a,
                     std::vector<std::string>& next_steps) {
  if (const Finding* data = FirstOf(a.tool_reports.findings, FindingCode::kToolDataLoaderSlow)) {
    AddSteps(next_steps, data->next_steps);
  }
  const Finding* f = FirstOf(a.tool_reports.findings, FindingCode::kToolStragglerReport);
  const std::optional<ToolSlowestRank>& s = a.tool_reports.slowest;
  if (f == nullptr || !s) return;
  if (v.status == VerdictStatus::kStraggler) {
    bool said_other = false;
    for (Culprit& c : v.culprits) {
      if (Cites(c, *f) || !(c.entity.rank || !c.ranks.empty())) continue;
      if (Names(c, s->rank)) {
        c.evidence.push_back(
            fmt::format("{} (agrees){}", f->message,
                        s->consistent ? "" : "; alone it would not name a straggler"));
      } else if (!said_other) {
        said_other = true;
        c.evidence.push_back(fmt::format(
            "{} — it disagrees: laggard compared every rank {}, the detector's reports give "
            "only each interval's slowest and fastest rank",
            f->message,
            a.traces.ranks.size() >= 2 ? "at every collective of the traces"
                                       : "at every logged step"));
      }
    }
    return;
  }
  AddSteps(next_steps, f->next_steps);
  if (!ComparesRanks(run, a)) {
    // The reports' extremes bound every rank: within same-model spread,
    // no rank lagged in the intervals they cover.
    if (s->spread < kToolMaterialSpread) {
      v.status = VerdictStatus::kNoStraggler;
      v.summary = "verdict: no straggler found — " + f->message;
    } else {
      v.status = VerdictStatus::kInconclusive;
      v.summary = "verdict: inconclusive — " + f->message;
    }
    return;
  }
  v.summary += fmt::format("; {}", f->message);
  if (s->consistent && v.status == VerdictStatus::kNoStraggler) {
    v.summary += fmt::format(
        " — laggard's own comparison of every rank at every {} finds none, and is the stronger "
        "evidence",
        a.traces.ranks.size() >= 2 ? "collective" : "step");
  }
}

}  // namespace laggard::verdict_internal
