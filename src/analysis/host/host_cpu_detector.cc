#include "analysis/host/host_cpu_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

double Seconds(DurationNs ns) { return static_cast<double>(ns) / 1e9; }

std::optional<RankCpuStats> Measure(const StepSeries& s, size_t min_steps) {
  std::vector<double> wait, step, on_cpu, probe, per_probe;
  for (const StepCpu& c : s.cpu) {
    const StepRecord* d = s.FindStep(c.step);
    if (d == nullptr) continue;
    if (c.probe_ns) probe.push_back(static_cast<double>(*c.probe_ns));
    if (c.on_cpu_ns) on_cpu.push_back(static_cast<double>(*c.on_cpu_ns));
    if (c.probe_ns && *c.probe_ns > 0 && c.on_cpu_ns && *c.on_cpu_ns > 0)
      per_probe.push_back(static_cast<double>(*c.on_cpu_ns) / static_cast<double>(*c.probe_ns));
    if (!c.runq_wait_ns) continue;
    wait.push_back(static_cast<double>(*c.runq_wait_ns));
    step.push_back(static_cast<double>(d->duration_ns));
  }
  if (wait.size() < min_steps && probe.size() < min_steps && on_cpu.size() < min_steps)
    return std::nullopt;
  RankCpuStats r;
  r.rank = s.info.rank;
  if (wait.size() >= min_steps) {
    r.steps = wait.size();
    r.wait_ns = static_cast<DurationNs>(Median(wait).value_or(0));
    r.step_ns = static_cast<DurationNs>(Median(step).value_or(0));
  }
  if (on_cpu.size() >= min_steps) {
    r.on_cpu_steps = on_cpu.size();
    r.on_cpu_ns = static_cast<DurationNs>(Median(on_cpu).value_or(0));
    double total = 0;
    for (double x : on_cpu) total += x;
    r.on_cpu_mean_ns = total / static_cast<double>(on_cpu.size());
  }
  if (probe.size() >= min_steps) {
    r.probe_steps = probe.size();
    r.probe_ns = static_cast<DurationNs>(Median(probe).value_or(0));
    // Each probe capped at kProbeMeanCap times the median: one preempted
    // probe is that step's, not the core's.
    const double cap = kProbeMeanCap * static_cast<double>(*r.probe_ns);
    double total = 0;
    for (double x : probe) total += std::min(x, cap);
    r.probe_mean_ns = total / static_cast<double>(probe.size());
  }
  if (per_probe.size() >= min_steps) {
    r.work_per_probe_steps = per_probe.size();
    r.work_per_probe = Median(std::move(per_probe));
  }
  if (r.wait_ns && r.on_cpu_ns && *r.on_cpu_ns > 0)
    r.wait_per_cpu = static_cast<double>(*r.wait_ns) / static_cast<double>(*r.on_cpu_ns);
  return r;
}

Finding RankFinding(const Run& run, FindingCode code, int32_t rank) {
  Finding f = MakeFinding(code);
  f.entity.rank = rank;
  if (const StepSeries* series = run.FindRank(rank)) {
    f.entity.host = series->info.host;
    f.entity.gpu = series->info.local_gpu;
  }
  f.cause = "host_contention";
  return f;
}

void AddNextStep(Finding& f) {
  f.next_steps.push_back(
      DefaultNextStep(f.code, fmt::arg("who", fmt::format("rank {}", *f.entity.rank)),
                      fmt::arg("host", f.entity.host.value_or(std::string("its host")))));
}

