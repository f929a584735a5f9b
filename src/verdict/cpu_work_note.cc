// What a no-straggler verdict of a CPU-only job says of its ranks' work
// per step where nothing names a culprit: a rank's excess too few steps
// could tell (CpuWorkUndecided), a 2-rank rank whose faster core hides it
// (FasterCoreHidesWork, slow_core_culprit.cc), a 2-rank rank's mild excess
// one peer cannot tell from the cores (TwoRankExcessNote), else the run's
// sensitivity to a 10% excess (WorkSensitivityText). Internal to
// src/verdict/.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"
#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {

std::optional<std::string> CpuWorkUndecided(const Analyses& a, const std::vector<int32_t>& skip) {
  auto skipped = [&](int32_t rank) {
    return std::find(skip.begin(), skip.end(), rank) != skip.end();
  };
  const HostCpuDetectorOptions o;
  const bool two = WorldSize(a.steps, a.traces) == 2;
  auto probed = [&](int32_t rank) {
    const RankCpuStats* r = CpuStatsOf(a, rank);
    return r != nullptr && r->work_probed;
  };
  const Finding* more = FirstOf(a.host_cpu.findings, FindingCode::kStepCpuTimeHigh);
  if (more != nullptr && more->entity.rank && two && !skipped(*more->entity.rank) &&
      more->slowdown.value_or(0) >= kTwoRankMoreWork && LowTwoRankExcess(a, more->confidence) &&
      probed(*more->entity.rank) && CpuOnlyTrace(a, *more->entity.rank)) {
    return fmt::format(
        "rank {}'s thread used {:.2f}x its peer's CPU time per step on CPUs as fast by the probe, "
        "but over too few such steps for two ranks to tell it from their two cores (confidence "
        "{:.2f}) {}",
        *more->entity.rank, 1 + more->slowdown.value_or(0), more->confidence, kTwoRanksCannotTell);
  }
  if (more != nullptr && more->entity.rank && two && !skipped(*more->entity.rank) &&
      more->slowdown.value_or(0) < kTwoRankMoreWork && probed(*more->entity.rank) &&
      CpuOnlyTrace(a, *more->entity.rank)) {
    return fmt::format(
        "rank {}'s thread used {:.2f}x its peer's CPU time per step on CPUs as fast by the probe, "
        "but with two ranks a difference under {:.0f}% may be their two cores' {}",
        *more->entity.rank, 1 + more->slowdown.value_or(0), 100 * kTwoRankMoreWork,
        kTwoRanksCannotTell);
  }
  const RankCpuStats* best = nullptr;
  size_t need = 0;
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    std::optional<size_t> n = StepsToTell(r, o);
    // With two ranks more steps tell only an excess the 2-rank rule names.
    if (!n || skipped(r.rank) || !r.work_probed || r.work_z >= o.min_cpu_time_z ||
        !CpuOnlyTrace(a, r.rank) || (two && *r.work_ratio < 1 + kTwoRankMoreWork) ||
        CoreExplainsWork(a, r.rank, *r.work_ratio - 1))
      continue;
    if (best == nullptr || *r.work_ratio > *best->work_ratio) {
      best = &r;
      need = *n;
    }
  }
  if (best == nullptr) return std::nullopt;
  return fmt::format(
      "rank {}'s thread used {:.2f}x its peers' CPU time per step over {} steps on CPUs as fast, "
      "too few to tell from noise ({:.1f} standard errors of the {:.0f} needed): run ~{} steps "
      "to tell",
      best->rank, *best->work_ratio, best->work_steps, best->work_z, o.min_cpu_time_z, need);
}

