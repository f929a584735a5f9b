// The profiled steps' compute-slow culprits against the run (DropUnbornOut,
// DropWindowCoreSlowdown): a rank the traces' few steps name is kept where
// its CPU time per step backs it, over the run or in those steps beyond its
// core's speed, and dropped where the host's cores made the window's
// difference. Internal to src/verdict/.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {
namespace {

// A compute-slow culprit on a core slower in the profiled steps whose CPU
// time and ops there are each >= 1 + kSlowerCoreWindowWork times that
// core's slowness: more than that core makes (the probe overstates what a
// slower core does to the job's work: not the margin of the ops' excess on
// top). DropUnbornOut keeps it; DropWindowCoreSlowdown leaves it.
bool BeyondItsCore(const Culprit& c, const WindowRatios& window) {
  const double beyond = (1 + kSlowerCoreWindowWork) * window.probe;
  return c.cause_class == CauseClass::kComputeSlow && c.slowdown &&
         window.probe >= 1 + HostCpuDetectorOptions().min_probe_excess / 2 &&
         window.cpu >= beyond && 1 + *c.slowdown >= beyond;
}

}  // namespace

bool DropUnbornOut(Verdict& v, const Analyses& a) {
  std::vector<std::string> dropped;
  if (v.status != VerdictStatus::kStraggler) return false;
  std::vector<Culprit> left;
  std::vector<Culprit> window_only;  // kept by the profiled steps alone
  const std::optional<double> noise = a.host_cpu.window_noise;
  for (Culprit& c : v.culprits) {
    if (c.cause_class != CauseClass::kComputeSlow || c.cause || !c.entity.rank ||
        c.ranks.size() > 1 || !c.slowdown || !CpuOnlyTrace(a, *c.entity.rank)) {
      left.push_back(std::move(c));
      continue;
    }
    std::optional<double> ratio = CpuTimeRatio(a, *c.entity.rank);
    const double margin = std::max(kCpuTimeAgreement, *c.slowdown / 4);
    if (!ratio || *ratio - 1 >= margin) {
      left.push_back(std::move(c));
      continue;
    }
    // Its core no slower than its peers' while the profiler ran, and its
    // CPU time per step then above theirs by the same margin (times its
    // core's slowness, when above 1): the ops' excess is its own work, not
    // the cores' (a fault from mid-run on a rank with the faster core
    // averages out over the run). Kept, said, and no more than medium: the
    // run's CPU time does not back it.
    std::optional<WindowRatios> window = WindowRatiosOf(a, *c.entity.rank);
    const double core = window ? std::max(1.0, window->probe) : 1;
    const bool same_core =
        window && window->probe < 1 + HostCpuDetectorOptions().min_probe_excess / 2;
    const bool beyond_core = window && BeyondItsCore(c, *window);  // a slower core: not same_core
    if ((same_core && window->cpu >= core * (1 + margin)) || beyond_core) {
      // With peers to compare, that excess stands out from what stretches
      // as long of the unprofiled steps show by chance.
      if (noise && window->cpu / core - 1 < kWindowNoiseZ * *noise) {
        dropped.push_back(fmt::format(
            "the profiled steps show rank {}'s CPU ops {:.2f}x as long as its peers' and its "
            "thread's CPU time per step {:.2f}x theirs, within what its peers and it show by "
            "chance over as many of the other steps ({} such stretches of a rank: {:.1f} standard "
            "deviations of ±{:.1f}%; naming it needs {:.0f}); over the run its CPU time per step "
            "is {:.2f}x theirs: not a slow rank",
            *c.entity.rank, 1 + *c.slowdown, window->cpu, a.host_cpu.window_noise_samples,
            (window->cpu / core - 1) / std::max(*noise, 1e-9), 100 * *noise, kWindowNoiseZ,
            *ratio));
        continue;
      }
      c.evidence.push_back(fmt::format(
          "host CPU: in the profiled steps its thread used {:.2f}x its peers' CPU time per step "
          "on a core that ran a fixed piece of work {:.2f}x as long as theirs{}: its own work, "
          "though over the run its CPU time per step is {:.2f}x theirs (a slowdown that began "
          "mid-run, or one of the profiled steps only)",
          window->cpu, window->probe,
          beyond_core
              ? fmt::format(" ({:.2f}x what that core's slowness explains, its ops {:.2f}x)",
                            window->cpu / core, (1 + *c.slowdown) / core)
              : "",
          *ratio));
      c.confidence = std::min(c.confidence, kTwoRankCap);
      window_only.push_back(std::move(c));
      continue;
    }
    dropped.push_back(fmt::format(
        "the profiled steps show rank {}'s CPU ops {:.2f}x as long as its peers', but over the "
        "run its thread's CPU time per step is {:.2f}x theirs: a passing difference of the "
        "host's cores in the profiled window, not a slow rank",
        *c.entity.rank, 1 + *c.slowdown, *ratio));
  }
  // Beside a culprit the run backs, one the profiled steps alone name is
  // not named: the first one slows every rank's steps there.
  const bool kept = !window_only.empty() && left.empty();
  for (Culprit& c : window_only) {
    if (kept) {
      left.push_back(std::move(c));
      continue;
    }
    dropped.push_back(fmt::format(
        "the profiled steps alone name rank {} (its CPU ops {:.2f}x as long as its peers'), but "
        "over the run its thread's CPU time per step is {:.2f}x theirs: beside {}, not named",
        *c.entity.rank, 1 + c.slowdown.value_or(0), CpuTimeRatio(a, *c.entity.rank).value_or(1),
        EntityName(left.front().entity)));
  }
  v.culprits = std::move(left);
  return SayDropped(v, dropped,
                    "nothing to fix; to be sure, profile another window of steps (the traces "
                    "covered a few steps only)") ||
         kept;
}

