#include "verdict/verdict_internal.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace laggard::verdict_internal {

// What the step-time detector compared the ranks on, for the summary.
std::string_view TimesCompared(const StepAnalysis& steps) {
  return steps.job.basis == StepBasis::kComputeTime ? "compute times" : "step times";
}

std::string EntityName(const Entity& e) {
  if (!e.rank) return "the job";
  std::string s = fmt::format("rank {}", *e.rank);
  if (e.host && e.gpu) s += fmt::format(" ({} GPU {})", *e.host, *e.gpu);
  else if (e.host) s += fmt::format(" ({})", *e.host);
  return s;
}

// "(persistent, +21%)" or "(periodic: +60% every 100 steps)".
std::string PatternText(const Finding* f) {
  if (!f->pattern) return "";
  if (f->pattern == Pattern::kPeriodic && f->period_steps && f->spike) {
    return fmt::format(" (periodic: {:+.0f}% every {:.0f} steps)", 100 * *f->spike,
                       *f->period_steps);
  }
  if (f->pattern == Pattern::kIntermittent && f->spike) {
    return fmt::format(" (intermittent: {:+.0f}% on some steps)", 100 * *f->spike);
  }
  return fmt::format(" ({}, {:+.0f}%)", PatternName(*f->pattern), 100 * f->slowdown.value_or(0));
}

const Finding* FirstOf(const std::vector<Finding>& findings, FindingCode code) {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}
const Finding* FirstOf(const StepAnalysis& a, FindingCode code) {
  return FirstOf(a.findings, code);
}

void AddSteps(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

// Drops from `to` every step `gone` holds.
void RemoveSteps(std::vector<std::string>& to, const std::vector<std::string>& gone) {
  std::erase_if(to, [&](const std::string& s) {
    return std::find(gone.begin(), gone.end(), s) != gone.end();
  });
}

// `from`'s next steps first, then those already in `to` (without repeats).
void PutStepsFirst(std::vector<std::string>& to, const std::vector<std::string>& from) {
  std::vector<std::string> first = from;
  AddSteps(first, to);
  to = std::move(first);
}

// An agreeing signal's gain, within kMaxConfidence.
double Raised(double confidence, double gain) {
  return std::min(kMaxConfidence, confidence + gain);
}

size_t WorldSize(const StepAnalysis& steps, const TraceAnalysis& traces) {
  return std::max(steps.job.ranks, traces.ranks.size());
}

std::optional<double> GpuHoursPerDay(const std::optional<double>& throughput_lost, size_t world) {
  if (!throughput_lost || world == 0) return std::nullopt;
  return *throughput_lost * static_cast<double>(world) * 24.0;
}

void BoundByCulprit(Verdict& v, size_t world) {
  if (!v.throughput_lost || v.impact_method != ImpactMethod::kUpperBound || v.culprits.empty())
    return;
  const Culprit& top = v.culprits.front();
  if (top.entity.job || !top.slowdown || *top.slowdown <= 0) return;
  const double bound = *top.slowdown / (1 + *top.slowdown);
  if (*v.throughput_lost <= bound) return;
  v.throughput_lost = bound;
  if (world > 0) v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, world);
}

bool DropCostlessCulprit(Verdict& v) {
  if (v.status != VerdictStatus::kStraggler || v.culprits.size() != 1 || !v.throughput_lost ||
      v.impact_method != ImpactMethod::kUpperBound || *v.throughput_lost >= kCostlessBelow) {
    return false;
  }
  const Culprit& c = v.culprits.front();
  if (!c.entity.rank || !c.ranks.empty()) return false;
  std::string found = c.slowdown ? fmt::format(" ({:+.0f}%)", 100 * *c.slowdown) : "";
  std::string cause(CauseClassName(c.cause_class));
  if (c.cause) cause += "/" + *c.cause;
  std::string why = fmt::format(
      "rank {} runs slower{} ({}), but the others wait on it so little that it costs at most "
      "{:.1f}% of job throughput",
      *c.entity.rank, found, cause, 100 * *v.throughput_lost);
  if (!c.evidence.empty()) why += ": " + c.evidence.front();
  std::string next = fmt::format(
      "nothing measurable holds the job back; rank {}'s slowness is its own (look at its host "
      "only if it grows)",
      *c.entity.rank);
  v.culprits.clear();
  return SayDropped(v, {why}, std::move(next));
}