namespace {

// The rank of `ranks` with the largest mild excess of work per step on
// CPUs as fast: >= 1 + kTellExcess / 4 and under `upper`, >= 1 standard
// error over >= min_cpu_time_steps steps, in a CPU-only trace, its core not
// explaining it. Null with none.
const RankCpuStats* LargestMildExcess(const Analyses& a, const std::vector<RankCpuStats>& ranks,
                                      double upper) {
  const HostCpuDetectorOptions o;
  const RankCpuStats* top = nullptr;
  for (const RankCpuStats& r : ranks) {
    if (!r.work_ratio || !r.work_probed || r.work_steps < o.min_cpu_time_steps ||
        *r.work_ratio < 1 + kTellExcess / 4 || *r.work_ratio >= upper || r.work_z < 1 ||
        !CpuOnlyTrace(a, r.rank) || CoreExplainsWork(a, r.rank, *r.work_ratio - 1))
      continue;
    if (top == nullptr || *r.work_ratio > *top->work_ratio) top = &r;
  }
  return top;
}

// Failing LargestMildExcess, the one rank whose CPU time per step for its
// core's speed (work_per_probe: its CPU time over its probe's, median over
// the steps) stands >= 1 + kTellExcess / 2 over the median of the others'
// while each other rank reads under 1 + kTellExcess / 4 against the rest
// but it: a clear top where ranks float between unequal cores and few
// steps have probes that agree. Only with >= 4 ranks (with 3 "the next"
// is one pair's ratio; calibrated on 4), every one with such a reading.
// A top whose core ran the probe faster than its peers' over the run is
// said with that caveat: a slower core does less to the job's work than to
// the probe, so its peers on slower cores read low (d35: 0.85-1.18x their
// core's slowness). Not beside comm-bound traces (ranks polling in gloo
// burn CPU time). Its text, or nullopt.
std::optional<std::string> ProbeWorkTopText(const Analyses& a,
                                            const std::vector<RankCpuStats>& ranks) {
  if (FirstOf(a.traces.findings, FindingCode::kTraceCommBound) != nullptr) return std::nullopt;
  const size_t least = HostCpuDetectorOptions().min_cpu_time_steps;
  std::vector<const RankCpuStats*> field;
  for (const RankCpuStats& r : ranks) {
    if (!r.work_per_probe || *r.work_per_probe <= 0 || r.work_per_probe_steps < least)
      return std::nullopt;
    field.push_back(&r);
  }
  if (field.size() < 4) return std::nullopt;
  const ProbeWorkTop field_top = TopOfProbeWork(field);
  const RankCpuStats* top = field_top.rank;
  const double top_ratio = field_top.ratio, next = field_top.next;
  if (top_ratio < 1 + kTellExcess / 2 || next >= 1 + kTellExcess / 4) return std::nullopt;
  std::optional<double> core = RatioToPeers(a.host_cpu.ranks, top->rank, &RankCpuStats::probe_ns);
  const bool faster = core && *core <= 1 - HostCpuDetectorOptions().max_step_probe_gap;
  return fmt::format(
      "the largest excess: rank {}'s thread used {:.2f}x its peers' CPU time per step for its "
      "core's speed (its CPU time over the probe's, median of {} steps; the next rank {:.2f}x){}, "
      "a reading through the probe, not of steps on cores as fast: not enough to name it; ",
      top->rank, top_ratio, top->work_per_probe_steps, next,
      faster ? fmt::format(" on a core {:.2f}x its peers' probe time, where part of it may be the "
                           "cores' (a slower core does less to the work than to the probe)",
                           *core)
             : "");
}

}  // namespace

std::optional<SensitivityNote> WorkSensitivityText(const Analyses& a) {
  if (WorldSize(a.steps, a.traces) < 3) return std::nullopt;
  const HostCpuDetectorOptions o;
  std::vector<RankCpuStats> cpu_only;
  for (const RankCpuStats& r : a.host_cpu.ranks) {
    if (CpuOnlyTrace(a, r.rank)) cpu_only.push_back(r);
  }
  std::optional<WorkSensitivity> w = StepsToTellExcess(cpu_only, kTellExcess, o);
  if (!w) return std::nullopt;
  SensitivityNote note;
  const RankCpuStats* top = LargestMildExcess(a, cpu_only, 1 + o.min_cpu_time_excess);
  if (top != nullptr) {
    note.text = fmt::format(
        "the largest excess: rank {}'s thread used {:.2f}x its peers' CPU time per step over {} "
        "steps on CPUs as fast, {:.1f} standard errors (naming it needs >= {:.2f}x at {:.0f}); ",
        top->rank, *top->work_ratio, top->work_steps, top->work_z, 1 + o.min_cpu_time_excess,
        o.min_cpu_time_z);
  } else if (std::optional<std::string> probe_top = ProbeWorkTopText(a, cpu_only)) {
    note.text = std::move(*probe_top);
  }
  note.text += fmt::format(
      "at this run's noise (a rank's CPU time per step against peers on CPUs as fast varies "
      "±{:.0f}% step to step) a rank with {:.0f}% more work stands out in 19 runs of 20 over ~{} "
      "steps",
      100 * w->sigma, 100 * kTellExcess, w->steps);
  note.too_short = w->steps > w->run_steps;
  if (note.too_short) {
    note.text += fmt::format("; this run had {} ({} compared): run ~{} steps to tell", w->run_steps,
                             w->compared, w->steps);
  } else {
    note.text += fmt::format("; this run had {} ({} compared): enough", w->run_steps, w->compared);
  }
  return note;
}

