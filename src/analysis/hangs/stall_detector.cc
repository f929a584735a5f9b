#include "analysis/hangs/stall_detector.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/stats/robust_stats.h"

namespace laggard {
namespace {

constexpr size_t kTypicalOf = 32;  // recent steps whose median is a rank's typical step

std::string Seconds(DurationNs d) { return fmt::format("{:.1f} s", ToSeconds(d)); }

std::string Where(const RankProgress& p) {
  if (!p.host) return "";
  return p.gpu ? fmt::format(" ({} GPU {})", *p.host, *p.gpu) : fmt::format(" ({})", *p.host);
}

Entity EntityOf(const RankProgress& p) {
  return Entity{.rank = p.rank, .host = p.host, .gpu = p.gpu};
}

Finding RankStalled(const RankProgress& p, const StalledRank& s, const StallAnalysis& a,
                    size_t later, bool others_stopped, size_t judged,
                    const StallDetectorOptions& o) {
  Finding f = MakeFinding(FindingCode::kHangRankStalled, EntityOf(p));
  f.onset_step = s.last_step + 1;
  f.onset_time = p.last_report_ns;
  std::string others = later == 0 ? std::string("while the other ranks went on reporting")
                                  : fmt::format("while {} of the {} ranks reported step {}{}",
                                                later, judged, s.last_step + s.steps_behind,
                                                others_stopped ? " and wait for it" : " and go on");
  f.message =
      fmt::format("rank {}{} stopped reporting after step {}, {} ago (typical step {}), {}", p.rank,
                  Where(p), s.last_step, Seconds(s.silent_ns), Seconds(a.typical_ns), others);
  f.evidence.push_back(
      {fmt::format("rank {}: last step {} at {}; silent for {} > the {} threshold (1.5 x the "
                   "typical step + 5 s)",
                   p.rank, s.last_step, FormatTimestamp(p.last_report_ns), Seconds(s.silent_ns),
                   Seconds(a.silence_ns)),
       std::nullopt});
  // Steps alone: a rank behind the others, every one of them silent too,
  // is a hang; still an inference, not the ranks' own word (Flight Recorder).
  f.confidence =
      others_stopped ? o.confidence.rank_stalled : o.confidence.rank_stalled_others_go_on;
  f.next_steps.push_back(fmt::format(
      "look at rank {} now, while it hangs: py-spy dump --pid <its pid>{} shows where it stopped; "
      "check its GPU (dmesg | grep -i xid) and host (free -g, dmesg | grep -i oom)",
      p.rank, p.host ? " on " + *p.host : ""));
  f.next_steps.push_back(
      "keep the evidence the job leaves when the watchdog fires: TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
      "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_ (Flight Recorder), then "
      "`laggard diagnose` the dumps and the ranks' stderr");
  return f;
}

Finding JobStalled(const StallAnalysis& a, size_t judged, int64_t low_step, DurationNs silent_ns,
                   const StallDetectorOptions& o) {
  Finding f = MakeFinding(FindingCode::kHangJobStalled);
  f.entity.job = true;
  int64_t high_step = a.job_step.value_or(low_step);
  std::string at = low_step == high_step ? fmt::format("at step {}", high_step)
                                         : fmt::format("at steps {}-{}", low_step, high_step);
  f.message = fmt::format(
      "all {} ranks stopped reporting steps {} ago, {} (typical step {}): no few ranks are behind "
      "the others, so the steps do not tell which rank holds them",
      judged, Seconds(silent_ns), at, Seconds(a.typical_ns));
  f.confidence = o.confidence.job_stalled;
  f.next_steps.push_back(std::string(Describe(f.code).next_step));
  return f;
}

// Offline, at a hang the ranks' own lines established: where the step logs
// end.
Finding BehindAtHang(const RankProgress& p, const StalledRank& s, size_t later, size_t judged,
                     const std::optional<SourceRef>& ahead_src, const StallDetectorOptions& o) {
  Finding f = MakeFinding(FindingCode::kHangRankStalled, EntityOf(p));
  f.onset_step = s.last_step + 1;
  int64_t next = s.last_step + 1;
  f.message = fmt::format(
      "rank {}{} never finished step {}: its steps end at step {}, while {} of the {} ranks "
      "finished step {} before the job hung{}",
      p.rank, Where(p), next, s.last_step, later, judged, s.last_step + s.steps_behind,
      s.steps_behind > 1 ? "" : " (they wait for it)");
  f.evidence.push_back({fmt::format("rank {}'s last step: {}", p.rank, s.last_step), p.last_src});
  if (ahead_src) {
    f.evidence.push_back(
        {fmt::format("a rank ahead: step {}", s.last_step + s.steps_behind), ahead_src});
  }
  // Step logs only: a log flushed late ends early too.
  f.confidence = o.confidence.behind_at_hang;
  f.next_steps.push_back(fmt::format(
      "if it still hangs, py-spy dump rank {}'s process{}; else read its stderr after step {} "
      "(a Python exception, an OOM kill, a data-loader error) and check that its log is not "
      "just buffered (print(..., flush=True))",
      p.rank, p.host ? " on " + *p.host : "", s.last_step));
  f.next_steps.push_back(
      "for the next time: Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
      "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_) say which collective each rank is in");
  return f;
}

}  // namespace

StallAnalysis FindStallsAtHang(const std::vector<RankProgress>& ranks,
                               const StallDetectorOptions& o) {
  StallAnalysis a;
  std::vector<const RankProgress*> judged;
  for (const RankProgress& p : ranks) {
    if (p.reports >= o.min_steps) judged.push_back(&p);
  }
  if (judged.size() < 2) return a;
  a.judged = true;
  a.at_hang = true;
  int64_t top_step = judged.front()->last_step;
  for (const RankProgress* p : judged) top_step = std::max(top_step, p->last_step);
  a.job_step = top_step;
  std::vector<const RankProgress*> behind;
  const RankProgress* top = nullptr;
  for (const RankProgress* p : judged) {
    if (p->last_step < top_step) behind.push_back(p);
    if (p->last_step == top_step && top == nullptr) top = p;
  }
  if (behind.empty() || behind.size() > judged.size() - behind.size()) return a;
  for (const RankProgress* p : behind) {
    StalledRank s;
    s.rank = p->rank;
    s.last_step = p->last_step;
    s.steps_behind = top_step - p->last_step;
    a.stalled.push_back(s);
    size_t later = std::count_if(judged.begin(), judged.end(), [&](const RankProgress* q) {
      return q->last_step > p->last_step;
    });
    a.findings.push_back(BehindAtHang(*p, s, later, judged.size(), top->last_src, o));
  }
  return a;
}

StallAnalysis FindStalls(const std::vector<RankProgress>& ranks, TimeNs now_ns,
                         const StallDetectorOptions& o) {
  StallAnalysis a;
  std::vector<const RankProgress*> judged;
  std::vector<double> typical;
  for (const RankProgress& p : ranks) {
    if (p.reports < o.min_steps || p.typical_ns <= 0) continue;
    judged.push_back(&p);
    typical.push_back(static_cast<double>(p.typical_ns));
  }
  if (judged.size() < 2) return a;
  a.judged = true;
  a.typical_ns = static_cast<DurationNs>(*Median(typical));
  a.silence_ns = static_cast<DurationNs>(o.silence_steps * static_cast<double>(a.typical_ns)) +
                 o.silence_floor_ns;
  int64_t top_step = judged.front()->last_step;
  int64_t low_step = top_step;
  TimeNs latest = judged.front()->last_report_ns;
  for (const RankProgress* p : judged) {
    top_step = std::max(top_step, p->last_step);
    low_step = std::min(low_step, p->last_step);
    latest = std::max(latest, p->last_report_ns);
  }
  a.job_step = top_step;

  // Behind: a later step elsewhere, or reports elsewhere well after it
  // stopped. Ahead of r: ranks at a later step than r, or still reporting.
  // Stopped: no report for over silence_steps typical steps (no progress,
  // waiting); silent: that plus the floor.
  std::vector<const RankProgress*> behind;
  size_t silent = 0, stopped = 0;
  auto over_steps = static_cast<DurationNs>(o.silence_steps * static_cast<double>(a.typical_ns));
  for (const RankProgress* p : judged) {
    bool is_silent = now_ns - p->last_report_ns > a.silence_ns;
    silent += is_silent;
    stopped += now_ns - p->last_report_ns > over_steps;
    if (!is_silent) continue;
    if (p->last_step < top_step || latest > p->last_report_ns + a.silence_ns) behind.push_back(p);
  }
  size_t ahead = judged.size() - behind.size();
  if (!behind.empty() && behind.size() <= ahead) {
    for (const RankProgress* p : behind) {
      StalledRank s;
      s.rank = p->rank;
      s.last_step = p->last_step;
      s.silent_ns = now_ns - p->last_report_ns;
      s.steps_behind = top_step - p->last_step;
      a.stalled.push_back(s);
    }
    std::sort(a.stalled.begin(), a.stalled.end(),
              [](const StalledRank& x, const StalledRank& y) { return x.rank < y.rank; });
    for (const StalledRank& s : a.stalled) {
      const RankProgress& p = **std::find_if(
          judged.begin(), judged.end(), [&](const RankProgress* q) { return q->rank == s.rank; });
      size_t later = std::count_if(judged.begin(), judged.end(), [&](const RankProgress* q) {
        return q->last_step > s.last_step;
      });
      a.findings.push_back(RankStalled(p, s, a, later, stopped == judged.size(), judged.size(), o));
    }
    return a;
  }
  if (silent == judged.size()) {
    a.job_stalled = true;
    a.findings.push_back(JobStalled(a, judged.size(), low_step, now_ns - latest, o));
  }
  return a;
}

std::vector<RankProgress> ProgressFromSteps(const Run& run, bool need_clock) {
  std::vector<RankProgress> out;
  out.reserve(run.ranks.size());
  std::vector<double> recent;
  for (const StepSeries& s : run.ranks) {
    if (s.steps.empty()) continue;
    const StepRecord& last = s.steps.back();
    if (need_clock && !last.start_ns) continue;  // when it stopped is unknown
    RankProgress p;
    p.rank = s.info.rank;
    p.host = s.info.host;
    p.gpu = s.info.local_gpu;
    p.last_step = last.step;
    p.last_report_ns = last.start_ns ? *last.start_ns + last.duration_ns : 0;
    p.last_src = last.src;
    p.reports = s.steps.size();
    recent.clear();
    size_t from = s.steps.size() > kTypicalOf ? s.steps.size() - kTypicalOf : 0;
    for (size_t i = from; i < s.steps.size(); ++i) {
      recent.push_back(static_cast<double>(s.steps[i].duration_ns));
    }
    p.typical_ns = static_cast<DurationNs>(*Median(recent));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace laggard