bool PreferCommBound(Verdict& v, const Analyses& a) {
  const Finding* comm = FirstOf(a.traces.findings, FindingCode::kTraceCommBound);
  if (comm == nullptr || comm->slowdown.value_or(0) < kCommMostOfStep) return false;
  const bool straggler = v.status == VerdictStatus::kStraggler;
  if (straggler) {
    // A cost that bounds it from above, or measured: a lower bound (a
    // pipeline stage's) says nothing about being smaller.
    if (v.culprits.empty() || !v.throughput_lost || v.impact_method == ImpactMethod::kLowerBound ||
        *v.throughput_lost >= *comm->slowdown / 3)
      return false;
    // Ranks only (a rank, or a group of ranks not named for its host): a
    // host, NIC, switch or the job may be what slows the transfers.
    for (const Culprit& c : v.culprits) {
      const bool ranks = c.entity.rank
                             ? !c.entity.nic && !c.entity.switch_name
                             : !c.ranks.empty() && !c.entity.host && !c.entity.switch_name;
      if (!ranks || c.entity.job || c.cause_class == CauseClass::kCommunication ||
          c.cause_class == CauseClass::kExternal)
        return false;
    }
  } else if (v.status != VerdictStatus::kNoStraggler) {
    return false;
  }
  Verdict bound = CommBoundVerdict(*comm);
  if (straggler) {
    // "; a smaller problem beside it: rank 1 (host_stall: host_contention,
    // +51%), costs up to ~7% of job throughput"
    std::string named;
    for (const Culprit& c : v.culprits) {
      std::string cause(CauseClassName(c.cause_class));
      if (c.cause) cause += ": " + *c.cause;
      if (c.slowdown) cause += fmt::format(", {:+.0f}%", 100 * *c.slowdown);
      named += fmt::format("{}{} ({})", named.empty() ? "" : ", ", CulpritNameOf(c), cause);
    }
    // No cause observed (unknown, or a host stall of no cause) and a few
    // percent at most: minor, not a culprit.
    const bool minor = *v.throughput_lost < kMinorBesideNetwork &&
                       std::all_of(v.culprits.begin(), v.culprits.end(), [](const Culprit& c) {
                         return !c.cause && (c.cause_class == CauseClass::kUnknown ||
                                             c.cause_class == CauseClass::kHostStall);
                       });
    // Compute-slow from the thread's CPU time alone: no slower ops seen.
    const bool cpu_time_only =
        std::all_of(v.culprits.begin(), v.culprits.end(), [&](const Culprit& c) {
          // No trace finding of its own (late, compute-slow, stalled) but
          // one kept as information (a late arrival "not blamed").
          return c.cause_class == CauseClass::kComputeSlow && !c.cause && c.entity.rank &&
                 CpuOnlyTrace(a, *c.entity.rank) &&
                 std::none_of(
                     a.traces.findings.begin(), a.traces.findings.end(), [&](const Finding& f) {
                       return f.entity.rank == c.entity.rank && f.severity != Severity::kInfo &&
                              (f.code == FindingCode::kTraceComputeSlow ||
                               f.code == FindingCode::kTraceLateArrival ||
                               f.code == FindingCode::kTraceHostStall);
                     });
        });
    if (cpu_time_only) {
      bound.summary += "; beside it, not named: " + named +
                       ": its thread's extra CPU time per step, with no slower ops, may be its "
                       "wait inside the transfers (gloo polls on a CPU)";
    } else {
      bound.summary +=
          (minor ? "; minor beside it, not named: " : "; a smaller problem beside it: ") + named +
          CostPhrase(v);
    }
    // Its next steps are that problem's, after the network's.
    if (!minor && !cpu_time_only) {
      for (const std::string& s : v.next_steps) AddSteps(bound.next_steps, {s});
    }
  } else {
    // "no straggler — ..." says why no rank is to blame; its next step
    // ("nothing to fix") no longer holds.
    std::string why = v.summary;
    if (why.starts_with("verdict: ")) why.erase(0, 9);
    bound.summary += "; " + why;
  }
  v = std::move(bound);
  return true;
}

