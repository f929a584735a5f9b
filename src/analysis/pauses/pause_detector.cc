#include "analysis/pauses/pause_detector.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

// Per sample time, over the saturated GPUs: how many read busy, how many dip.
struct SampleCounts {
  int busy = 0;
  int dipping = 0;
};

bool Saturated(const GpuRecord& g, const PauseDetectorOptions& o) {
  if (g.time_is_approximate || !g.host) return false;
  std::vector<double> u;
  for (const GpuSample& x : g.samples) {
    if (x.util_pct) u.push_back(*x.util_pct);
  }
  return u.size() >= o.min_util_samples && *Median(u) >= o.busy_util_pct;
}

// The lone dips of one saturated GPU, merged into pauses.
std::vector<GpuPause> PausesOf(const GpuRecord& g, const std::map<TimeNs, SampleCounts>& at,
                               const PauseDetectorOptions& o) {
  std::vector<GpuPause> lone;
  for (const GpuSample& x : g.samples) {
    if (!x.util_pct || *x.util_pct > o.dip_util_pct) continue;
    const SampleCounts& n = at.at(x.time_ns);
    if (n.dipping == 1 && n.busy >= 2) lone.push_back(GpuPause{x.time_ns, *x.util_pct, x.src});
  }
  std::stable_sort(lone.begin(), lone.end(), [](const GpuPause& a, const GpuPause& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.lowest_util_pct < b.lowest_util_pct;
  });
  std::vector<GpuPause> pauses;
  for (const GpuPause& d : lone) {
    if (!pauses.empty() && d.time_ns - pauses.back().time_ns < o.same_pause_ns) {
      if (d.lowest_util_pct < pauses.back().lowest_util_pct) {
        pauses.back().lowest_util_pct = d.lowest_util_pct;
        pauses.back().src = d.src;
      }
    } else {
      pauses.push_back(d);
    }
  }
  return pauses;
}

}  // namespace

PauseMetrics MeasurePauses(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces,
                           const PauseDetectorOptions& o) {
  PauseMetrics m;
  m.applicable = steps.job.synchronised && !traces.culprit && !steps.job.spike_steps.empty();
  if (!m.applicable) return m;
  const std::vector<GpuRecord>& gpus = run.hardware.gpus;
  std::vector<size_t> saturated;
  std::map<TimeNs, SampleCounts> at;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!Saturated(gpus[i], o)) continue;
    saturated.push_back(i);
    for (const GpuSample& x : gpus[i].samples) {
      if (!x.util_pct) continue;
      SampleCounts& n = at[x.time_ns];
      if (*x.util_pct >= o.busy_util_pct) ++n.busy;
      else if (*x.util_pct <= o.dip_util_pct) ++n.dipping;
    }
  }
  for (size_t i : saturated) m.saturated.push_back(GpuPauses{i, PausesOf(gpus[i], at, o)});
  return m;
}

PauseAnalysis DecidePauses(const Run& run, const StepAnalysis& steps, const RankMap& ranks,
                           const PauseMetrics& m, const PauseDetectorOptions& o) {
  PauseAnalysis out;
  if (!m.applicable) return out;
  // The first GPU with the most pauses, and the most any other GPU has.
  const GpuPauses* best = nullptr;
  size_t second_n = 0;
  for (const GpuPauses& g : m.saturated) {
    if (best == nullptr || g.pauses.size() > best->pauses.size()) {
      if (best != nullptr) second_n = std::max(second_n, best->pauses.size());
      best = &g;
    } else {
      second_n = std::max(second_n, g.pauses.size());
    }
  }
  const std::vector<int64_t>& spikes = steps.job.spike_steps;
  const size_t best_n = best == nullptr ? 0 : best->pauses.size();
  if (best_n == 0 || best_n > o.max_pauses_per_spike * spikes.size() ||
      second_n * o.min_lead > best_n) {
    return out;
  }
  const GpuRecord& g = run.hardware.gpus[best->gpu];
  Finding f = MakeFinding(FindingCode::kHostPause);
  f.entity.host = g.host;
  f.entity.gpu = g.index;
  f.entity.rank = ranks.RankOf(*g.host, g.index);
  f.cause = "pause";
  f.confidence =
      best_n >= std::min<size_t>(2, spikes.size()) ? o.full_confidence : o.one_pause_confidence;
  f.slowdown = Median(steps.job.spike_excess);

  const GpuPause* lowest = &best->pauses.front();
  for (const GpuPause& p : best->pauses) {
    if (p.lowest_util_pct < lowest->lowest_util_pct) lowest = &p;
  }
  std::string steps_text;
  for (size_t i = 0; i < spikes.size() && i < 6; ++i) {
    steps_text += fmt::format("{}{}", i ? ", " : "", spikes[i]);
  }
  if (spikes.size() > 6) steps_text += ", ...";
  std::string who = f.entity.rank ? fmt::format("rank {}", *f.entity.rank)
                                  : fmt::format("GPU {} of {}", g.index, *g.host);
  f.message = fmt::format(
      "{} pauses at the job's isolated slow steps: its GPU alone drops to {:.0f}% utilisation {} "
      "time{}, at {} whole-job slow step{}",
      who, std::min(100.0, lowest->lowest_util_pct), best_n, best_n == 1 ? "" : "s", spikes.size(),
      spikes.size() == 1 ? "" : "s");
  f.evidence.push_back(Evidence{
      fmt::format("GPU: GPU {} of {} drops to {:.0f}% utilisation {} time{} while every other GPU "
                  "stays busy (the waiting GPUs spin in NCCL at ~100%): its rank idles while the "
                  "others wait",
                  g.index, *g.host, std::min(100.0, lowest->lowest_util_pct), best_n,
                  best_n == 1 ? "" : "s"),
      lowest->src});
  f.evidence.push_back(Evidence{
      fmt::format("step times: the whole job slows at {} isolated step{} ({}), {:+.0f}% each "
                  "(median), with synchronised step times: one rank pauses, everyone waits",
                  spikes.size(), spikes.size() == 1 ? "" : "s", steps_text,
                  100 * f.slowdown.value_or(0)),
      std::nullopt});
  f.next_steps.push_back(
      DefaultNextStep(FindingCode::kHostPause, fmt::arg("who", who), fmt::arg("host", *g.host)));
  out.findings.push_back(std::move(f));
  return out;
}

PauseAnalysis AnalyzePauses(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces,
                            const RankMap& ranks, const PauseDetectorOptions& options) {
  return DecidePauses(run, steps, ranks, MeasurePauses(run, steps, traces, options), options);
}

}  // namespace laggard