// host.cpu_contention of out.ranks[i], when its wait stands out.
std::optional<Finding> Contention(const Run& run, const std::vector<RankCpuStats>& all, size_t i,
                                  const HostCpuDetectorOptions& o) {
  const RankCpuStats& r = all[i];
  if (!r.wait_ns) return std::nullopt;
  double base = PeersMedian(all, i, &RankCpuStats::wait_ns).value_or(0);
  double excess = static_cast<double>(*r.wait_ns) - base;
  double step = static_cast<double>(r.step_ns);
  if (step <= 0 || excess < static_cast<double>(o.min_wait_ns) || excess < o.min_wait_share * step)
    return std::nullopt;
  // Where every rank shares cores (more ranks than cores) all wait, and
  // one that waits a little more by the scheduler's luck is not singled
  // out: the excess must also be a clear part of the others' wait, or its
  // wait per second on a CPU that of a core shared with more runnable work
  // than its peers' (their cores may run at other speeds: the wait scales
  // with the CPU time of what shares the core).
  const std::optional<double>& per_cpu = r.wait_per_cpu;
  std::optional<double> peer_per_cpu = PeersMedian(all, i, &RankCpuStats::wait_per_cpu);
  // Only for a thread runnable most of its step (on a CPU or waiting for
  // one): one blocked for long (a GPU sync, I/O) has little CPU time to
  // divide by.
  const bool runnable =
      r.on_cpu_ns && static_cast<double>(*r.on_cpu_ns + *r.wait_ns) >= o.min_runnable_share * step;
  const bool shares_more = runnable && per_cpu && peer_per_cpu && *per_cpu >= o.min_wait_per_cpu &&
                           *per_cpu >= o.min_wait_per_cpu_over_peers * *peer_per_cpu;
  if (excess < o.min_excess_over_peers * base && !shares_more) return std::nullopt;
  double share = excess / step;
  Finding f = RankFinding(run, FindingCode::kHostCpuContention, r.rank);
  f.slowdown = share < 1 ? share / (1 - share) : std::optional<double>();
  // 0.5 at the threshold, rising with the share (0.3 of the step: the
  // cap) and held down over few steps.
  double by_share = o.threshold_confidence +
                    (o.max_confidence - o.threshold_confidence) * std::min(1.0, share / 0.3);
  double by_steps = std::min(1.0, static_cast<double>(r.steps) / 20.0);
  f.confidence = std::min(o.max_confidence,
                          o.few_steps_confidence + (by_share - o.few_steps_confidence) * by_steps);
  bool peers = all.size() > 1;
  std::string who = fmt::format("rank {}", r.rank);
  f.message = fmt::format(
      "{} waits {:.3f} s per step for a CPU (runnable, not running; median of {} steps), {:.0f}% "
      "of its {:.3f} s step{}",
      who, Seconds(*r.wait_ns), r.steps, 100 * share, Seconds(r.step_ns),
      peers ? fmt::format("; its peers wait {:.3f} s", base / 1e9) : std::string());
  f.evidence.push_back(Evidence{
      fmt::format("host CPU: {}'s training thread was runnable but not running {:.3f} s per "
                  "step (the scheduler's run-queue wait, /proc schedstat){}",
                  who, Seconds(*r.wait_ns),
                  peers ? fmt::format(", {:.3f} s more than the other ranks' median", excess / 1e9)
                        : std::string()),
      std::nullopt});
  if (shares_more) {
    f.evidence.push_back(Evidence{
        fmt::format("host CPU: it waits {:.2f} s for a CPU per second it runs, its peers {:.2f} "
                    "s: its core is shared with more runnable work than theirs",
                    *per_cpu, *peer_per_cpu),
        std::nullopt});
  }
  if (r.on_cpu_ns) {
    auto peer_cpu = PeersMedian(all, i, &RankCpuStats::on_cpu_ns);
    double on_cpu = static_cast<double>(*r.on_cpu_ns);
    f.evidence.push_back(Evidence{
        peer_cpu ? fmt::format("host CPU: its time on a CPU, {:.3f} s per step, is {:.2f}x its "
                               "peers' ({:.3f} s): {}",
                               on_cpu / 1e9, on_cpu / *peer_cpu, *peer_cpu / 1e9,
                               on_cpu <= 1.1 * *peer_cpu ? "the same work, done later"
                                                         : "it also does more work")
                 : fmt::format("host CPU: its time on a CPU is {:.3f} s per step", on_cpu / 1e9),
        std::nullopt});
  }
  AddNextStep(f);
  return f;
}

