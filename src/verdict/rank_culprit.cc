// The verdict from step times and traces: a traced culprit (a late rank, a
// late group), a step straggler, a job-wide cause, a clean bill from the
// traces, or no culprit, most specific rule first (BaseVerdict). Internal
// to src/verdict/.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// A trace culprit last at fewer than this share of the collectives is late
// at some steps only: the job's periodic slowdown, if any, is its
// (judgement: a persistent culprit is last at > 90% in real and simulated
// jobs, a rank stalled every 5th step at 4 of 9 in a real one).
constexpr double kPeriodicLastShare = 0.8;

// The step stragglers beside a traced culprit (`v.culprits`' first): each
// rank no culprit names yet, unless the traces show it early, its excess is
// inside the run's noise, or it is minor (an evidence line of the first).
void AddStepStragglersBeside(Verdict& v, const StepAnalysis& steps, const TraceAnalysis& traces) {
  const std::optional<int32_t> first = v.culprits.front().entity.rank;
  for (const Finding& f : steps.findings) {
    if (f.code != FindingCode::kStepStraggler || f.entity.rank == first) continue;
    if (std::any_of(v.culprits.begin(), v.culprits.end(),
                    [&](const Culprit& x) { return x.entity.rank == f.entity.rank; }) ||
        SmallStepStragglerTracedEarly(f, traces, v.culprits.front()))
      continue;
    // Step times alone, as StepStragglerVerdict judges them: noise, or a
    // passing slowdown too small to chase, is no second culprit.
    if (WithinStepNoise(f, steps)) continue;
    if (std::optional<double> cost = MinorStepCost(f, steps)) {
      v.culprits.front().evidence.push_back(fmt::format(
          "step times: {} — ~{:.1f}% of its step time over the run: minor, not a second culprit",
          f.message, 100 * *cost));
      continue;
    }
    v.culprits.push_back(CulpritOf(f, CauseClass::kUnknown, kContradictedCap));
  }
}

