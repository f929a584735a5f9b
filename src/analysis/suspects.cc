#include "analysis/suspects.h"

#include "analysis/steps/step_time_detector.h"
#include "analysis/traces/trace_detector.h"

namespace laggard {

std::vector<SuspectRank> SuspectRanks(const Run& run, const StepAnalysis& steps,
                                      const TraceAnalysis& traces) {
  std::vector<SuspectRank> out;
  auto add = [&](int32_t rank) -> SuspectRank& {
    for (SuspectRank& s : out) {
      if (s.rank == rank) return s;
    }
    out.push_back(SuspectRank{rank, std::nullopt, std::nullopt});
    return out.back();
  };
  for (const Finding& f : steps.findings) {
    if (f.code != FindingCode::kStepStraggler || !f.entity.rank) continue;
    SuspectRank& s = add(*f.entity.rank);
    s.slow_from_ns = f.onset_time;
    const StepSeries* series = run.FindRank(*f.entity.rank);
    if (series == nullptr || series->steps.empty()) continue;
    if (!s.slow_from_ns && series->steps.front().start_ns)
      s.slow_from_ns = series->steps.front().start_ns;
    const StepRecord* last = &series->steps.back();
    if (f.end_step) {
      for (const StepRecord& r : series->steps) {
        if (r.step == *f.end_step) last = &r;
      }
    }
    if (last->start_ns) s.slow_to_ns = *last->start_ns + last->duration_ns;
  }
  if (traces.culprit) add(*traces.culprit);
  for (const Finding& f : traces.findings) {
    if (f.code != FindingCode::kTraceLateGroup || f.severity == Severity::kInfo) continue;
    for (int32_t r : f.ranks) add(r);
  }
  return out;
}

}  // namespace laggard
