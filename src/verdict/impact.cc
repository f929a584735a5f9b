// A culprit priced by the job's own step times: the job's step time changed
// level once at the culprit's onset (JobStepStats::level_shift), and what it
// lost is measured before and after (ImpactMethod::kBeforeAfter). Internal
// to src/verdict/.

#include <cstdlib>

#include <fmt/format.h>

#include "verdict/verdict_helpers.h"

namespace laggard::verdict_internal {
namespace {

// How far a culprit's own onset may sit from the shift's first step and
// still be the same event: the change point is placed to a step or two in
// noise, a rank's onset likewise (judgement).
constexpr int64_t kShiftOnsetSteps = 5;

// `summary` with its cost phrase `old_phrase` replaced by `phrase`; without
// one, `phrase` goes after the first ", confidence high|medium|low", else at
// the end.
void PutCostPhrase(std::string& summary, const std::string& old_phrase, const std::string& phrase) {
  if (!old_phrase.empty()) {
    if (size_t at = summary.find(old_phrase); at != std::string::npos) {
      summary.replace(at, old_phrase.size(), phrase);
      return;
    }
  }
  for (std::string_view word : {"high", "medium", "low"}) {
    const std::string key = fmt::format(", confidence {}", word);
    if (size_t at = summary.find(key); at != std::string::npos) {
      summary.insert(at + key.size(), phrase);
      return;
    }
  }
  summary += phrase;
}

}  // namespace

bool PriceByLevelShift(Verdict& v, const Analyses& a) {
  const std::optional<LevelShift>& shift = a.steps.job.level_shift;
  if (!shift || v.culprits.empty() ||
      (v.status != VerdictStatus::kStraggler && v.status != VerdictStatus::kJobWide))
    return false;
  const Culprit& top = v.culprits.front();
  if (top.pattern && *top.pattern != Pattern::kPersistent) return false;
  if (top.onset_step && std::llabs(*top.onset_step - shift->first_step) > kShiftOnsetSteps)
    return false;
  const double measured = shift->cost();
  if (v.throughput_lost) {
    // A replay or a lower bound stays; an upper bound gives way to a
    // measurement below it, when the culprit's own onset ties the two.
    if (v.impact_method != ImpactMethod::kUpperBound || !top.onset_step ||
        measured > *v.throughput_lost)
      return false;
  }
  const std::string old_phrase = CostPhrase(v);
  v.throughput_lost = measured;
  v.impact_method = ImpactMethod::kBeforeAfter;
  v.impact_first_step = shift->first_step;
  v.impact_last_step = shift->last_step;
  v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, WorldSize(a.steps, a.traces));
  PutCostPhrase(v.summary, old_phrase, CostPhrase(v));
  return true;
}

}  // namespace laggard::verdict_internal