// host.cpu_slow of out.ranks[i], when its probe runs slower than its peers'.
std::optional<Finding> SlowCpu(const Run& run, const std::vector<RankCpuStats>& all, size_t i,
                               const HostCpuDetectorOptions& o) {
  const RankCpuStats& r = all[i];
  if (!r.probe_ns || *r.probe_ns <= 0) return std::nullopt;
  auto base = PeersMedian(all, i, &RankCpuStats::probe_ns);
  if (!base || *base <= 0) return std::nullopt;  // a probe means something only against peers'
  double ratio = static_cast<double>(*r.probe_ns) / *base;
  if (ratio < 1 + o.min_probe_excess) return std::nullopt;
  Finding f = RankFinding(run, FindingCode::kHostCpuSlow, r.rank);
  f.slowdown = ratio - 1;
  // 0.5 at the threshold, the cap at 3x the threshold, held down over few steps.
  double by_ratio =
      o.threshold_confidence + (o.max_probe_confidence - o.threshold_confidence) *
                                   std::min(1.0, (ratio - 1) / (3 * o.min_probe_excess));
  double by_steps = std::min(1.0, static_cast<double>(r.probe_steps) / 20.0);
  f.confidence = o.few_steps_confidence + (by_ratio - o.few_steps_confidence) * by_steps;
  f.message = fmt::format(
      "rank {}'s CPU runs a fixed piece of work {:.2f}x as long as its peers' ({:.3f} ms against "
      "{:.3f} ms, median of {} steps): a slower or shared core",
      r.rank, ratio, static_cast<double>(*r.probe_ns) / 1e6, *base / 1e6, r.probe_steps);
  f.evidence.push_back(Evidence{
      fmt::format("host CPU: the step reporter's probe (fixed work on the training thread, each "
                  "step) takes {:.2f}x as long on rank {} as on its peers: its core is slower, or "
                  "shared with work the guest cannot see (hypervisor steal)",
                  ratio, r.rank),
      std::nullopt});
  AddNextStep(f);
  return f;
}