// The trace detector named a culprit: build the verdict around it.
Verdict TraceVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  const Finding* late = FirstOf(traces.findings, FindingCode::kTraceLateArrival);
  // Why the culprit is late: the findings of its rank (a second slow rank
  // has a compute-slow finding of its own, below).
  auto of_culprit = [&](FindingCode code) -> const Finding* {
    for (const Finding& f : traces.findings) {
      if (f.code == code && f.entity.rank == late->entity.rank) return &f;
    }
    return nullptr;
  };
  const Finding* slow = of_culprit(FindingCode::kTraceComputeSlow);
  const Finding* stall = of_culprit(FindingCode::kTraceHostStall);
  Culprit c;
  c.entity = late->entity;
  // Join what the step logs know of the same rank (host, GPU).
  if (const StepSeries* s = run.FindRank(*c.entity.rank)) {
    if (!c.entity.host) c.entity.host = s->info.host;
    if (!c.entity.gpu) c.entity.gpu = s->info.local_gpu;
  }
  c.confidence = std::min(late->confidence, kSingleSourceCap);
  // A CPU-only trace has CPU ops, not kernels, and no GPU to idle.
  bool cpu_only = false;
  double share_last = 1;
  for (const RankTraceStats& st : traces.ranks) {
    if (st.rank != *c.entity.rank) continue;
    cpu_only = st.cpu_only;
    share_last = st.share_last;
  }
  std::string why = "arrives last at the collectives; why is not known from the traces";
  c.cause_class = CauseClass::kUnknown;
  if (slow) {
    c.cause_class = CauseClass::kComputeSlow;
    c.confidence = std::max(c.confidence, slow->confidence);
    why = fmt::format("compute-slow: its {} run {:.2f}x as long as a healthy peer's",
                      cpu_only ? "CPU ops" : "kernels", 1 + slow->slowdown.value_or(0));
    c.slowdown = slow->slowdown;
  } else if (stall) {
    c.cause_class = CauseClass::kHostStall;
    c.confidence = std::max(c.confidence, stall->confidence);
    why = cpu_only
              ? "host stall: its CPU ops run at the normal speed, but it runs none for a while "
                "before its work (data loader, a sleep, Python)"
              : "host stall: kernels are normal, the GPU idles waiting for the host";
  }
  // Step times: agreement raises confidence, a different rank lowers it.
  // Step stragglers inside the noise or minor (a passing slowdown), in
  // steps the profiler did not trace, or another rank's small one the
  // traces show waiting, neither agree nor contradict.
  std::vector<int32_t> step_ranks;
  for (const Finding& f : steps.findings) {
    if (f.code != FindingCode::kStepStraggler || !f.entity.rank) continue;
    if (StepStragglerTooWeak(f, steps) || StragglerOutsideProfile(f, steps) ||
        (f.entity.rank != c.entity.rank && StepStragglerTracedWaiting(f, traces)))
      continue;
    step_ranks.push_back(*f.entity.rank);
  }
  bool agrees = std::find(step_ranks.begin(), step_ranks.end(), *c.entity.rank) != step_ranks.end();
  if (agrees) {
    c.confidence = Raised(c.confidence, kAgreeingSignalGain);
    for (const Finding& f : steps.findings) {
      if (f.code == FindingCode::kStepStraggler && f.entity.rank == c.entity.rank &&
          !StepStragglerTooWeak(f, steps)) {
        c.onset_step = f.onset_step;
        c.pattern = f.pattern;
        if (!c.slowdown) c.slowdown = f.slowdown;
      }
    }
  } else if (!step_ranks.empty()) {
    c.confidence = std::min(c.confidence, kContradictedCap);
    why += fmt::format(" (but step times point at rank {})", step_ranks.front());
  } else if (const Finding* per = FirstOf(steps, FindingCode::kPeriodicSlowdown);
             per && per->period_steps && !c.pattern && share_last < kPeriodicLastShare) {
    // Synchronised step times slow every N steps for the whole job, and
    // the traces name a rank that holds the others up at some collectives
    // only: the period is its (a persistent culprit is last at nearly all).
    c.pattern = Pattern::kPeriodic;
    c.onset_step = per->onset_step;
    why += fmt::format("; the job slows every {:.0f} steps (step times): periodic",
                       *per->period_steps);
  }
  v.culprits.push_back(c);
  // A second slow rank hidden behind the culprit (trace.compute_slow of
  // another rank).
  std::string also;
  for (const Finding& f : traces.findings) {
    if (f.code != FindingCode::kTraceComputeSlow || !f.entity.rank ||
        f.entity.rank == c.entity.rank)
      continue;
    Culprit second = CulpritOf(f, CauseClass::kComputeSlow, kSingleSourceCap);
    second.evidence.push_back("traces: " + f.message);
    also += fmt::format("; also rank {}: compute-slow, its ops run {:.2f}x as long as its peers'",
                        *f.entity.rank, 1 + f.slowdown.value_or(0));
    AddSteps(v.next_steps, f.next_steps);
    v.culprits.push_back(std::move(second));
  }
  AddStepStragglersBeside(v, steps, traces);
  v.throughput_lost =
      steps.job.throughput_lost && agrees ? steps.job.throughput_lost : traces.throughput_lost;
  v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, WorldSize(steps, traces));
  BoundByCulprit(v, WorldSize(steps, traces));
  v.summary = fmt::format("verdict: {} is the straggler — {}, confidence {}", EntityName(c.entity),
                          why, ConfidenceWord(c.confidence));
  v.summary += CostPhrase(v);
  v.summary += also;
  if (slow) AddSteps(v.next_steps, slow->next_steps);
  if (stall) AddSteps(v.next_steps, stall->next_steps);
  AddSteps(v.next_steps, late->next_steps);
  if (!slow && !stall) {
    v.next_steps.push_back(
        DefaultNextStep(FindingCode::kTraceLateArrival, fmt::arg("rank", *c.entity.rank)));
  }
  return v;
}

