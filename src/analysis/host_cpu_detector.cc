#include "analysis/host_cpu_detector.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/robust_stats.h"

namespace laggard {
namespace {

double Seconds(DurationNs ns) { return static_cast<double>(ns) / 1e9; }

// The series' step time at `step`, when it has that step.
std::optional<DurationNs> StepTime(const StepSeries& s, int64_t step) {
  auto it = std::lower_bound(s.steps.begin(), s.steps.end(), step,
                             [](const StepRecord& r, int64_t x) { return r.step < x; });
  if (it == s.steps.end() || it->step != step) return std::nullopt;
  return it->duration_ns;
}

std::optional<RankCpuStats> Measure(const StepSeries& s, size_t min_steps) {
  std::vector<double> wait, step, on_cpu;
  for (const StepCpu& c : s.cpu) {
    if (!c.runq_wait_ns) continue;
    std::optional<DurationNs> d = StepTime(s, c.step);
    if (!d) continue;
    wait.push_back(static_cast<double>(*c.runq_wait_ns));
    step.push_back(static_cast<double>(*d));
    if (c.on_cpu_ns) on_cpu.push_back(static_cast<double>(*c.on_cpu_ns));
  }
  if (wait.size() < min_steps) return std::nullopt;
  RankCpuStats r;
  r.rank = s.info.rank;
  r.steps = wait.size();
  r.wait_ns = static_cast<DurationNs>(Median(wait).value_or(0));
  r.step_ns = static_cast<DurationNs>(Median(step).value_or(0));
  if (on_cpu.size() * 2 >= wait.size())
    r.on_cpu_ns = static_cast<DurationNs>(Median(on_cpu).value_or(0));
  return r;
}

// The median of the other ranks' value; nullopt when there is no other.
std::optional<double> OthersMedian(const std::vector<RankCpuStats>& all, size_t skip, auto value) {
  std::vector<double> v;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == skip) continue;
    if (auto x = value(all[i])) v.push_back(*x);
  }
  return Median(std::move(v));
}

}  // namespace

HostCpuAnalysis AnalyzeHostCpu(const Run& run, const HostCpuDetectorOptions& o) {
  HostCpuAnalysis out;
  for (const StepSeries& s : run.ranks) {
    if (auto r = Measure(s, o.min_steps)) out.ranks.push_back(*r);
  }
  for (size_t i = 0; i < out.ranks.size(); ++i) {
    const RankCpuStats& r = out.ranks[i];
    double base = OthersMedian(out.ranks, i, [](const RankCpuStats& x) {
                    return std::optional<double>(static_cast<double>(x.wait_ns));
                  }).value_or(0);
    double excess = static_cast<double>(r.wait_ns) - base;
    double step = static_cast<double>(r.step_ns);
    // Where every rank shares cores (more ranks than cores) all wait, and
    // one that waits a little more by the scheduler's luck is not singled
    // out: the excess must also be a clear part of the others' wait.
    if (step <= 0 || excess < static_cast<double>(o.min_wait_ns) ||
        excess < o.min_wait_share * step || excess < o.min_excess_over_peers * base)
      continue;
    double share = excess / step;
    const StepSeries* series = run.FindRank(r.rank);
    Finding f;
    f.code = FindingCode::kHostCpuContention;
    f.severity = Describe(f.code).severity;
    f.entity.rank = r.rank;
    if (series) {
      f.entity.host = series->info.host;
      f.entity.gpu = series->info.local_gpu;
    }
    f.cause = "host_contention";
    f.slowdown = share < 1 ? share / (1 - share) : std::optional<double>();
    // 0.5 at the threshold, rising with the share (0.3 of the step: the
    // cap) and held down over few steps.
    double by_share = 0.5 + (o.max_confidence - 0.5) * std::min(1.0, share / 0.3);
    double by_steps = std::min(1.0, static_cast<double>(r.steps) / 20.0);
    f.confidence = std::min(o.max_confidence, 0.4 + (by_share - 0.4) * by_steps);
    bool peers = out.ranks.size() > 1;
    std::string who = fmt::format("rank {}", r.rank);
    f.message = fmt::format(
        "{} waits {:.3f} s per step for a CPU (runnable, not running; median of {} steps), {:.0f}% "
        "of its {:.3f} s step{}",
        who, Seconds(r.wait_ns), r.steps, 100 * share, Seconds(r.step_ns),
        peers ? fmt::format("; its peers wait {:.3f} s", base / 1e9) : std::string());
    f.evidence.push_back(Evidence{
        fmt::format("host CPU: {}'s training thread was runnable but not running {:.3f} s per "
                    "step (the scheduler's run-queue wait, /proc schedstat){}",
                    who, Seconds(r.wait_ns),
                    peers
                        ? fmt::format(", {:.3f} s more than the other ranks' median", excess / 1e9)
                        : std::string()),
        std::nullopt});
    if (r.on_cpu_ns) {
      auto peer_cpu = OthersMedian(out.ranks, i, [](const RankCpuStats& x) {
        return x.on_cpu_ns ? std::optional<double>(static_cast<double>(*x.on_cpu_ns))
                           : std::nullopt;
      });
      f.evidence.push_back(Evidence{
          peer_cpu ? fmt::format("host CPU: its time on a CPU, {:.3f} s per step, is {:.2f}x its "
                                 "peers' ({:.3f} s): {}",
                                 Seconds(*r.on_cpu_ns),
                                 static_cast<double>(*r.on_cpu_ns) / *peer_cpu, *peer_cpu / 1e9,
                                 static_cast<double>(*r.on_cpu_ns) <= 1.1 * *peer_cpu
                                     ? "the same work, done later"
                                     : "it also does more work")
                   : fmt::format("host CPU: its time on a CPU is {:.3f} s per step",
                                 Seconds(*r.on_cpu_ns)),
          std::nullopt});
    }
    f.next_steps.push_back(
        DefaultNextStep(f.code, fmt::arg("who", who),
                        fmt::arg("host", f.entity.host.value_or(std::string("its host")))));
    out.findings.push_back(std::move(f));
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     return a.slowdown.value_or(1e9) > b.slowdown.value_or(1e9);
                   });
  return out;
}

}  // namespace laggard