namespace {

// What DropWindowCoreSlowdown drops a compute-slow culprit on: its CPU
// time per step against its peers', outside the profiled steps or over
// the run.
struct WindowWork {
  double ratio = 1;
  bool outside = false;
};

// Compute-slow claims more work: only a CPU-only job's, not a rank whose
// more work per step the host detector measured against peers on cores as
// fast (step.cpu_time_high), and only when its CPU time per step over the
// run is its peers' (DropUnbornOut's test), or with the window explaining
// most (`most`), no more above theirs than its core's slowness over the
// run (`run`) and that margin allow (a slower core runs the same work in
// more CPU time). Where its CPU time in the window is its core's (work per
// probe there under 1 + kWindowWorkPerProbe its peers'), its CPU time and
// its core outside the profiled steps instead (over the run with too few
// outside): the window's excess, which its core explains, is not counted
// twice (bench/realjobs d20: a healthy 2-rank run, its core 1.4x slow in
// the window, 0.97x its work there; CPU time per step 1.06x its peer's over
// the run, 0.97x outside). Not where its core was slower outside the
// window too, by the host detector's floor: over the run then (d19, a
// healthy rank on the slower core a third of the run, probe median 1.07x,
// mean 1.32x, CPU time 1.24x: kept for SlowerCoreOnAverage; d27, a healthy
// rank's core 1.26x in the window, 1.12x outside, CPU time 1.07x over the
// run: dropped). nullopt: kept.
std::optional<WindowWork> WindowWorkIsTheCores(const Culprit& c, const Analyses& a, double run,
                                               bool most) {
  const int32_t rank = *c.entity.rank;
  const bool measured =
      std::any_of(a.host_cpu.findings.begin(), a.host_cpu.findings.end(), [&](const Finding& f) {
        return f.code == FindingCode::kStepCpuTimeHigh && f.entity.rank == rank;
      });
  if (measured || !CpuOnlyTrace(a, rank)) return std::nullopt;
  WindowWork out;
  double core = run;
  std::optional<WindowRatios> window = WindowRatiosOf(a, rank);
  std::optional<double> work;
  if (window && window->WorkPerProbe() < 1 + kWindowWorkPerProbe) {
    work = RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::outside_cpu_ns);
    std::optional<double> outside =
        RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::outside_probe_ns);
    if (work && outside && *outside < 1 + HostCpuDetectorOptions().min_probe_excess) {
      core = *outside;
      out.outside = true;
    } else {
      work.reset();
    }
  }
  if (!work) work = CpuTimeRatio(a, rank);
  const double margin = std::max(kCpuTimeAgreement, c.slowdown.value_or(0) / 4);
  if (!work || *work >= (most ? std::max(1.0, core) : 1.0) * (1 + margin)) return std::nullopt;
  out.ratio = *work;
  return out;
}

}  // namespace

