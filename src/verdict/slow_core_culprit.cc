// The verdict's rules of a slower core in a CPU-only job: a rank on a
// measurably slower core that nothing else names (SlowCoreCulprits), a
// compute-slow rank that only sat on one (SlowerCoreOnAverage), and a
// 2-rank job's rank that does more work for its core's speed
// (ProbeWorkCulprit). Internal to src/verdict/.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "verdict/verdict_internal.h"

namespace laggard::verdict_internal {

bool SlowerCoreOnAverage(Culprit& c, const Analyses& a, std::vector<std::string>& next_steps) {
  if (c.cause_class != CauseClass::kComputeSlow || c.cause || !c.entity.rank ||
      c.ranks.size() > 1 || !CpuOnlyTrace(a, *c.entity.rank))
    return false;
  const int32_t rank = *c.entity.rank;
  const size_t least = HostCpuDetectorOptions().min_cpu_time_steps;
  const RankCpuStats* mine = CpuStatsOf(a, rank);
  if (mine == nullptr || mine->probe_steps < least || mine->work_per_probe_steps < least)
    return false;
  std::optional<double> core = RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::probe_mean_ns);
  std::optional<double> work = RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::work_per_probe);
  if (!core || !work || *core < 1 + kSlowCoreNamed) return false;
  // A core slowed part of the time: each step's probe (tens of us) caught
  // it slow or not, while the step's CPU time spans both, so per-step work
  // per probe reads a step whose probe ran fast as more work. Then the
  // run's mean CPU time over its mean probe measures the work.
  std::optional<double> median_core = RatioToPeers(a.host_cpu.ranks, rank, &RankCpuStats::probe_ns);
  std::optional<double> mean_cpu = CpuTimeRatio(a, rank);
  const bool part_time =
      median_core && *median_core > 0 && *core >= *median_core * (1 + kPartTimeCore) && mean_cpu;
  const double work_read = part_time ? *mean_cpu / *core : *work;
  if (work_read >= 1 + (part_time ? kWindowWorkPerProbe : kCpuTimeAgreement)) return false;
  // In the profiled steps, where the culprit was read, too: its CPU time
  // over its probe there within kWindowWorkPerProbe of its peers' (a fault
  // that began late in the run shows there, not in the run's median).
  std::optional<WindowRatios> window = WindowRatiosOf(a, rank);
  // A part-time slow core's few window probes may all have missed it: its
  // window reads within kSlowCoreNamed.
  if (!window || window->WorkPerProbe() >= 1 + (part_time ? kSlowCoreNamed : kWindowWorkPerProbe))
    return false;
  c.cause_class = CauseClass::kHostStall;
  c.cause = "host_contention";
  // EnrichHostCpu's "explains part of it" (by the median probe) gives way.
  std::erase_if(c.evidence,
                [](const std::string& e) { return e.starts_with(kSlowerCpuExplainsPart); });
  if (part_time) {
    c.evidence.push_back(fmt::format(
        "host CPU: its core ran the probe's fixed work {:.2f}x as long as its peers' on average "
        "over the run, {:.2f}x by the median (slowed part of the time), and its CPU time per step "
        "is {:.2f}x theirs, {:.2f}x for its core's mean speed ({:.2f}x in the profiled steps{}): "
        "the same work on a slower core, not more work",
        *core, *median_core, *mean_cpu, work_read, window->WorkPerProbe(),
        window->WorkPerProbe() >= 1 + kWindowWorkPerProbe
            ? ", whose few probes may have missed the slow stretches"
            : ""));
  } else {
    c.evidence.push_back(fmt::format(
        "host CPU: its core ran the probe's fixed work {:.2f}x as long as its peers' on average "
        "over the run, and its CPU time per step for its core's speed is {:.2f}x theirs ({:.2f}x "
        "in the profiled steps): the same work on a slower core, not more work",
        *core, work_read, window->WorkPerProbe()));
  }
  for (const Finding& t : a.traces.findings) {
    if (t.code == FindingCode::kTraceComputeSlow && t.entity.rank == rank)
      RemoveSteps(next_steps, t.next_steps);
  }
  PutStepsFirst(
      next_steps,
      {DefaultNextStep(FindingCode::kHostCpuSlow, fmt::arg("who", fmt::format("rank {}", rank)),
                       fmt::arg("host", c.entity.host.value_or("its host")))});
  return true;
}

namespace {

// The 2-rank ranks' work per unit of core speed compared (ProbeWorkCulprit).
struct TwoRankWork {
  const RankCpuStats* more = nullptr;  // the higher CPU time over probe time
  const RankCpuStats* peer = nullptr;
  double ratio = 1;  // more's work per probe over peer's
  double core = 1;   // more's probe time over peer's
};

std::optional<TwoRankWork> CompareTwoRankWork(const Analyses& a) {
  if (WorldSize(a.steps, a.traces) != 2 || a.host_cpu.ranks.size() != 2) return std::nullopt;
  const RankCpuStats& x = a.host_cpu.ranks[0];
  const RankCpuStats& y = a.host_cpu.ranks[1];
  const size_t least = HostCpuDetectorOptions().min_cpu_time_steps;
  auto usable = [&](const RankCpuStats& r) {
    return r.work_per_probe && *r.work_per_probe > 0 && r.work_per_probe_steps >= least &&
           r.probe_ns && *r.probe_ns > 0 && CpuOnlyTrace(a, r.rank);
  };
  if (!usable(x) || !usable(y)) return std::nullopt;
  const bool first = *x.work_per_probe >= *y.work_per_probe;
  TwoRankWork w{first ? &x : &y, first ? &y : &x};
  w.ratio = *w.more->work_per_probe / *w.peer->work_per_probe;
  w.core = static_cast<double>(*w.more->probe_ns) / static_cast<double>(*w.peer->probe_ns);
  return w;
}

}  // namespace