bool CapTwoRankConfidence(Verdict& v, size_t world) {
  if (world != 2 || v.status != VerdictStatus::kStraggler) return false;
  bool capped = false;
  for (Culprit& c : v.culprits) {
    if (!c.entity.rank || (c.cause && *c.cause != "host_contention") || c.confidence <= kTwoRankCap)
      continue;
    c.confidence = kTwoRankCap;
    c.evidence.push_back(
        "two ranks: each is compared with the other alone, and no third says which is the odd "
        "one (confidence at most medium)");
    capped = true;
  }
  return capped;
}

std::string CostPhrase(const Verdict& v) {
  if (!v.throughput_lost) return {};
  const double pct = 100 * *v.throughput_lost;
  switch (v.impact_method) {
    case ImpactMethod::kReplay:
      return fmt::format(", costs ~{:.0f}% of job throughput (what-if replay)", pct);
    case ImpactMethod::kLowerBound:
      return fmt::format(", costs at least ~{:.0f}% of job throughput", pct);
    case ImpactMethod::kBeforeAfter:
      if (v.impact_first_step && v.impact_last_step) {
        return fmt::format(
            ", cost ~{:.0f}% of job throughput in steps {}-{} (step times before and after)", pct,
            *v.impact_first_step, *v.impact_last_step);
      }
      if (v.impact_first_step) {
        return fmt::format(
            ", costs ~{:.0f}% of job throughput since step {} (step times before and after)", pct,
            *v.impact_first_step);
      }
      return fmt::format(", costs ~{:.0f}% of job throughput (step times before and after)", pct);
    case ImpactMethod::kSlowSteps:
      return fmt::format(", costs ~{:.1f}% of job throughput{} (its slow steps' extra time)", pct,
                         v.impact_first_step ? fmt::format(" since step {}", *v.impact_first_step)
                                             : std::string());
    case ImpactMethod::kUpperBound: break;
  }
  return fmt::format(", costs up to ~{:.0f}% of job throughput", pct);
}

// A culprit of one finding's entity, slowdown, onset and pattern, its
// confidence at most `cap`.
Culprit CulpritOf(const Finding& f, CauseClass cause_class, double cap) {
  Culprit c;
  c.entity = f.entity;
  c.cause_class = cause_class;
  c.confidence = std::min(f.confidence, cap);
  c.slowdown = f.slowdown;
  c.onset_step = f.onset_step;
  c.pattern = f.pattern;
  return c;
}

// The rank that pauses at the job's isolated slow steps (host.pause,
// pause_detector.h): a host stall, on the finding's evidence.
Culprit PauseCulprit(const Finding& pause) {
  Culprit c;
  c.entity = pause.entity;
  c.cause_class = CauseClass::kHostStall;
  c.cause = pause.cause;
  c.confidence = pause.confidence;
  c.slowdown = pause.slowdown;
  for (const Evidence& e : pause.evidence) c.evidence.push_back(e.text);
  return c;
}

std::optional<size_t> StepsToTell(const StepAnalysis& steps) {
  if (!steps.job.noise_sigma || *steps.job.noise_sigma <= 0) return std::nullopt;
  double n = std::pow(3 * 1.2533 * *steps.job.noise_sigma / 0.10, 2);
  // Fewer than 5 steps do not measure the noise itself.
  return static_cast<size_t>(std::ceil(std::max(n, 5.0)));
}