// The median of `sorted` without its element at `skip` (size >= 2).
double MedianWithout(const std::vector<double>& sorted, size_t skip) {
  const size_t n = sorted.size() - 1;
  auto at = [&](size_t i) { return sorted[i < skip ? i : i + 1]; };
  return n % 2 == 1 ? at(n / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}

// The index of `x` in `sorted` (one of its equals: removing any of them
// leaves the same values).
size_t IndexOf(const std::vector<double>& sorted, double x) {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
}

struct CpuPoint {
  int64_t step = 0;
  size_t rank = 0;  // index into the ranks measured
  double cpu = 0;
  double probe = 0;  // 0: none logged that step
};

// RankCpuStats::work_* of every rank: its CPU time over the median of the
// peers whose CPU ran the probe as fast as its own, step by step (over all
// its peers' median in steps with no probe logged).
void MeasureWork(const Run& run, std::vector<RankCpuStats>& ranks,
                 const HostCpuDetectorOptions& o) {
  std::vector<CpuPoint> points;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const StepSeries* s = run.FindRank(ranks[i].rank);
    if (s == nullptr) continue;
    for (const StepCpu& c : s->cpu) {
      if (!c.on_cpu_ns || *c.on_cpu_ns <= 0) continue;
      points.push_back(CpuPoint{c.step, i, static_cast<double>(*c.on_cpu_ns),
                                c.probe_ns ? static_cast<double>(*c.probe_ns) : 0.0});
    }
  }
  std::sort(points.begin(), points.end(), [](const CpuPoint& a, const CpuPoint& b) {
    return a.step != b.step ? a.step < b.step : a.rank < b.rank;
  });
  std::vector<std::vector<double>> ratios(ranks.size());
  std::vector<size_t> probed(ranks.size(), 0);
  const double gap = 1 + o.max_step_probe_gap;
  std::vector<double> cpus, window;
  std::vector<const CpuPoint*> by_probe;
  for (size_t b = 0, e = 0; b < points.size(); b = e) {
    while (e < points.size() && points[e].step == points[b].step) ++e;
    if (e - b < 2) continue;
    cpus.clear();
    by_probe.clear();
    for (size_t k = b; k < e; ++k) {
      cpus.push_back(points[k].cpu);
      if (points[k].probe > 0) by_probe.push_back(&points[k]);
    }
    std::sort(cpus.begin(), cpus.end());
    // No probe logged: against all its peers' median.
    for (size_t k = b; k < e; ++k) {
      if (points[k].probe > 0) continue;
      ratios[points[k].rank].push_back(points[k].cpu /
                                       MedianWithout(cpus, IndexOf(cpus, points[k].cpu)));
    }
    // A probe: against the peers whose CPU ran it as fast that step (within
    // a factor `gap` either way), on a host whose cores differ those on a
    // core like its own. In probe order they are a sliding window
    // [lo, hi); neighbours mostly share one, whose sorted CPU times are
    // kept (linear in the ranks when the cores fall into a few speeds).
    std::sort(by_probe.begin(), by_probe.end(),
              [](const CpuPoint* x, const CpuPoint* y) { return x->probe < y->probe; });
    size_t lo = 0, hi = 0, kept_lo = 0, kept_hi = 0;
    for (const CpuPoint* p : by_probe) {
      while (by_probe[lo]->probe * gap < p->probe) ++lo;
      while (hi < by_probe.size() && by_probe[hi]->probe <= p->probe * gap) ++hi;
      if (hi - lo < 2) continue;  // no peer's CPU as fast to compare with
      if (lo != kept_lo || hi != kept_hi || window.empty()) {
        window.clear();
        for (size_t q = lo; q < hi; ++q) window.push_back(by_probe[q]->cpu);
        std::sort(window.begin(), window.end());
        kept_lo = lo;
        kept_hi = hi;
      }
      ratios[p->rank].push_back(p->cpu / MedianWithout(window, IndexOf(window, p->cpu)));
      ++probed[p->rank];
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    const size_t n = ratios[i].size();
    if (n < o.min_cpu_time_steps) continue;
    const double m = *Median(ratios[i]);
    const double sigma = std::max(kMadToSigma * *Mad(ratios[i]), kMinWorkSigma);
    ranks[i].work_ratio = m;
    ranks[i].work_steps = n;
    ranks[i].work_z = (m - 1) / (sigma / std::sqrt(static_cast<double>(n)));
    ranks[i].work_sigma = sigma;
    ranks[i].work_probed = probed[i] == n;
  }
}

// step.cpu_time_high of out.ranks[i]: more CPU time per step than the
// peers whose CPU ran the probe as fast, step by step (MeasureWork).
std::optional<Finding> CpuTimeHigh(const Run& run, const RankCpuStats& r,
                                   const HostCpuDetectorOptions& o) {
  if (!r.work_ratio || *r.work_ratio < 1 + o.min_cpu_time_excess || r.work_z < o.min_cpu_time_z)
    return std::nullopt;
  const double ratio = *r.work_ratio;
  const double error = (ratio - 1) / r.work_z;
  Finding f = RankFinding(run, FindingCode::kStepCpuTimeHigh, r.rank);
  f.cause = "more_work";
  f.slowdown = ratio - 1;
  // 0.5 at min_cpu_time_z, 0.8 at four times it; held down over few steps.
  double by_z = o.threshold_confidence +
                o.cpu_time_confidence_rise *
                    std::min(1.0, (r.work_z - o.min_cpu_time_z) / (3 * o.min_cpu_time_z));
  double by_steps = std::min(1.0, static_cast<double>(r.work_steps) / 20.0);
  f.confidence = o.few_steps_confidence + (by_z - o.few_steps_confidence) * by_steps;
  f.message = fmt::format(
      "rank {}'s training thread uses {:.2f}x its peers' CPU time per step (±{:.2f}, median of "
      "{} steps{})",
      r.rank, ratio, error, r.work_steps,
      r.work_probed ? fmt::format(", each against the peers whose CPU ran a fixed piece of work "
                                  "within {:.0f}% of its own (probe)",
                                  100 * o.max_step_probe_gap)
                    : "; no probe logged, so a slower CPU is not ruled out");
  f.evidence.push_back(
      Evidence{"host CPU: " + f.message + ": it does more work each step", std::nullopt});
  AddNextStep(f);
  return f;
}

}  // namespace

