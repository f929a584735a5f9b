// A culprit priced by the job's own step times: the job's step time changed
// level once at the culprit's onset (JobStepStats::level_shift), and what it
// lost is measured before and after (ImpactMethod::kBeforeAfter); or a
// pause culprit, by the job's isolated slow steps (kSlowSteps). Internal to
// src/verdict/.

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// How far a culprit's own onset may sit from the shift's first step and
// still be the same event: the change point is placed to a step or two in
// noise, a rank's onset likewise (judgement).
constexpr int64_t kShiftOnsetSteps = 5;

enum class Tie { kContradicted, kUnknown, kTied };

// Whether the shift is the culprit's own event: its onset step within
// kShiftOnsetSteps of the shift's first step; without one, an anomaly of
// its GPU (a hardware cause finding on it) that began within the slack of the
// shift's start.
Tie TieOf(const Culprit& c, const LevelShift& shift, const Analyses& a) {
  if (c.onset_step) {
    return std::llabs(*c.onset_step - shift.first_step) <= kShiftOnsetSteps ? Tie::kTied
                                                                            : Tie::kContradicted;
  }
  if (!shift.start_time || (!c.entity.rank && !c.entity.gpu)) return Tie::kUnknown;
  const DurationNs slack = OnsetSlack(shift.during_s);
  bool far = false;
  for (const Finding& f : a.hardware.findings) {
    if (!IsGpuCause(f.code) || !f.onset_time || !OnGpu(f, c.entity)) continue;
    if (std::llabs(*f.onset_time - *shift.start_time) <= slack) return Tie::kTied;
    far = true;
  }
  // Its GPU's anomaly began at another time: the shift is another event.
  return far ? Tie::kContradicted : Tie::kUnknown;
}

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

// Puts a measured figure on `v`: throughput lost, its method and steps,
// GPU-hours per day (none once the loss has ended), and the summary's cost
// phrase in place of the old one.
void SetMeasuredCost(Verdict& v, const Analyses& a, double lost, ImpactMethod method,
                     std::optional<int64_t> first_step, std::optional<int64_t> last_step) {
  const std::string old_phrase = CostPhrase(v);
  v.throughput_lost = lost;
  v.impact_method = method;
  v.impact_first_step = first_step;
  v.impact_last_step = last_step;
  v.gpu_hours_per_day =
      last_step ? std::nullopt : GpuHoursPerDay(v.throughput_lost, WorldSize(a.steps, a.traces));
  PutCostPhrase(v.summary, old_phrase, CostPhrase(v));
}

}  // namespace

bool PriceByPauses(Verdict& v, const Analyses& a) {
  const JobStepStats& job = a.steps.job;
  // A job whose step time also changed level: its slow steps are not all
  // pauses.
  if (v.status != VerdictStatus::kStraggler || v.culprits.empty() || v.throughput_lost ||
      !job.spike_cost || !job.spike_cost_from || job.level_shift)
    return false;
  const Finding* pause = FirstOf(a.pauses.findings, FindingCode::kHostPause);
  const Culprit& top = v.culprits.front();
  if (!pause || top.cause_class != CauseClass::kHostStall ||
      top.entity.rank != pause->entity.rank || top.entity.host != pause->entity.host ||
      top.entity.gpu != pause->entity.gpu)
    return false;
  SetMeasuredCost(v, a, *job.spike_cost, ImpactMethod::kSlowSteps, job.spike_cost_from,
                  std::nullopt);
  return true;
}

bool PriceByLevelShift(Verdict& v, const Analyses& a) {
  const std::optional<LevelShift>& shift = a.steps.job.level_shift;
  if (!shift || v.culprits.empty() ||
      (v.status != VerdictStatus::kStraggler && v.status != VerdictStatus::kJobWide))
    return false;
  const Culprit& top = v.culprits.front();
  if (top.pattern && *top.pattern != Pattern::kPersistent) return false;
  const Tie tie = TieOf(top, *shift, a);
  if (tie == Tie::kContradicted) return false;
  // Untied, the shift could be any other culprit's: only a lone culprit
  // takes it.
  if (tie == Tie::kUnknown && v.culprits.size() > 1) return false;
  const double measured = shift->cost();
  // Never more than the culprit's own 1 - 1/(1 + slowdown).
  if (top.slowdown && *top.slowdown > 0 && !top.entity.job &&
      measured > *top.slowdown / (1 + *top.slowdown))
    return false;
  if (v.throughput_lost) {
    // A replay or a lower bound stays; an upper bound gives way to a
    // measurement below it when the culprit's onset ties the two.
    const double bound = top.slowdown && *top.slowdown > 0 ? *top.slowdown / (1 + *top.slowdown)
                                                           : *v.throughput_lost;
    if (v.impact_method != ImpactMethod::kUpperBound || tie != Tie::kTied || measured > bound)
      return false;
  }
  SetMeasuredCost(v, a, measured, ImpactMethod::kBeforeAfter, shift->first_step, shift->last_step);
  return true;
}

}  // namespace laggard::verdict_internal