std::optional<Verdict> TooFewStepsVerdict(const StepAnalysis& steps, bool named_nobody) {
  std::optional<size_t> need = StepsToTell(steps);
  if (!need || steps.job.steps >= *need) return std::nullopt;
  Verdict v;
  v.status = VerdictStatus::kInconclusive;
  v.summary = fmt::format(
      "verdict: inconclusive — cannot tell a 10% straggler from this run's noise: {} steps, need "
      "{} (per-step noise {:.1f}%){}",
      steps.job.steps, *need, 100 * *steps.job.noise_sigma,
      named_nobody ? "" : "; the slowest rank's excess is within it");
  v.next_steps.push_back(fmt::format("log at least {} steps per rank", *need));
  return v;
}

namespace {

// `rank`'s step statistics, when it has analysed steps.
const RankStepStats* UsedStatsOf(const StepAnalysis& steps, int32_t rank) {
  for (const RankStepStats& r : steps.ranks) {
    if (r.info.rank == rank && r.steps_used > 0) return &r;
  }
  return nullptr;
}

}  // namespace

bool WithinStepNoise(const Finding& straggler, const StepAnalysis& steps) {
  if (!straggler.entity.rank || !straggler.slowdown || !steps.job.noise_sigma) return false;
  if (straggler.pattern && *straggler.pattern != Pattern::kPersistent) return false;
  const RankStepStats* r = UsedStatsOf(steps, *straggler.entity.rank);
  if (r == nullptr) return false;
  // Slow over the whole run by the detector's own test: a stretch to the
  // end is its worst part, not all it has, and is not judged alone.
  const bool slow_throughout = SlowOverTheRun(*r, StepDetectorOptions());
  size_t n = r->steps_used;
  const bool episode =
      straggler.onset_step && straggler.end_step && *straggler.end_step >= *straggler.onset_step;
  // A stretch that began after the first analysed step and lasted to the
  // last: measured over its own steps too (bench/realjobs d9: healthy
  // ranks +12% over steps 35-39 and +9% over 34-39 of 40 were named).
  const bool to_end = !episode && !slow_throughout && straggler.onset_step &&
                      steps.job.first_step && steps.job.last_step &&
                      *straggler.onset_step > *steps.job.first_step &&
                      *steps.job.last_step >= *straggler.onset_step;
  if (episode)
    n = std::min(n, static_cast<size_t>(*straggler.end_step - *straggler.onset_step + 1));
  if (to_end)
    n = std::min(n, static_cast<size_t>(*steps.job.last_step - *straggler.onset_step + 1));
  double se = 1.2533 * *steps.job.noise_sigma / std::sqrt(static_cast<double>(n));
  return *straggler.slowdown < 3 * se &&
         (episode || to_end || StepsToTell(steps).value_or(0) > steps.job.steps);
}

std::optional<double> MinorStepCost(const Finding& straggler, const StepAnalysis& steps) {
  if (straggler.code != FindingCode::kStepStraggler || !straggler.entity.rank ||
      !straggler.slowdown || !straggler.pattern || *straggler.slowdown <= 0)
    return std::nullopt;
  const RankStepStats* rank = UsedStatsOf(steps, *straggler.entity.rank);
  if (rank == nullptr) return std::nullopt;
  const StepDetectorOptions opt;
  // Slow over the whole run as well (no z asked, as before the total): the
  // episode or the bursts are its worst part, not all it costs.
  if (SlowByMedianAndTotal(*rank, opt)) return std::nullopt;
  const auto used = static_cast<double>(rank->steps_used);
  double cost = *straggler.slowdown;  // periodic, intermittent: already spread over the run
  // The slowdown of the steps it hits, and how many it hits.
  double hit = straggler.spike.value_or(cost);
  double hits = cost / hit * used;
  if (*straggler.pattern == Pattern::kPersistent) {
    std::optional<double> share = RecoveredShare(straggler, steps);
    if (!share) return std::nullopt;  // persistent to the end: not passing
    hits = *share * used;
    cost *= *share;
  } else if (*straggler.pattern != Pattern::kPeriodic &&
             *straggler.pattern != Pattern::kIntermittent) {
    return std::nullopt;
  }
  if (cost >= kMinorStepCost || hit >= opt.strong_threshold ||
      static_cast<double>(std::llround(hits)) > kMinorStepHits)
    return std::nullopt;
  return cost;
}