// Several ranks late together (trace.late_group): one host's ranks, or a
// block of ranks. Slow kernels on several GPUs with no hardware finding
// are taken for more work (imbalance) until GPU metrics say otherwise
// (DecideVerdict joins them); idle GPUs mean the host.
Verdict GroupVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces,
                     const Finding& g) {
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  Culprit c;
  c.entity = g.entity;
  c.ranks = g.ranks;
  c.slowdown = g.slowdown;
  c.pattern = g.pattern;
  c.confidence = std::min(g.confidence, kSingleSourceCap);
  c.evidence.push_back("traces: " + g.message);
  if (g.cause == "host_stall") {
    c.cause_class = CauseClass::kHostStall;
    if (g.pattern == Pattern::kHost) c.cause = "host_contention";
  } else if (g.cause == "slow_kernels") {
    c.cause_class = CauseClass::kImbalance;
    c.cause = "uneven_work";
    // Whether GPU metrics could have shown a hardware cause at all.
    bool metrics = std::any_of(g.ranks.begin(), g.ranks.end(), [&](int32_t r) {
      const StepSeries* s = run.FindRank(r);
      std::optional<std::string> host = s ? s->info.host : std::nullopt;
      if (!host) host = g.entity.host;
      return host && std::any_of(run.hardware.gpus.begin(), run.hardware.gpus.end(),
                                 [&](const GpuRecord& gpu) { return gpu.host == host; });
    });
    c.confidence = std::min(c.confidence, metrics ? kImbalanceInferredCap : kImbalanceAssumedCap);
    c.evidence.push_back(std::string(metrics ? kInferredMoreWork : kAssumedMoreWork));
  } else {
    c.cause_class = CauseClass::kUnknown;
  }
  v.culprits.push_back(std::move(c));
  v.throughput_lost = traces.throughput_lost;
  v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, WorldSize(steps, traces));
  v.next_steps = g.next_steps;
  v.summary = StragglerSummary(v);
  return v;
}

// The job as a whole is the one culprit, from one finding (imbalance,
// periodic interference): its cause, confidence, slowdown and next steps.
Verdict JobCulpritVerdict(const Finding& f, CauseClass cause_class, std::string_view source,
                          std::string summary) {
  Verdict v;
  v.status = VerdictStatus::kJobWide;
  Culprit c;
  c.entity.job = true;
  c.cause_class = cause_class;
  c.cause = f.cause;
  c.confidence = f.confidence;
  c.slowdown = f.slowdown;
  c.evidence.push_back(fmt::format("{}: {}", source, f.message));
  v.culprits.push_back(std::move(c));
  v.summary = std::move(summary);
  v.next_steps = f.next_steps;
  return v;
}

// Step stragglers without a trace culprit: one culprit per straggler, most
// costly first, cause unknown from step times alone.
std::optional<Verdict> StepStragglerVerdict(const StepAnalysis& steps) {
  std::vector<const Finding*> stragglers;
  for (const Finding& f : steps.findings) {
    if (f.code == FindingCode::kStepStraggler) stragglers.push_back(&f);
  }
  if (stragglers.empty()) return std::nullopt;
  // A persistent excess inside the run's per-step noise over too few steps
  // is not a straggler yet (a false culprit is the worst answer).
  std::erase_if(stragglers, [&](const Finding* f) { return WithinStepNoise(*f, steps); });
  if (stragglers.empty()) return TooFewStepsVerdict(steps, /*named_nobody=*/false);
  // Minor ones are listed by the verdict that names nobody (MinorStepText).
  std::erase_if(stragglers, [&](const Finding* f) { return MinorStepCost(*f, steps).has_value(); });
  if (stragglers.empty()) return std::nullopt;
  std::stable_sort(stragglers.begin(), stragglers.end(), [](const Finding* a, const Finding* b) {
    return a->slowdown.value_or(0) * a->confidence > b->slowdown.value_or(0) * b->confidence;
  });
  Verdict v;
  v.status = VerdictStatus::kStraggler;
  for (const Finding* f : stragglers) {
    Culprit c;
    c.entity = f->entity;
    c.cause_class = CauseClass::kUnknown;
    c.confidence = std::min(f->confidence, kSingleSourceCap);
    c.slowdown = f->slowdown;
    c.onset_step = f->onset_step;
    c.pattern = f->pattern;
    v.culprits.push_back(std::move(c));
  }
  v.throughput_lost = steps.job.throughput_lost;
  v.gpu_hours_per_day = GpuHoursPerDay(v.throughput_lost, steps.job.ranks);
  BoundByCulprit(v, steps.job.ranks);
  const Culprit& top = v.culprits.front();
  std::string who = EntityName(top.entity);
  if (v.culprits.size() > 1) who += fmt::format(" (and {} more)", v.culprits.size() - 1);
  v.summary = fmt::format(
      "verdict: {} is the straggler — cause unknown from {} alone{}, confidence {}", who,
      TimesCompared(steps), PatternText(stragglers.front()), ConfidenceWord(top.confidence));
  v.summary += CostPhrase(v);
  for (const Finding* f : stragglers) {
    AddSteps(v.next_steps, f->next_steps);
    if (v.next_steps.size() >= 4) break;
  }
  return v;
}