HostCpuAnalysis AnalyzeHostCpu(const Run& run, const HostCpuDetectorOptions& o) {
  HostCpuAnalysis out;
  for (const StepSeries& s : run.ranks) {
    if (auto r = Measure(s, o.min_steps)) out.ranks.push_back(*r);
  }
  MeasureWork(run, out.ranks, o);
  for (size_t i = 0; i < out.ranks.size(); ++i) {
    if (auto f = Contention(run, out.ranks, i, o)) out.findings.push_back(std::move(*f));
    if (auto f = SlowCpu(run, out.ranks, i, o)) out.findings.push_back(std::move(*f));
    if (auto f = CpuTimeHigh(run, out.ranks[i], o)) out.findings.push_back(std::move(*f));
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     return a.slowdown.value_or(1e9) > b.slowdown.value_or(1e9);
                   });
  return out;
}

std::optional<size_t> StepsToTell(const RankCpuStats& r, const HostCpuDetectorOptions& o) {
  if (!r.work_ratio || *r.work_ratio < 1 + o.min_cpu_time_excess || r.work_z <= 0 ||
      r.work_steps == 0)
    return std::nullopt;
  // The error falls as 1/sqrt(steps): z grows as sqrt(steps).
  const double kept = static_cast<double>(r.work_steps) /
                      static_cast<double>(std::max(r.on_cpu_steps, r.work_steps));
  const double need =
      static_cast<double>(r.work_steps) * std::pow(o.min_cpu_time_z / r.work_z, 2) / kept;
  return static_cast<size_t>(std::ceil(need));
}

std::optional<WorkSensitivity> StepsToTellExcess(const std::vector<RankCpuStats>& ranks,
                                                 double excess, const HostCpuDetectorOptions& o) {
  if (excess <= 0) return std::nullopt;
  std::vector<double> sigmas, kept, compared, run;
  for (const RankCpuStats& r : ranks) {
    if (!r.work_ratio || !r.work_probed || r.work_steps < o.min_cpu_time_steps) continue;
    const size_t steps = std::max(r.on_cpu_steps, r.work_steps);
    sigmas.push_back(r.work_sigma);
    kept.push_back(static_cast<double>(r.work_steps) / static_cast<double>(steps));
    compared.push_back(static_cast<double>(r.work_steps));
    run.push_back(static_cast<double>(steps));
  }
  if (sigmas.size() < 2) return std::nullopt;
  WorkSensitivity w;
  w.sigma = *Median(std::move(sigmas));
  w.compared = static_cast<size_t>(*Median(std::move(compared)));
  w.run_steps = static_cast<size_t>(*Median(std::move(run)));
  const double share = *Median(std::move(kept));
  const double z = o.min_cpu_time_z + kTellPowerZ;
  w.steps = static_cast<size_t>(std::ceil(std::pow(z * w.sigma / excess, 2) / share));
  return w;
}