std::optional<ProbeWork> ProbeWorkCulprit(const Analyses& a, std::vector<std::string>& next_steps) {
  std::optional<TwoRankWork> w = CompareTwoRankWork(a);
  if (!w || w->ratio < 1 + kTwoRankProbeWork) return std::nullopt;
  const RankCpuStats& more = *w->more;
  const RankCpuStats& peer = *w->peer;
  const double ratio = w->ratio;
  const double core = w->core;
  Culprit c;
  c.entity.rank = more.rank;
  c.cause_class = CauseClass::kComputeSlow;
  c.slowdown = ratio - 1;
  c.confidence = kTwoRankProbeWorkConfidence;
  c.evidence.push_back(fmt::format(
      "host CPU: rank {}'s thread used {:.2f}x rank {}'s CPU time per step for its core's speed "
      "(CPU time over the probe's fixed work, median of {} steps): it does more work each step",
      more.rank, ratio, peer.rank, more.work_per_probe_steps));
  c.evidence.push_back(fmt::format(
      "its core ran the probe {:.2f}x as long as its peer's over the run{}", core,
      core < 1 ? ": the faster core hides part of the extra work from step and op times" : ""));
  c.evidence.push_back("its traces hold CPU ops only: the thread's CPU time is the rank's compute");
  // What the job waits for it now: its own extra CPU time per step. Where
  // its faster core hides it all the job does not wait for it: a peer on
  // the slower core may be the straggler (SlowCoreCulprits).
  const double used = CpuTimeRatio(a, more.rank).value_or(1);
  if (used < 1 + kCpuTimeAgreement) return std::nullopt;
  const double lost = (used - 1) / used;
  AddSteps(next_steps,
           {fmt::format("compare what rank {} computes with rank {}'s: batch and sequence sizes, "
                        "padding, the data shard, extra work on that rank; run it on the other "
                        "rank's core to confirm",
                        more.rank, peer.rank)});
  return ProbeWork{std::move(c), lost};
}

std::optional<std::string> FasterCoreHidesWork(const Analyses& a) {
  std::optional<TwoRankWork> w = CompareTwoRankWork(a);
  if (!w || w->ratio < 1 + kTwoRankProbeWork || w->core >= 1) return std::nullopt;
  const double used = CpuTimeRatio(a, w->more->rank).value_or(1);
  if (used >= 1 + kCpuTimeAgreement) return std::nullopt;  // ProbeWorkCulprit names it
  return fmt::format(
      "rank {}'s thread used {:.2f}x its peer's CPU time per step for its core's speed (CPU time "
      "over the probe's fixed work, median of {} steps) on a core that ran the probe in {:.2f}x "
      "its peer's time, {:.2f}x the CPU time per step: either it does more work and the faster "
      "core hides it, or the probe overstates the cores' difference {}",
      w->more->rank, w->ratio, w->more->work_per_probe_steps, w->core, used, kTwoRanksCannotTell);
}

std::optional<SlowCore> SlowCoreCulprits(const Analyses& a, const std::vector<int32_t>& not_these,
                                         std::vector<std::string>& next_steps) {
  struct Named {
    Culprit culprit;
    double probe = 0;  // its core's slowness, which orders them
    const Finding* finding = nullptr;
  };
  std::vector<Named> named;
  for (const Finding& f : a.host_cpu.findings) {
    if (f.code != FindingCode::kHostCpuSlow || !f.entity.rank ||
        f.slowdown.value_or(0) < kSlowCoreNamed)
      continue;
    const int32_t rank = *f.entity.rank;
    if (std::find(not_these.begin(), not_these.end(), rank) != not_these.end() ||
        !CpuOnlyTrace(a, rank))
      continue;
    std::optional<double> work = CpuTimeRatio(a, rank);
    if (!work || *work - 1 < kCpuTimeAgreement) continue;
    Named n{Culprit{}, *f.slowdown, &f};
    Culprit& c = n.culprit;
    c.entity = f.entity;
    c.cause_class = CauseClass::kHostStall;
    c.cause = "host_contention";
    c.slowdown = *work - 1;
    c.confidence = std::min(f.confidence, kSingleSourceCap);
    c.evidence.push_back(f.evidence.front().text);
    c.evidence.push_back(fmt::format(
        "host CPU: over the run its thread used {:.2f}x its peers' CPU time per step: the same "
        "work, run longer on a slower core; ranks in step with each other wait for it at every "
        "collective, so their step times read alike",
        *work));
    named.push_back(std::move(n));
  }
  // Another rank's extra CPU time, too few steps to tell, is said instead
  // (SayCpuWorkUndecided): more steps tell whether it is the fault.
  std::vector<int32_t> skip = not_these;
  for (const Named& n : named) skip.push_back(*n.culprit.entity.rank);
  if (named.empty() || CpuWorkUndecided(a, skip)) return std::nullopt;
  std::stable_sort(named.begin(), named.end(),
                   [](const Named& x, const Named& y) { return x.probe > y.probe; });
  SlowCore out;
  for (Named& n : named) {
    const double more = *n.culprit.slowdown;
    out.lost = std::max(out.lost, more / (1 + more));
    out.culprits.push_back(std::move(n.culprit));
  }
  for (size_t i = 1; i < named.size(); ++i) AddSteps(next_steps, named[i].finding->next_steps);
  PutStepsFirst(next_steps, named.front().finding->next_steps);
  return out;
}

}  // namespace laggard::verdict_internal