// A cause of the whole job, no rank to blame: imbalance, a job-wide host
// stall, communication-bound steps, periodic interference.
std::optional<Verdict> JobCauseVerdict(const StepAnalysis& steps, const TraceAnalysis& traces) {
  if (const Finding* imb = FirstOf(steps, FindingCode::kStepStageImbalance)) {
    return JobCulpritVerdict(*imb, CauseClass::kImbalance, "step times",
                             "verdict: workload imbalance — " + imb->message);
  }
  const Finding* comm = FirstOf(traces.findings, FindingCode::kTraceCommBound);
  const Finding* vw = FirstOf(traces.findings, FindingCode::kTraceVariableWork);
  // Kept as information only where the ranks' CPU time says the work does
  // not vary (ExplainVariableWorkByHostCpu).
  if (vw && vw->severity == Severity::kInfo) vw = nullptr;
  // Transfers take most of each step: the compute that varies between the
  // ranks is the smaller part of it, and the network the larger problem.
  if (vw && !(comm && comm->slowdown.value_or(0) >= kCommMostOfStep)) {
    return JobCulpritVerdict(*vw, CauseClass::kImbalance, "traces",
                             "verdict: workload imbalance — " + vw->message);
  }
  if (const Finding* hs = FirstOf(traces.findings, FindingCode::kTraceHostStall);
      hs && hs->entity.job) {
    return JobCulpritVerdict(*hs, CauseClass::kHostStall, "traces",
                             "verdict: job-wide host stall — " + hs->message);
  }
  if (comm) {
    Verdict v = CommBoundVerdict(*comm);
    if (vw) v.summary += "; the smaller part of each step, compute, also varies: " + vw->message;
    return v;
  }
  // The whole job slows on a fixed period and no rank stands out: periodic
  // interference (checkpoint, evaluation, GC, a scheduled job on a shared
  // switch) — a cause class of its own, whichever rank or host it hits.
  const Finding* per = FirstOf(steps, FindingCode::kPeriodicSlowdown);
  if (!per || !per->period_steps || steps.job.episodes.empty()) return std::nullopt;
  Verdict v = JobCulpritVerdict(
      *per, CauseClass::kExternal, "step times",
      fmt::format("verdict: periodic interference — {}; no single rank stands out", per->message));
  Culprit& c = v.culprits.front();
  c.cause = "periodic_interference";
  c.confidence = std::min(per->confidence, kSingleSourceCap);
  c.onset_step = per->onset_step;
  c.pattern = Pattern::kPeriodic;
  const Episode& last = steps.job.episodes.back();
  auto next =
      static_cast<int64_t>(std::llround(static_cast<double>(last.start_step) + *per->period_steps));
  v.next_steps.push_back(DefaultNextStep(FindingCode::kPeriodicSlowdown, fmt::arg("step", next),
                                         fmt::arg("first", next - 1), fmt::arg("last", next + 1)));
  return v;
}

// Synchronised step times cannot name a rank, but traces of every rank
// with matched collectives and no late rank can clear the run: "no
// straggler", not "add traces". Not when the steps show a
// job-wide slowdown (those verdicts come first) or some ranks are not
// traced.
std::optional<Verdict> TracesClearVerdict(const StepAnalysis& steps, const TraceAnalysis& traces) {
  if (!FirstOf(steps, FindingCode::kStepsSynchronised) || traces.instances == 0 ||
      traces.ranks.size() < 2 || !steps.job.episodes.empty()) {
    return std::nullopt;
  }
  size_t world = traces.world_size ? static_cast<size_t>(*traces.world_size) : steps.job.ranks;
  if (traces.ranks.size() < std::max(world, steps.job.ranks)) return std::nullopt;
  for (const Finding& f : traces.findings) {
    if (f.severity != Severity::kInfo) return std::nullopt;
  }
  Verdict v;
  v.status = VerdictStatus::kNoStraggler;
  v.summary = fmt::format(
      "verdict: no straggler found — step times are synchronised across {} ranks, and traces of "
      "all {} show no rank holding the others up at {} collectives",
      steps.job.ranks, traces.ranks.size(), traces.instances);
  return v;
}