std::optional<double> RecoveredShare(const Finding& straggler, const StepAnalysis& steps) {
  if (straggler.code != FindingCode::kStepStraggler || !straggler.entity.rank ||
      straggler.pattern != Pattern::kPersistent || !straggler.onset_step || !straggler.end_step ||
      *straggler.end_step < *straggler.onset_step)
    return std::nullopt;
  const RankStepStats* r = UsedStatsOf(steps, *straggler.entity.rank);
  if (r == nullptr || SlowByMedianAndTotal(*r, StepDetectorOptions())) return std::nullopt;
  const double used = static_cast<double>(r->steps_used);
  return std::min(used, static_cast<double>(*straggler.end_step - *straggler.onset_step + 1)) /
         used;
}

bool StepStragglerTooWeak(const Finding& straggler, const StepAnalysis& steps) {
  return WithinStepNoise(straggler, steps) || MinorStepCost(straggler, steps).has_value();
}

std::string MinorStepText(const StepAnalysis& steps) {
  std::string text;
  for (const Finding& f : steps.findings) {
    if (std::optional<double> cost = MinorStepCost(f, steps)) {
      text += fmt::format("; minor, not named: {} — ~{:.1f}% of its step time over the run",
                          f.message, 100 * *cost);
    }
  }
  return text;
}

std::optional<std::string> StepStragglerTracedWaiting(const Finding& f,
                                                      const TraceAnalysis& traces) {
  constexpr size_t kMinInstances = 5;
  if (f.code != FindingCode::kStepStraggler || !f.entity.rank || !f.slowdown ||
      *f.slowdown >= kSmallStepStraggler)
    return std::nullopt;
  for (const RankTraceStats& st : traces.ranks) {
    if (st.rank != *f.entity.rank || st.instances < kMinInstances || !st.median_lateness_ns)
      continue;
    const double late_ms = static_cast<double>(*st.median_lateness_ns) / 1e6;
    if (late_ms <= 0) {
      return fmt::format(
          "step times point at rank {} ({:+.0f}%), but in the profiled steps it arrives {:.2f} ms "
          "before the median rank (it waits for the others there): not a second culprit",
          st.rank, 100 * *f.slowdown, -late_ms);
    }
    // Last at none, and after the median by less than the trace detector
    // names a hidden second rank at: it holds no one up.
    const double step_ns = static_cast<double>(traces.median_step_ns.value_or(0));
    if (st.share_last == 0 && step_ns > 0 &&
        *st.median_lateness_ns < TraceDetectorOptions().second_rank_min_lateness * step_ns) {
      return fmt::format(
          "step times point at rank {} ({:+.0f}%), but in the profiled steps it is last at none "
          "of {} collectives, {:.2f} ms after the median rank ({:.1f}% of a step){}: not a "
          "second culprit",
          st.rank, 100 * *f.slowdown, st.instances, late_ms, 100 * late_ms * 1e6 / step_ns,
          st.median_wait_ns ? fmt::format(", and waits {:.2f} ms per collective (median)",
                                          static_cast<double>(*st.median_wait_ns) / 1e6)
                            : std::string());
    }
  }
  return std::nullopt;
}

bool StragglerOutsideProfile(const Finding& f, const StepAnalysis& steps) {
  // No end: slow to the last step analysed (unknown: it may reach the profile).
  if (!f.onset_step || (!f.end_step && !steps.job.last_step)) return false;
  Episode e;
  e.start_step = *f.onset_step;
  e.end_step = f.end_step ? *f.end_step : *steps.job.last_step;
  return ProfileMisses(steps.job, e);
}

bool SmallStepStragglerTracedEarly(const Finding& f, const TraceAnalysis& traces, Culprit& first) {
  std::optional<std::string> why = StepStragglerTracedWaiting(f, traces);
  if (!why) return false;
  first.evidence.push_back(std::move(*why));
  return true;
}

}  // namespace laggard::verdict_internal