namespace {

// Rank `s`'s median probe time (or, `field` &StepCpu::on_cpu_ns, CPU time
// per step) in steps [first, last] over its median outside them: nullopt
// without min_inside values inside and min_steps outside.
std::optional<double> ProbeRise(const StepSeries& s, int64_t first, int64_t last, size_t min_inside,
                                size_t min_steps,
                                std::optional<DurationNs> StepCpu::*field = &StepCpu::probe_ns) {
  std::vector<double> in, out;
  for (const StepCpu& c : s.cpu) {
    if (!(c.*field)) continue;
    (c.step >= first && c.step <= last ? in : out).push_back(static_cast<double>(*(c.*field)));
  }
  if (in.size() < min_inside || out.size() < min_steps) return std::nullopt;
  std::optional<double> a = Median(std::move(in)), b = Median(std::move(out));
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

}  // namespace

namespace {

// HostCpuAnalysis::window_noise (MeasureWindowProbes): each rank's mean CPU
// time per step over stretches of the window's length outside it, against
// its peers' median there. The stretches move forward, so each rank keeps a
// running sum between two cursors into its CPU steps (sorted by step after
// Finalize): O(ranks) memory; a stretch with no step of any rank jumps to
// the next step there is (a stray step number does not walk the gap); per
// stretch the ranks' means are sorted once and each one's peers' median
// read around its own place.
std::optional<double> WindowNoise(const Run& run, const LogStepRange& window, size_t& samples) {
  samples = 0;
  const int64_t length = window.last - window.first + 1;
  if (length < static_cast<int64_t>(kMinWindowProbes) || run.ranks.size() < 3) return std::nullopt;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const StepSeries& s : run.ranks) {
    if (s.cpu.empty()) continue;
    first = std::min(first, s.cpu.front().step);
    last = std::max(last, s.cpu.back().step);
  }
  if (first > last) return std::nullopt;
  struct Cursor {
    size_t lo = 0, hi = 0;   // s.cpu[lo, hi) are in the stretch
    int64_t sum = 0, n = 0;  // over those with a CPU time
  };
  std::vector<Cursor> cursors(run.ranks.size());
  const int64_t stride = std::max<int64_t>(1, length / 2);
  std::vector<double> ratios, means;
  for (int64_t from = first + kNoiseWarmupSteps; from <= last - length + 1; from += stride) {
    const int64_t to = from + length - 1;
    int64_t next = std::numeric_limits<int64_t>::max();  // the first step after the stretch
    bool any = false;                                    // a step of some rank in it
    means.clear();
    for (size_t i = 0; i < run.ranks.size(); ++i) {
      const std::vector<StepCpu>& cpu = run.ranks[i].cpu;
      Cursor& c = cursors[i];
      for (; c.hi < cpu.size() && cpu[c.hi].step <= to; ++c.hi) {
        if (cpu[c.hi].on_cpu_ns) c.sum += *cpu[c.hi].on_cpu_ns, ++c.n;
      }
      for (; c.lo < c.hi && cpu[c.lo].step < from; ++c.lo) {
        if (cpu[c.lo].on_cpu_ns) c.sum -= *cpu[c.lo].on_cpu_ns, --c.n;
      }
      if (c.hi < cpu.size()) next = std::min(next, cpu[c.hi].step);
      any |= c.hi > c.lo;
      if (2 * c.n >= length && c.sum > 0)
        means.push_back(static_cast<double>(c.sum) / static_cast<double>(c.n));
    }
    const bool clear =
        to < window.first - kNoiseWindowMargin || from > window.last + kNoiseWindowMargin;
    const size_t n = means.size();
    if (clear && n >= 3) {
      std::sort(means.begin(), means.end());
      // The median of the others: the sorted means without place k.
      auto other = [&](size_t j, size_t k) { return means[j < k ? j : j + 1]; };
      const size_t m = n - 1;
      for (size_t k = 0; k < n; ++k) {
        const double median =
            m % 2 == 1 ? other(m / 2, k) : (other(m / 2 - 1, k) + other(m / 2, k)) / 2;
        ratios.push_back(means[k] / median);
      }
    }
    // No step of any rank in the stretch: on to the first stretch of the
    // same grid that holds the next step there is.
    if (!any && next != std::numeric_limits<int64_t>::max()) {
      const int64_t k = (next - length + 1 - from + stride - 1) / stride;  // >= 1: next > to
      from += (k - 1) * stride;
    }
  }
  samples = ratios.size();
  if (samples < kMinNoiseSamples) return std::nullopt;
  return kMadToSigma * Mad(std::move(ratios)).value_or(0);
}

}  // namespace