bool DropWindowCoreSlowdown(Verdict& v, const Analyses& a, std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kStraggler) return false;
  const double excess = HostCpuDetectorOptions().min_probe_excess;
  bool changed = false;
  // Its core slower over the run too, by the host detector's own floor,
  // and in the profiled steps by enough to explain most of its slowdown,
  // in a CPU-only job (a probe times the CPU, not a GPU); a compute-slow
  // one only when its CPU time per step over the run is no more above its
  // peers' than its core's slowness and the margin allow: the host made
  // this straggler, not more work.
  for (Culprit& c : v.culprits) {
    if (c.cause || !c.entity.rank || c.ranks.size() > 1 || !c.slowdown ||
        (c.cause_class != CauseClass::kUnknown && c.cause_class != CauseClass::kComputeSlow) ||
        !FromTraces(a, *c.entity.rank) || !CpuOnlyTrace(a, *c.entity.rank))
      continue;
    std::optional<double> window =
        RatioToPeers(a.host_cpu.ranks, *c.entity.rank, &RankCpuStats::window_probe_ns);
    std::optional<double> run =
        RatioToPeers(a.host_cpu.ranks, *c.entity.rank, &RankCpuStats::probe_ns);
    if (!window || !run || *window < 1 + excess || *run < 1 + excess ||
        *window - 1 < kWindowCoreExplains * *c.slowdown)
      continue;
    if (c.cause_class == CauseClass::kComputeSlow) {
      std::optional<WindowRatios> ratios = WindowRatiosOf(a, *c.entity.rank);
      if (ratios && BeyondItsCore(c, *ratios)) continue;
      std::optional<double> work = CpuTimeRatio(a, *c.entity.rank);
      if (!work || *work > *run * (1 + std::max(kCpuTimeAgreement, *c.slowdown / 4))) continue;
    }
    c.cause_class = CauseClass::kHostStall;
    c.cause = "host_contention";
    c.evidence.push_back(fmt::format(
        "host CPU: in the profiled steps rank {}'s CPU ran a fixed piece of work {:.2f}x as long "
        "as its peers' ({:.2f}x over the run), enough for its +{:.0f}%: a slower or shared core, "
        "slowest while the profiler ran",
        *c.entity.rank, *window, *run, 100 * *c.slowdown));
    PutStepsFirst(next_steps,
                  {fmt::format("rank {}'s core runs slower than its peers': see what shares it "
                               "(top -H, pidstat -u -t 1), its clock (cpupower frequency-info) and "
                               "steal (vmstat 1, the st column); move the rank to another core "
                               "(taskset) to confirm",
                               *c.entity.rank)});
    changed = true;
  }
  std::vector<std::string> dropped;
  std::erase_if(v.culprits, [&](const Culprit& c) {
    if (c.cause || !c.entity.rank || c.ranks.size() > 1 ||
        (c.cause_class != CauseClass::kUnknown && c.cause_class != CauseClass::kComputeSlow) ||
        !FromTraces(a, *c.entity.rank))
      return false;
    std::optional<double> window =
        RatioToPeers(a.host_cpu.ranks, *c.entity.rank, &RankCpuStats::window_probe_ns);
    std::optional<double> run =
        RatioToPeers(a.host_cpu.ranks, *c.entity.rank, &RankCpuStats::probe_ns);
    // A late arrival's cost is the job's: what its waiting cost the others.
    const double slowdown = c.slowdown.value_or(v.throughput_lost.value_or(0));
    // Its core slower over the run by less than the host detector's floor
    // when the window explains most of its slowdown (the rule above takes
    // it from there), else by less than half that floor.
    if (!window || !run || *window < 1 + excess || *window - 1 < 0.5 * slowdown) return false;
    const bool most = *window - 1 >= kWindowCoreExplains * slowdown;
    if (*run >= 1 + (most ? excess : excess / 2)) return false;
    // A compute-slow one, with its CPU time per step (outside the profiled
    // steps, or over the run).
    std::string work_said;
    if (c.cause_class == CauseClass::kComputeSlow) {
      std::optional<WindowRatios> ratios = WindowRatiosOf(a, *c.entity.rank);
      if (ratios && BeyondItsCore(c, *ratios)) return false;
      std::optional<WindowWork> work = WindowWorkIsTheCores(c, a, *run, most);
      if (!work) return false;
      work_said =
          fmt::format(", and its thread's CPU time per step was {:.2f}x theirs{}", work->ratio,
                      work->outside ? " outside the profiled steps" : " over the run");
    }
    dropped.push_back(fmt::format(
        "in the profiled steps rank {} held the job up (~{:.0f}%), but its CPU ran a fixed piece "
        "of work {:.2f}x as long as its peers' there, against {:.2f}x over the run{}: its core "
        "slowed while the profiler ran, not a slow rank",
        *c.entity.rank, 100 * slowdown, *window, *run, work_said));
    return true;
  });
  return SayDropped(v, dropped,
                    "nothing to fix in the job; to be sure, profile another window of steps (the "
                    "traces covered a few steps only), and watch the host's CPUs (steal, clocks) "
                    "if it recurs") ||
         changed;
}