// The job's one slowdown episode, when it passed: at most
// kPassingEpisodeSteps steps, over before the last step analysed, costing
// under kPassingEpisodeShare of the run's time at its baseline. What it
// says, or nullopt.
std::optional<std::string> PassingEpisode(const JobStepStats& job) {
  if (job.episodes.size() != 1 || !job.last_step || !job.baseline_step_s ||
      *job.baseline_step_s <= 0 || job.steps == 0)
    return std::nullopt;
  const Episode& e = job.episodes.front();
  if (e.steps > kPassingEpisodeSteps || e.end_step >= *job.last_step) return std::nullopt;
  const double lost = static_cast<double>(e.steps) * (e.median_step_s - e.baseline_step_s);
  const double run = static_cast<double>(job.steps) * *job.baseline_step_s;
  if (lost / run >= kPassingEpisodeShare) return std::nullopt;
  return fmt::format(
      "the whole job slowed for {} steps ({}-{}: {:.1f} ms per step instead of {:.1f} ms, "
      "{:+.0f}%) and recovered, ~{:.1f}% of the run's time; no rank stood out: a passing event "
      "outside the ranks (the machine, storage, the network), not a straggler",
      e.steps, e.start_step, e.end_step, 1e3 * e.median_step_s, 1e3 * e.baseline_step_s,
      100 * (e.median_step_s / e.baseline_step_s - 1), 100 * lost / run);
}

// Step times that cannot name a rank (synchronised, no peers), or a
// slowdown of the whole job (one that passed: no straggler, said).
std::optional<Verdict> StepsOnlyVerdict(const StepAnalysis& steps) {
  Verdict v;
  if (const Finding* sync = FirstOf(steps, FindingCode::kStepsSynchronised)) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = fmt::format(
        "verdict: inconclusive — step times are synchronised across {} ranks (spread {:.2f}%), so "
        "they cannot name the culprit; {}",
        steps.job.ranks, 100 * steps.job.sync_spread.value_or(0),
        EpisodeOutsideProfile(steps.job)
            ? fmt::format("the traces cover steps {}-{}, outside the slowdown",
                          steps.job.profiled_steps->first, steps.job.profiled_steps->last)
            : std::string("add traces of 2 steps from every rank"));
    if (!steps.job.episodes.empty()) {
      v.summary += fmt::format(" ({} job-wide slowdown episode{} seen)", steps.job.episodes.size(),
                               steps.job.episodes.size() == 1 ? "" : "s");
    }
    v.next_steps = sync->next_steps;
    return v;
  }
  if (const Finding* none = FirstOf(steps, FindingCode::kNoPeers)) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = "verdict: inconclusive — " + none->message;
    v.next_steps = none->next_steps;
    for (const Finding& f : steps.findings) {
      if (f.code == FindingCode::kJobSlowdown || f.code == FindingCode::kPeriodicSlowdown) {
        v.summary += fmt::format("; {}", f.message);
        break;
      }
    }
    return v;
  }
  const Finding* periodic = FirstOf(steps, FindingCode::kPeriodicSlowdown);
  const Finding* slowdown = periodic ? periodic : FirstOf(steps, FindingCode::kJobSlowdown);
  if (!slowdown) return std::nullopt;
  if (!periodic) {
    if (std::optional<std::string> passing = PassingEpisode(steps.job)) {
      v.status = VerdictStatus::kNoStraggler;
      v.summary = "verdict: no straggler found — " + *passing;
      v.next_steps = slowdown->next_steps;
      return v;
    }
  }
  v.status = VerdictStatus::kJobWide;
  v.summary =
      fmt::format("verdict: job-wide slowdown — {}; no single rank is to blame", slowdown->message);
  v.next_steps = slowdown->next_steps;
  return v;
}