void MeasureWindowProbes(const Run& run, const std::optional<LogStepRange>& profiled,
                         HostCpuAnalysis& analysis) {
  if (!profiled) return;
  analysis.window_noise = WindowNoise(run, *profiled, analysis.window_noise_samples);
  for (RankCpuStats& r : analysis.ranks) {
    const StepSeries* s = run.FindRank(r.rank);
    if (s == nullptr) continue;
    double probe = 0, cpu = 0, outside = 0, outside_probe = 0;
    size_t probes = 0, cpus = 0, outsides = 0, outside_probes = 0;
    for (const StepCpu& c : s->cpu) {
      if (c.step < profiled->first || c.step > profiled->last) {
        if (c.on_cpu_ns) outside += static_cast<double>(*c.on_cpu_ns), ++outsides;
        if (c.probe_ns) outside_probe += static_cast<double>(*c.probe_ns), ++outside_probes;
        continue;
      }
      if (c.probe_ns) probe += static_cast<double>(*c.probe_ns), ++probes;
      if (c.on_cpu_ns) cpu += static_cast<double>(*c.on_cpu_ns), ++cpus;
    }
    if (outsides >= kMinOutsideSteps)
      r.outside_cpu_ns = static_cast<DurationNs>(outside / static_cast<double>(outsides));
    if (outside_probes >= kMinOutsideSteps)
      r.outside_probe_ns =
          static_cast<DurationNs>(outside_probe / static_cast<double>(outside_probes));
    if (probes >= kMinWindowProbes)
      r.window_probe_ns = static_cast<DurationNs>(probe / static_cast<double>(probes));
    if (cpus >= kMinWindowProbes)
      r.window_cpu_ns = static_cast<DurationNs>(cpu / static_cast<double>(cpus));
  }
}

void ExplainJobSlowdownsByHostCpu(const Run& run, std::vector<Finding>& step_findings,
                                  const HostCpuDetectorOptions& o) {
  constexpr size_t kMinInside = 2;  // probes of a rank inside the slow steps
  for (Finding& f : step_findings) {
    if (f.code != FindingCode::kJobSlowdown || !f.onset_step || !f.end_step || !f.slowdown)
      continue;
    // Each rank's probe rise, and with it its CPU time's (rose: both known).
    std::vector<double> rises;
    std::vector<std::pair<const StepSeries*, std::pair<double, double>>> rose;
    for (const StepSeries& s : run.ranks) {
      auto p = ProbeRise(s, *f.onset_step, *f.end_step, kMinInside, o.min_steps);
      if (!p) continue;
      rises.push_back(*p);
      if (auto c = ProbeRise(s, *f.onset_step, *f.end_step, kMinInside, o.min_steps,
                             &StepCpu::on_cpu_ns))
        rose.push_back({&s, {*p, *c}});
    }
    if (rises.size() < 2) continue;
    const size_t risen = static_cast<size_t>(std::count_if(
        rises.begin(), rises.end(), [&](double r) { return r >= 1 + o.min_job_probe_rise; }));
    const double median = *Median(rises);
    // Most ranks' CPUs slowed, by enough to explain half the steps' slowdown.
    if (2 * risen >= rises.size() && median >= 1 + o.min_job_probe_rise &&
        median - 1 >= *f.slowdown / 2) {
      f.message += fmt::format(
          "; the ranks' CPUs ran a fixed piece of work {:.2f}x as long in those steps (median of "
          "{} ranks; {} of them >= {:.2f}x): the machine slowed, not the job",
          median, rises.size(), risen, 1 + o.min_job_probe_rise);
      f.evidence.push_back(Evidence{
          fmt::format("host CPU: the step reporter's probe (fixed work on each rank's training "
                      "thread) took {:.2f}x as long in steps {}-{} as in the others",
                      median, *f.onset_step, *f.end_step),
          std::nullopt});
      f.next_steps.insert(
          f.next_steps.begin(),
          "the CPUs slowed for every rank at once: look at the machines at that time, not the "
          "training code (`mpstat -P ALL` steal and `turbostat` / `cpupower frequency-info` "
          "clocks, `dmesg` for thermal or power events, the cloud's host-maintenance events)");
    } else {
      // Else one rank's core: its probe rose, and its thread's CPU time per
      // step rose by enough to explain half the steps' slowdown, above the
      // other ranks' median rise by as much (waiting ranks poll in gloo),
      // and no more than its core's slowness explains (the same work on a
      // slower core; more work would read above it).
      const StepSeries* slowed = nullptr;
      double probe_rise = 0, cpu_rise = 0;
      for (const auto& [s, r] : rose) {
        const auto [p, c] = r;
        std::vector<double> others;
        for (const auto& [t, q] : rose) {
          if (t != s) others.push_back(q.second);
        }
        const std::optional<double> other_rise = Median(std::move(others));
        if (!other_rise || p < 1 + o.min_job_probe_rise || c - 1 < *f.slowdown / 2 ||
            c - *other_rise < *f.slowdown / 2 || c > p * (1 + kSlowedCoreWorkMargin) ||
            c <= cpu_rise)
          continue;
        slowed = s, probe_rise = p, cpu_rise = c;
      }
      if (slowed == nullptr) continue;
      f.message += fmt::format(
          "; rank {}'s CPU ran a fixed piece of work {:.2f}x as long in those steps and its "
          "thread used {:.2f}x the CPU time per step for the same work: its core slowed and the "
          "job waited for it; the machine slowed, not the job",
          slowed->info.rank, probe_rise, cpu_rise);
      f.evidence.push_back(Evidence{
          fmt::format("host CPU: rank {}'s step reporter's probe (fixed work on its training "
                      "thread) took {:.2f}x as long in steps {}-{} as in the others, its CPU "
                      "time per step {:.2f}x",
                      slowed->info.rank, probe_rise, *f.onset_step, *f.end_step, cpu_rise),
          std::nullopt});
      f.next_steps.insert(
          f.next_steps.begin(),
          fmt::format("rank {}'s core slowed in those steps: look at its machine at that time, "
                      "not the training code (`mpstat -P ALL` steal and `turbostat` / `cpupower "
                      "frequency-info` clocks of its cores, what else ran there)",
                      slowed->info.rank));
    }
  }
}