std::optional<LateOnSlowCore> LateOnSlowCoreCulprit(const Verdict& v, const Analyses& a,
                                                    std::vector<std::string>& next_steps) {
  if (v.status != VerdictStatus::kNoStraggler && v.status != VerdictStatus::kInconclusive)
    return std::nullopt;
  const Finding* late = FirstOf(a.traces.findings, FindingCode::kTraceLateArrival);
  if (late == nullptr || late->severity != Severity::kInfo || !late->entity.rank)
    return std::nullopt;
  const int32_t rank = *late->entity.rank;
  auto st = std::find_if(a.traces.ranks.begin(), a.traces.ranks.end(),
                         [&](const RankTraceStats& r) { return r.rank == rank; });
  DurationNs window_ns = 0;  // the profile's: the longest rank's window
  for (const RankTraceStats& r : a.traces.ranks) window_ns = std::max(window_ns, r.window_ns);
  if (st == a.traces.ranks.end() || !st->cpu_only || st->share_last < kLateOnSlowCoreShare ||
      window_ns <= 0 || st->delay_caused_ns <= 0 || st->delay_caused_ns >= window_ns)
    return std::nullopt;
  const double lost = static_cast<double>(st->delay_caused_ns) / static_cast<double>(window_ns);
  const double slowdown = lost / (1 - lost);
  auto slow =
      std::find_if(a.host_cpu.findings.begin(), a.host_cpu.findings.end(), [&](const Finding& f) {
        return f.code == FindingCode::kHostCpuSlow && f.entity.rank == rank;
      });
  std::optional<double> window =
      RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::window_probe_ns);
  if (slow == a.host_cpu.findings.end() || !window ||
      *window < 1 + HostCpuDetectorOptions().min_probe_excess ||
      *window - 1 < kWindowCoreExplains * slowdown)
    return std::nullopt;
  LateOnSlowCore out;
  Culprit& c = out.culprit;
  out.lost = lost;
  c.entity = late->entity;
  c.cause_class = CauseClass::kHostStall;
  c.cause = "host_contention";
  c.slowdown = slowdown;
  c.confidence = std::min(slow->confidence, kSingleSourceCap);
  c.evidence.push_back(fmt::format(
      "traces: rank {} arrives last at {:.0f}% of the profiled collectives and holds the others "
      "up {:.1f}% of the profile; the traces alone do not blame it (below the CPU floors)",
      rank, 100 * st->share_last, 100 * lost));
  c.evidence.push_back(slow->evidence.front().text);
  c.evidence.push_back(fmt::format(
      "host CPU: its probe ran {:.2f}x its peers' in the profiled steps too, enough for its "
      "+{:.0f}%: the host's slower core is why it is late",
      *window, 100 * slowdown));
  PutStepsFirst(next_steps, slow->next_steps);
  return out;
}

}  // namespace laggard::verdict_internal