// No culprit and no job-wide cause: too little data to tell, or none.
Verdict NoCulpritVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  Verdict v;
  if (steps.ranks.empty() && traces.ranks.empty()) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = run.traces.empty()
                    ? "verdict: inconclusive — no step times and no profiler traces were found"
                    : fmt::format(
                          "verdict: inconclusive — {} trace{} without a rank and no step times: "
                          "name each trace's rank (file name rank-N, or --rank-from) and add "
                          "per-rank step times",
                          run.traces.size(), run.traces.size() == 1 ? "" : "s");
    return v;
  }
  if (steps.ranks.empty() && !traces.ranks.empty()) {
    if (const Finding* nomatch = FirstOf(traces.findings, FindingCode::kTraceNoMatch)) {
      v.status = VerdictStatus::kInconclusive;
      v.summary = "verdict: inconclusive — " + nomatch->message;
      v.next_steps = nomatch->next_steps;
    } else if (traces.ranks.size() < 2) {
      v.status = VerdictStatus::kInconclusive;
      v.summary = fmt::format(
          "verdict: inconclusive — one rank's trace (rank {}) cannot show who arrives last; add "
          "the trace of a healthy rank for the same steps",
          traces.ranks.front().rank);
    } else {
      v.status = VerdictStatus::kNoStraggler;
      v.summary = fmt::format(
          "verdict: no straggler found — no rank arrives last consistently across {} collectives "
          "on {} ranks",
          traces.instances, traces.ranks.size());
      if (traces.world_size && static_cast<size_t>(*traces.world_size) > traces.ranks.size()) {
        v.summary += fmt::format(" (only {} of the job's {} ranks are traced)", traces.ranks.size(),
                                 *traces.world_size);
      }
    }
    return v;
  }
  // Every per-rank rule needs >= 3 steps of a rank after warm-up: with
  // fewer, nothing was judged, and nothing is cleared.
  size_t judged = 0;
  for (const RankStepStats& r : steps.ranks) judged += r.seconds && r.steps_used >= 3 ? 1 : 0;
  if (judged < 2) {
    v.status = VerdictStatus::kInconclusive;
    v.summary = fmt::format(
        "verdict: inconclusive — {} step{} analysed on {} rank{}: too few to compare the ranks "
        "(each needs 3 or more after warm-up)",
        steps.job.steps, steps.job.steps == 1 ? "" : "s", steps.job.ranks,
        steps.job.ranks == 1 ? "" : "s");
    v.next_steps.push_back(
        "log more steps per rank, or lower --warmup (the first steps skipped per rank)");
    return v;
  }
  if (auto few = TooFewStepsVerdict(steps, /*named_nobody=*/true)) return *few;
  v.status = VerdictStatus::kNoStraggler;
  double spread = 0;
  for (const RankStepStats& r : steps.ranks) {
    if (r.excess) spread = std::max(spread, std::abs(*r.excess));
  }
  v.summary = fmt::format(
      "verdict: no straggler found — {} ranks within {:.1f}% of each other over {} steps{}",
      steps.job.ranks, 100 * spread, steps.job.steps,
      steps.job.basis == StepBasis::kComputeTime ? " (compute time)" : "");
  // Rare slow steps on random ranks: benign jitter, named so nobody chases it.
  if (const Finding* jitter = FirstOf(steps, FindingCode::kJitter)) {
    v.summary += "; benign jitter: " + jitter->message;
  }
  v.summary += MinorStepText(steps);
  return v;
}

}  // namespace

Verdict CommBoundVerdict(const Finding& comm) {
  Verdict v = JobCulpritVerdict(
      comm, CauseClass::kCommunication, "traces",
      "verdict: communication-bound — " + comm.message + "; no single rank is to blame for it");
  v.status = VerdictStatus::kCommBound;
  return v;
}

Verdict BaseVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces) {
  if (traces.culprit && FirstOf(traces.findings, FindingCode::kTraceLateArrival)) {
    return TraceVerdict(run, steps, traces);
  }
  if (const Finding* g = FirstOf(traces.findings, FindingCode::kTraceLateGroup);
      g && g->severity != Severity::kInfo) {
    return GroupVerdict(run, steps, traces, *g);
  }
  if (auto v = StepStragglerVerdict(steps)) return std::move(*v);
  if (auto v = JobCauseVerdict(steps, traces)) return std::move(*v);
  if (auto v = TracesClearVerdict(steps, traces)) return std::move(*v);
  if (auto v = StepsOnlyVerdict(steps)) return std::move(*v);
  return NoCulpritVerdict(run, steps, traces);
}

}  // namespace laggard::verdict_internal