void ExplainVariableWorkByHostCpu(const Run& run, const std::optional<LogStepRange>& profiled,
                                  bool cpu_only, const HostCpuAnalysis& host,
                                  std::vector<Finding>& trace_findings,
                                  const HostCpuDetectorOptions& o) {
  auto vw = std::find_if(trace_findings.begin(), trace_findings.end(), [](const Finding& f) {
    return f.code == FindingCode::kTraceVariableWork && f.severity != Severity::kInfo;
  });
  if (vw == trace_findings.end() || !cpu_only || !profiled || run.ranks.size() < 2) return;
  // The ranks wait for a CPU (the median rank min_wait_share of its step),
  // and none uses more CPU time than its peers in the window.
  std::vector<double> waits;
  for (const RankCpuStats& r : host.ranks) {
    if (r.wait_ns && r.step_ns > 0)
      waits.push_back(static_cast<double>(*r.wait_ns) / static_cast<double>(r.step_ns));
    std::optional<double> more = RatioToPeers(host.ranks, r.rank, &RankCpuStats::window_cpu_ns);
    if (more && *more >= 1 + o.max_window_cpu_excess) return;
  }
  const double wait_share = Median(waits).value_or(0);
  if (waits.size() < 2 || wait_share < o.min_wait_share) return;
  // Each profiled step's CPU times, one pass over each rank's records.
  std::map<int64_t, std::vector<double>> by_step;
  for (const StepSeries& s : run.ranks) {
    for (const StepCpu& c : s.cpu) {
      if (c.on_cpu_ns && c.step >= profiled->first && c.step <= profiled->last)
        by_step[c.step].push_back(static_cast<double>(*c.on_cpu_ns));
    }
  }
  std::vector<double> spreads;
  for (auto& [step, cpu] : by_step) {
    if (cpu.size() != run.ranks.size()) continue;  // a rank without it (or twice)
    std::optional<double> median = Median(cpu);
    std::optional<double> mad = Mad(std::move(cpu));
    if (!median || *median <= 0 || !mad) continue;
    spreads.push_back(kMadToSigma * *mad / *median);
  }
  if (spreads.size() < kMinWindowProbes) return;
  const double spread = Median(spreads).value_or(0);
  if (spread >= o.max_cpu_spread_of_shared_cores) return;
  vw->severity = Severity::kInfo;
  vw->message += fmt::format(
      "; but the ranks' own CPU time per step spreads {:.1f}% (median of {} profiled steps) and "
      "they wait for a CPU {:.0f}% of their step: they share cores, the work does not vary",
      100 * spread, spreads.size(), 100 * wait_share);
  vw->next_steps.clear();
}

}  // namespace laggard