std::optional<std::string> TwoRankExcessNote(const Analyses& a) {
  if (WorldSize(a.steps, a.traces) != 2) return std::nullopt;
  const RankCpuStats* top = LargestMildExcess(a, a.host_cpu.ranks, 1 + kTwoRankMoreWork);
  if (top == nullptr) return std::nullopt;
  return fmt::format(
      "rank {}'s thread used {:.2f}x its peer's CPU time per step on CPUs as fast by the probe "
      "({:.1f} standard errors over {} steps), but with two ranks more steps cannot tell a "
      "difference under {:.0f}% from their two cores' {}",
      top->rank, *top->work_ratio, top->work_z, top->work_steps, 100 * kTwoRankMoreWork,
      kTwoRanksCannotTell);
}

std::optional<std::string> UndecidedWorkText(const Analyses& a) {
  std::optional<std::string> said = CpuWorkUndecided(a);
  if (!said) said = FasterCoreHidesWork(a);
  if (!said) said = TwoRankExcessNote(a);
  return said;
}

void SayCpuWorkUndecided(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kNoStraggler && v.status != VerdictStatus::kInconclusive) return;
  std::optional<std::string> said = UndecidedWorkText(a);
  if (said) {
    v.summary += "; " + *said;
    AddSteps(next_steps, {std::move(*said)});
    return;
  }
  std::optional<SensitivityNote> note = WorkSensitivityText(a);
  if (!note) return;
  v.summary += "; " + note->text;
  // A next step only where the run was too short to tell.
  if (note->too_short) AddSteps(next_steps, {std::move(note->text)});
}

bool DropTwoRankLateWork(Verdict& v, const Analyses& a) {
  if (v.status != VerdictStatus::kStraggler || v.culprits.size() != 1 ||
      WorldSize(a.steps, a.traces) != 2)
    return false;
  const Culprit& c = v.culprits.front();
  if (c.cause_class != CauseClass::kUnknown || c.cause || !c.entity.rank || c.ranks.size() > 1 ||
      c.onset_step || c.pattern || !CpuOnlyTrace(a, *c.entity.rank))
    return false;
  const int32_t rank = *c.entity.rank;
  const Finding* late = FirstOf(a.traces.findings, FindingCode::kTraceLateArrival);
  const RankCpuStats* stats = CpuStatsOf(a, rank);
  if (late == nullptr || late->entity.rank != rank || stats == nullptr || !stats->work_ratio ||
      !stats->work_probed || stats->work_steps < HostCpuDetectorOptions().min_cpu_time_steps ||
      stats->work_z < kTwoRankLateWorkZ || *stats->work_ratio < 1 + kTellExcess / 4 ||
      *stats->work_ratio >= 1 + kTwoRankLateWork)
    return false;
  // Its extra CPU time in the profiled steps makes at least half of what
  // its lateness cost there: late for that work.
  std::optional<WindowRatios> window = WindowRatiosOf(a, rank);
  const double cost = c.slowdown.value_or(v.throughput_lost.value_or(0));
  if (!window || window->cpu <= 1 || (window->cpu - 1) / window->cpu < cost / 2) return false;
  std::string why = fmt::format(
      "rank {} arrives last at the profiled collectives with no cause its traces show, its "
      "thread using {:.2f}x its peer's CPU time per step there",
      rank, window->cpu);
  // SayCpuWorkUndecided says the run's reading when it has something to
  // say (UndecidedWorkText): not twice, but the reason stays (NameAfterDrop
  // may name another rank, and then nothing is appended).
  if (UndecidedWorkText(a)) {
    why += ": late for extra work that one peer cannot tell from the two cores' difference";
  } else {
    why += fmt::format(
        " and {:.2f}x over {} steps on CPUs as fast by the probe ({:.1f} standard errors): late "
        "for that extra work, but with two ranks a difference under {:.0f}% may be their two "
        "cores' {}",
        *stats->work_ratio, stats->work_steps, stats->work_z, 100 * kTwoRankLateWork,
        kTwoRanksCannotTell);
  }
  v.culprits.clear();
  return SayDropped(v, {why},
                    "to tell a slow rank from a slow core: rerun with a third rank, or with the "
                    "two ranks' cores swapped (taskset)");
}

}  // namespace laggard::verdict_internal
