// The decision half of the step-time detector (step_time_detector.h):
// DecideSteps and AnalyzeStepTimes; the metrics are in step_time_metrics.cc.

#include "analysis/steps/step_time_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

namespace laggard {
namespace {

constexpr size_t kMaxEpisodeFindings = 10;

std::string Seconds(double s) {
  if (s >= 100) return fmt::format("{:.0f} s", s);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 0.001) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string Percent(double f) { return fmt::format("{:+.0f}%", f * 100); }

std::string StepNo(int64_t step) {
  // Thousands separators: "1,200".
  std::string digits = std::to_string(step < 0 ? -step : step);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return step < 0 ? "-" + out : out;
}

SlowdownBand Band(double excess) {
  if (excess >= 0.15) return SlowdownBand::kStraggler;
  if (excess >= 0.05) return SlowdownBand::kSuspect;
  return SlowdownBand::kNormal;
}

std::string BandText(double excess) {
  if (excess >= 0.15) return "over 15%: almost surely a straggler (article's band)";
  if (excess >= 0.05) return "5-15%: above the <5% normal variation between same-model GPUs";
  return "under 5%: normal variation between same-model GPUs";
}

// Regular spacing of bursts of slow columns. Returns the period in steps.
std::optional<double> DetectPeriod(const std::vector<int64_t>& slow_steps,
                                   const StepDetectorOptions& opt,
                                   std::vector<int64_t>* burst_starts_out = nullptr) {
  std::vector<int64_t> starts;
  for (size_t i = 0; i < slow_steps.size(); ++i) {
    if (i == 0 || slow_steps[i] > slow_steps[i - 1] + 1) starts.push_back(slow_steps[i]);
  }
  if (burst_starts_out) *burst_starts_out = starts;
  if (starts.size() < opt.min_bursts) return std::nullopt;
  std::vector<double> gaps;
  for (size_t i = 1; i < starts.size(); ++i)
    gaps.push_back(static_cast<double>(starts[i] - starts[i - 1]));
  double period = *Median(gaps);
  double tolerance = std::max(1.0, opt.period_tolerance * period);
  if (period < 2) return std::nullopt;
  for (double g : gaps) {
    if (std::fabs(g - period) > tolerance) return std::nullopt;
  }
  return period;
}

// Wall-clock start of `step` on `series`, if logged.
std::optional<TimeNs> StartOf(const StepSeries& series, int64_t step) {
  const StepRecord* r = series.FindStep(step);
  return r ? std::optional<TimeNs>(r->start_ns) : std::nullopt;
}

std::optional<SourceRef> SourceOf(const StepSeries& series, int64_t step) {
  const StepRecord* r = series.FindStep(step);
  if (r == nullptr) return std::nullopt;
  return r->src;
}

Entity RankEntity(const RankInfo& info) {
  Entity e;
  if (info.rank >= 0) e.rank = info.rank;
  e.host = info.host;
  e.gpu = info.local_gpu;
  return e;
}

std::string RankName(const RankInfo& info) {
  std::string s = fmt::format("rank {}", info.rank);
  if (info.host && info.local_gpu) s += fmt::format(" ({} GPU {})", *info.host, *info.local_gpu);
  else if (info.host) s += fmt::format(" ({})", *info.host);
  return s;
}

Finding NoPeersFinding(const StepMetrics& m, const StepDetectorOptions& opt) {
  Finding f = MakeFinding(FindingCode::kNoPeers);
  f.entity.job = true;
  f.confidence = opt.confidence.no_peers;
  f.message = m.attributed ? fmt::format(
                                 "only rank {} has step times: there are no peers to compare it "
                                 "with",
                                 m.series[0]->info.rank)
                           : fmt::format(
                                 "{} step series without a rank (e.g. a Megatron log written by "
                                 "one rank): peers cannot be compared",
                                 m.series.size());
  f.next_steps.push_back(
      "log step times on every rank (the article: print(f\"rank {rank}, step {i}, time "
      "{dt:.4f}s\")), or name each file's rank with --rank-from");
  return f;
}

// Workload imbalance: one pipeline stage uniformly slower than the others
// (its ranks agree with each other, so no rank stands out within it).
std::optional<Finding> StageImbalanceFinding(const StepMetrics& m, const StepDetectorOptions& opt) {
  const size_t groups = m.group_stage.size();
  const auto& group_medians = m.group_rank_medians_s;
  std::vector<double> stage_median(groups, 0);
  for (size_t g = 0; g < groups; ++g) stage_median[g] = Median(group_medians[g]).value_or(0);
  size_t worst = static_cast<size_t>(std::max_element(stage_median.begin(), stage_median.end()) -
                                     stage_median.begin());
  std::vector<double> others;
  for (size_t g = 0; g < groups; ++g) {
    if (g != worst) others.push_back(stage_median[g]);
  }
  double rest = Median(others).value_or(0);
  double stage_mad = Mad(group_medians[worst]).value_or(0);
  if (!(rest > 0 && stage_median[worst] >= (1 + opt.flag_threshold) * rest &&
        kMadToSigma * stage_mad < (stage_median[worst] - rest) / opt.stage_separation)) {
    return std::nullopt;
  }
  Finding f = MakeFinding(FindingCode::kStepStageImbalance);
  f.entity.job = true;
  f.slowdown = stage_median[worst] / rest - 1;
  f.cause = "pipeline_stage_imbalance";
  for (size_t r = 0; r < m.series.size(); ++r) {
    if (m.group_of[r] == worst) f.ranks.push_back(m.series[r]->info.rank);
  }
  f.confidence = opt.confidence.stage_imbalance;
  f.message = fmt::format(
      "pipeline stage {} is uniformly {:+.0f}% slower than the other stages ({:.4g} s vs "
      "{:.4g} s per step, {} ranks): workload imbalance, not a faulty GPU",
      m.group_stage[worst], 100 * *f.slowdown, stage_median[worst], rest, f.ranks.size());
  f.next_steps.push_back(fmt::format(
      "rebalance the pipeline: move layers off stage {} (e.g. the output layer / loss of the "
      "last stage), or use uneven layer splits",
      m.group_stage[worst]));
  return f;
}

}  // namespace

bool TotalSlow(const RankStepStats& st, const StepDetectorOptions& opt) {
  return !st.total_excess || *st.total_excess >= opt.min_total_excess;
}

bool SlowByMedianAndTotal(const RankStepStats& st, const StepDetectorOptions& opt) {
  return st.excess && *st.excess >= opt.flag_threshold && TotalSlow(st, opt);
}

bool SlowOverTheRun(const RankStepStats& st, const StepDetectorOptions& opt) {
  return SlowByMedianAndTotal(st, opt) && st.z && *st.z >= opt.min_z;
}

namespace {

// How rank r straggles, when it does: persistently (its median, or a
// change-point segment of its own history), periodically, or as the rank
// holding most of the job's slow steps.
struct RankPattern {
  bool persistent = false;
  const Segment* slow_segment = nullptr;
  size_t slow_segment_index = 0;
  std::optional<double> period;
  bool periodic = false;
  bool repeat_offender = false;
  bool any() const { return persistent || slow_segment || periodic || repeat_offender; }
};

// Rank r's onsets; none when MeasureOnsets did not measure them.
const RankOnsets& OnsetsOf(const StepMetrics& m, size_t r) {
  static const RankOnsets kNone;
  return r < m.onsets.size() ? m.onsets[r] : kNone;
}

RankPattern PatternOf(const StepMetrics& m, size_t r, const StepDetectorOptions& opt) {
  RankPattern p;
  const RankStepStats& st = m.ranks[r];
  const RankOnsets& onsets = OnsetsOf(m, r);
  for (size_t i = 0; i < onsets.segments.size(); ++i) {
    const Segment& seg = onsets.segments[i];
    if (seg.median >= opt.flag_threshold &&
        (i >= onsets.segment_z.size() || onsets.segment_z[i] >= opt.segment_min_z) &&
        (!p.slow_segment || seg.median > p.slow_segment->median)) {
      p.slow_segment = &seg;
      p.slow_segment_index = i;
    }
  }
  if (p.slow_segment && p.slow_segment->begin == 0 && p.slow_segment->end == onsets.points &&
      !TotalSlow(st, opt))
    p.slow_segment = nullptr;
  p.persistent = SlowOverTheRun(st, opt);
  std::vector<int64_t> bursts;
  p.period = DetectPeriod(m.slow_steps[r], opt, &bursts);
  p.periodic = !p.persistent && !p.slow_segment && p.period.has_value();
  const size_t own = m.slow_steps[r].size();
  p.repeat_offender =
      !p.persistent && !p.slow_segment && !p.periodic && own >= opt.intermittent_min_steps &&
      m.slow_events > 0 &&
      static_cast<double>(own) >= opt.intermittent_share * static_cast<double>(m.slow_events) &&
      m.series.size() >= 3;
  return p;
}

// The finding's pattern, onset, slowdown and message; returns the excess.
double DescribeStraggler(const StepMetrics& m, size_t r, const RankPattern& p,
                         const JobStepStats& job, Finding& f) {
  const RankStepStats& st = m.ranks[r];
  const RankOnsets& onsets = OnsetsOf(m, r);
  const StepSeries& s = *m.series[r];
  double peer_s = m.peer_median_s[r];
  std::string what;
  double excess = 0;
  if (p.persistent || p.slow_segment) {
    // A change-point segment tells when it started; without one the rank
    // was slow throughout.
    bool whole =
        !p.slow_segment || (p.slow_segment->begin == 0 && p.slow_segment->end == onsets.points);
    if (p.slow_segment && !whole) {
      excess = p.slow_segment->median;
      f.onset_step = onsets.segment_first_step[p.slow_segment_index];
      f.onset_time = StartOf(s, *f.onset_step);
      if (p.slow_segment->end < onsets.points)
        f.end_step = onsets.segment_last_step[p.slow_segment_index];
    } else {
      excess = p.persistent ? *st.excess : p.slow_segment->median;
      f.onset_step = onsets.first_step;
      if (f.onset_step) f.onset_time = StartOf(s, *f.onset_step);
    }
    f.pattern = Pattern::kPersistent;
    double rank_median = peer_s * (1 + excess);
    what = fmt::format("{}: median {}{} vs peers {}, {}", RankName(s.info),
                       m.basis == StepBasis::kComputeTime ? "compute time " : "",
                       Seconds(rank_median), Seconds(peer_s), Percent(excess));
    if (whole) {
      what += ", persistent from the first analysed step";
    } else {
      what += fmt::format(", persistent since step {}", StepNo(*f.onset_step));
      if (f.onset_time) what += fmt::format(" ({})", FormatTimestamp(*f.onset_time));
      if (f.end_step) what += fmt::format(", recovered after step {}", StepNo(*f.end_step));
      else what += ", not recovered by the last step";
    }
  } else {
    const std::vector<int64_t>& slow = m.slow_steps[r];
    double spike = *Median(m.slow_step_excess[r]);
    double share = static_cast<double>(slow.size()) / static_cast<double>(st.steps_used);
    excess = spike * share;  // what it costs on average
    f.spike = spike;
    f.onset_step = slow.front();
    f.onset_time = StartOf(s, *f.onset_step);
    if (p.periodic) {
      f.pattern = Pattern::kPeriodic;
      f.period_steps = *p.period;
      f.period_s = *p.period * job.median_step_s.value_or(0);
      what = fmt::format("{}: {} slow steps ({} each), every {:.0f} steps (~{}), first at step {}",
                         RankName(s.info), slow.size(), Percent(spike), *p.period,
                         Seconds(*f.period_s), StepNo(*f.onset_step));
    } else {
      f.pattern = Pattern::kIntermittent;
      what = fmt::format(
          "{}: slow in {} of {} steps ({} each), {:.0f}% of all slow steps of the "
          "job: the same rank keeps straggling",
          RankName(s.info), slow.size(), st.steps_used, Percent(spike),
          100.0 * static_cast<double>(slow.size()) / static_cast<double>(m.slow_events));
    }
  }
  f.message = what;
  return excess;
}

// The straggler finding of rank r, which straggles as `p` says.
Finding StragglerFinding(const StepMetrics& m, size_t r, const RankPattern& p,
                         const StepAnalysis& out, const StepDetectorOptions& opt) {
  const RankStepStats& st = m.ranks[r];
  const StepSeries& s = *m.series[r];
  Finding f = MakeFinding(FindingCode::kStepStraggler);
  f.entity = RankEntity(s.info);
  double excess = DescribeStraggler(m, r, p, out.job, f);
  f.slowdown = excess;
  f.band = Band(excess);
  // Confidence that this rank is the slow one: by band, by how far it stands
  // out, by how many steps back it.
  const StepDetectorOptions::Confidences& c = opt.confidence;
  double conf = excess >= opt.strong_threshold ? c.straggler_strong
                : excess >= 0.10               ? c.straggler
                                               : c.straggler_weak;
  if (f.pattern == Pattern::kIntermittent) conf = std::min(conf, c.straggler_intermittent_max);
  if (st.steps_used < 20) conf -= c.straggler_few_steps_penalty;
  f.confidence = std::clamp(conf, c.straggler_min, c.straggler_max);
  f.evidence.push_back(
      Evidence{fmt::format("median {} {} over {} steps after warm-up, p90 {}, MAD {}",
                           m.basis == StepBasis::kComputeTime ? "compute time" : "step time",
                           Seconds(st.seconds->median), st.steps_used, Seconds(st.seconds->p90),
                           Seconds(st.seconds->mad)),
               SourceOf(s, m.step_numbers.empty() ? 0 : OnsetsOf(m, r).first_step.value_or(0))});
  f.evidence.push_back(Evidence{fmt::format("{}", BandText(excess)), std::nullopt});
  if (f.onset_step) {
    f.evidence.push_back(Evidence{fmt::format("first slow step {}", StepNo(*f.onset_step)),
                                  SourceOf(s, *f.onset_step)});
  }
  if (st.slowest_share > 0) {
    f.evidence.push_back(
        Evidence{fmt::format("slowest of all ranks in {:.0f}% of steps", 100 * st.slowest_share),
                 std::nullopt});
  }
  // A healthy peer for the comparison the article asks for.
  size_t healthy = 0;
  double best_gap = std::numeric_limits<double>::max();
  for (size_t q = 0; q < m.series.size(); ++q) {
    if (q == r || !out.ranks[q].excess) continue;
    double gap = std::fabs(*out.ranks[q].excess);
    if (gap < best_gap) best_gap = gap, healthy = q;
  }
  const RankInfo& peer = m.series[healthy]->info;
  f.next_steps.push_back(fmt::format(
      "profile 2 steps on rank {} and on healthy rank {} (torch.profiler / Kineto trace, or "
      "nsys) and compare kernel times with gaps: slow kernels mean the GPU computes slowly, "
      "long gaps mean it waits",
      s.info.rank, peer.rank));
  if (s.info.host) {
    f.next_steps.push_back(fmt::format(
        "on {} and a healthy host at the same time: nvidia-smi dmon -s pucvmt -d 1{}", *s.info.host,
        s.info.local_gpu ? fmt::format(" -i {}", *s.info.local_gpu) : ""));
  } else {
    f.next_steps.push_back(
        "on the suspect's node and a healthy one at the same time: nvidia-smi dmon -s pucvmt "
        "-d 1 (temperature, clocks, power, PCIe)");
  }
  return f;
}

// Jitter: slow steps on many ranks, none of them flagged.
std::optional<Finding> JitterFinding(const StepMetrics& m, const StepAnalysis& out,
                                     const StepDetectorOptions& opt) {
  const size_t R = m.series.size(), C = m.step_numbers.size();
  std::map<size_t, size_t> per_rank;
  size_t events = 0;
  for (size_t r = 0; r < R; ++r) {
    if (out.ranks[r].flagged || m.slow_steps[r].empty()) continue;
    per_rank[r] = m.slow_steps[r].size();
    events += m.slow_steps[r].size();
  }
  if (per_rank.size() < opt.jitter_min_ranks) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kJitter);
  f.entity.job = true;
  f.pattern = Pattern::kJitter;
  f.confidence = opt.confidence.jitter;
  double rate = static_cast<double>(events) / static_cast<double>(R * std::max<size_t>(1, C));
  f.message = fmt::format(
      "{} isolated slow steps (>= {} over the step's median) on {} different ranks, {:.2f}% "
      "of all rank-steps: rare random jitter, normal on shared clusters",
      events, Percent(m.slow_step_threshold), per_rank.size(), 100 * rate);
  return f;
}

// Stretches where the per-step median itself rose >= `level` seconds over
// the baseline `base`, with each one's median and slowest rank; the step
// numbers of every slow step in `slow_steps`.
std::vector<Episode> FindEpisodes(const StepMetrics& m, double base, double level,
                                  std::vector<int64_t>& slow_steps) {
  const size_t C = m.step_numbers.size();
  std::vector<Episode> episodes;
  for (size_t c = 0; c < C; ++c) {
    if (m.step_ranks[c] == 0 || m.step_median_s[c] < level) continue;
    slow_steps.push_back(m.step_numbers[c]);
    bool extend = !episodes.empty() && m.step_numbers[c] - episodes.back().end_step <= 1 && c > 0 &&
                  m.step_median_s[c - 1] >= level;
    if (!extend) {
      Episode e;
      e.start_step = m.step_numbers[c];
      e.baseline_step_s = base;
      for (size_t r = 0; r < m.series.size() && !e.start_time; ++r)
        e.start_time = StartOf(*m.series[r], e.start_step);
      episodes.push_back(e);
    }
    Episode& e = episodes.back();
    e.end_step = m.step_numbers[c];
    ++e.steps;
  }
  for (Episode& e : episodes) {
    auto b = std::lower_bound(m.step_numbers.begin(), m.step_numbers.end(), e.start_step);
    auto en = std::upper_bound(m.step_numbers.begin(), m.step_numbers.end(), e.end_step);
    std::vector<double> meds;
    std::unordered_map<int32_t, size_t> slow_count;
    for (auto it = b; it != en; ++it) {
      size_t c = static_cast<size_t>(it - m.step_numbers.begin());
      if (m.step_ranks[c] == 0) continue;
      meds.push_back(m.step_median_s[c]);
      if (m.step_ranks[c] >= 2 && m.step_slowest[c] >= 0) ++slow_count[m.step_slowest[c]];
    }
    e.median_step_s = Median(meds).value_or(0);
    size_t best = 0;
    for (auto [r, n] : slow_count) {
      int32_t rank = m.series[static_cast<size_t>(r)]->info.rank;
      if (n > best || (n == best && e.slowest_rank && rank < *e.slowest_rank)) {
        best = n;
        e.slowest_rank = rank;
      }
    }
    if (!meds.empty())
      e.slowest_share = static_cast<double>(best) / static_cast<double>(meds.size());
  }
  return episodes;
}

Finding PeriodicJobFinding(const JobStepStats& job, double job_period,
                           const StepDetectorOptions& opt) {
  const std::vector<Episode>& eps = job.episodes;
  const double base = *job.baseline_step_s;
  Finding f = MakeFinding(FindingCode::kPeriodicSlowdown);
  f.entity.job = true;
  f.pattern = Pattern::kPeriodic;
  f.period_steps = job_period;
  // Period in seconds: from wall clocks when logged, else from step times.
  std::optional<TimeNs> t0 = eps.front().start_time, t1 = eps.back().start_time;
  if (t0 && t1 && eps.size() > 1) {
    f.period_s = ToSeconds(*t1 - *t0) / static_cast<double>(eps.size() - 1);
  } else {
    f.period_s = job_period * job.median_step_s.value_or(0);
  }
  std::vector<double> ep_medians;
  for (const Episode& e : eps) ep_medians.push_back(e.median_step_s);
  double ep_med = *Median(ep_medians);
  f.slowdown = ep_med / base - 1;
  f.onset_step = eps.front().start_step;
  f.onset_time = eps.front().start_time;
  f.confidence = opt.confidence.periodic_slowdown;
  f.message = fmt::format(
      "the whole job slows every {:.0f} steps (~{}): {} episodes, steps take {} instead of {} "
      "(first at step {})",
      job_period, Seconds(*f.period_s), eps.size(), Seconds(ep_med), Seconds(base),
      StepNo(eps.front().start_step));
  f.next_steps.push_back(
      "a fixed period points at something scheduled: checkpoint saves, evaluation, garbage "
      "collection, or another job sharing a switch; compare the period with those schedules");
  if (job.synchronised) {
    f.next_steps.push_back(
        "step times are synchronised, so which rank stalls cannot be told from them: profile a "
        "slow step on all ranks");
  }
  return f;
}

Finding JobSlowdownFinding(const StepMetrics& m, const JobStepStats& job, const Episode& e,
                           const StepDetectorOptions& opt) {
  const double base = *job.baseline_step_s;
  Finding f = MakeFinding(FindingCode::kJobSlowdown);
  f.entity.job = true;
  f.pattern = Pattern::kJobWide;
  f.onset_step = e.start_step;
  f.onset_time = e.start_time;
  f.end_step = e.end_step;
  f.slowdown = e.median_step_s / base - 1;
  f.confidence = opt.confidence.job_slowdown;
  bool to_end = e.end_step == m.step_numbers.back();
  f.message =
      fmt::format("the whole job slowed in steps {}-{}{}: {} per step instead of {} ({})",
                  StepNo(e.start_step), StepNo(e.end_step), to_end ? " (until the last step)" : "",
                  Seconds(e.median_step_s), Seconds(base), Percent(*f.slowdown));
  if (e.slowest_rank && !job.synchronised && m.comparable) {
    f.evidence.push_back(Evidence{fmt::format("rank {} was the slowest in {:.0f}% of these steps",
                                              *e.slowest_rank, 100 * e.slowest_share),
                                  std::nullopt});
  }
  if (m.comparable && !job.synchronised) {
    f.next_steps.push_back(
        "all ranks slowed together: look for a job-wide cause (shared storage / data "
        "loader, the network for everyone, a cluster event at that time)");
  } else {
    f.next_steps.push_back(
        "profile one slow step on every rank to see who arrives last at the collective");
  }
  return f;
}

Finding ProfilerWindowFinding(const JobStepStats& job, const StepDetectorOptions& opt) {
  const LogStepRange& prof = *job.profiled_steps;
  const double base = *job.baseline_step_s;
  std::vector<double> medians;
  size_t steps = 0;
  for (const Episode& e : job.profiler_episodes) {
    medians.push_back(e.median_step_s);
    steps += e.steps;
  }
  double med = *Median(medians);
  Finding f = MakeFinding(FindingCode::kStepProfilerWindow);
  f.entity.job = true;
  f.onset_step = job.profiler_episodes.front().start_step;
  f.end_step = job.profiler_episodes.back().end_step;
  f.slowdown = med / base - 1;
  f.confidence = opt.confidence.profiler_window;
  f.message = fmt::format(
      "steps {}-{} are the profiler's window (the traces' steps, numbered {:+} in the logs); {} "
      "of them ran {} per step instead of {} ({}): the cost of profiling, not a slowdown of the "
      "job",
      StepNo(prof.first), StepNo(prof.last), prof.shift, steps, Seconds(med), Seconds(base),
      Percent(*f.slowdown));
  return f;
}

// Whole-job slowdowns: stretches where the per-step median itself rose.
// Needs enough steps for a baseline: with a handful, warm-up looks like a
// slowdown.
void DecideJobSlowdowns(const StepMetrics& m, const StepDetectorOptions& opt, StepAnalysis& out) {
  const size_t C = m.step_numbers.size();
  if (!out.job.baseline_step_s || *out.job.baseline_step_s <= 0 || C < opt.min_steps_for_episodes)
    return;
  const double base = *out.job.baseline_step_s;
  const double level =
      base *
      std::max(opt.episode_factor, 1 + opt.episode_sigmas * out.job.step_noise_sigma.value_or(0));
  std::vector<int64_t> slow_cols_steps;
  out.job.episodes = FindEpisodes(m, base, level, slow_cols_steps);
  std::vector<int64_t> starts;
  auto job_period = DetectPeriod(slow_cols_steps, opt, &starts);
  if (job_period && out.job.episodes.size() >= opt.min_periodic_episodes) {
    out.findings.push_back(PeriodicJobFinding(out.job, *job_period, opt));
    return;
  }
  // Not periodic: a stretch too short is a spike, and one inside the
  // profiler's window is the profiler's cost.
  std::vector<Episode> kept;
  const std::optional<StepSpan> prof = ProfilerSlowedSteps(out.job, opt);
  for (Episode& e : out.job.episodes) {
    if (e.steps < opt.min_episode_steps) continue;
    if (prof && prof->Holds(e.start_step) && prof->Holds(e.end_step)) {
      out.job.profiler_episodes.push_back(e);
      continue;
    }
    kept.push_back(e);
  }
  out.job.episodes = std::move(kept);
  if (!out.job.profiler_episodes.empty()) {
    out.findings.push_back(ProfilerWindowFinding(out.job, opt));
  }
  const auto& eps = out.job.episodes;
  size_t n = 0;
  for (const Episode& e : eps) {
    if (n++ >= kMaxEpisodeFindings) break;
    out.findings.push_back(JobSlowdownFinding(m, out.job, e, opt));
  }
  if (eps.size() > kMaxEpisodeFindings) {
    out.findings.back().message += fmt::format(" (and {} more episodes, see the JSON report)",
                                               eps.size() - kMaxEpisodeFindings);
  }
}

// The job's own step time changed level once (level_shift.h), the profiled
// steps and their warm-up and export left out, and the steps fewer than 90%
// of the ranks logged.
std::optional<LevelShift> JobLevelShift(const StepMetrics& m, const JobStepStats& job,
                                        const StepDetectorOptions& opt) {
  int64_t skip_first = 1, skip_last = 0;
  if (std::optional<StepSpan> prof = ProfilerSlowedSteps(job, opt)) {
    skip_first = prof->first;
    skip_last = prof->last;
  }
  // Steps most ranks logged only: the median of another set of ranks (a
  // restart, ranks joining or leaving) moves without any fault.
  const size_t most =
      m.step_ranks.empty() ? 0 : *std::max_element(m.step_ranks.begin(), m.step_ranks.end());
  std::vector<double> median_s = m.step_median_s;
  for (size_t c = 0; c < median_s.size() && c < m.step_ranks.size(); ++c) {
    if (10 * m.step_ranks[c] < 9 * most) median_s[c] = 0;
  }
  return MeasureLevelShift(m.step_numbers, median_s, skip_first, skip_last,
                           job.step_noise_sigma.value_or(0));
}

Finding SynchronisedFinding(const StepMetrics& m, const JobStepStats& job,
                            const StepDetectorOptions& opt) {
  Finding f = MakeFinding(FindingCode::kStepsSynchronised);
  f.entity.job = true;
  f.confidence = opt.confidence.synchronised;
  f.message = fmt::format(
      "step times are synchronised across {} ranks (per-step p90-p10 spread {:.2f}%, every "
      "rank's median within {:.2f}% of the steps' medians): each step waits for the slowest "
      "rank in the collective, so step times cannot name the culprit",
      m.series.size(), 100 * *job.sync_spread, 100 * *job.sync_rank_offset);
  // Traces given, of steps outside the job's slowdown: they cannot time it.
  if (const Episode* untraced = EpisodeOutsideProfile(job)) {
    f.next_steps.push_back(fmt::format(
        "profile 2 steps inside the slowdown of steps {}-{} on every rank (torch.profiler "
        "schedule(skip_first={}, wait=0, warmup=1, active=2)): the traces given cover steps "
        "{}-{}, outside it, where the culprit is not slow",
        untraced->start_step, untraced->end_step, untraced->start_step, job.profiled_steps->first,
        job.profiled_steps->last));
  } else {
    f.next_steps.push_back(
        "add profiler traces of 2 steps from every rank (or at least a suspect and a healthy "
        "rank): the culprit arrives last at each collective and waits least");
  }
  f.next_steps.push_back(
      "or log compute-only step time (before the gradient all-reduce) on every rank");
  return f;
}

}  // namespace

bool ProfileMisses(const JobStepStats& job, const Episode& e) {
  const std::optional<LogStepRange>& prof = job.profiled_steps;
  return prof && (e.end_step < prof->first || e.start_step > prof->last);
}

const Episode* EpisodeOutsideProfile(const JobStepStats& job) {
  for (const Episode& e : job.episodes) {
    if (ProfileMisses(job, e)) return &e;
  }
  return nullptr;
}

bool StepsSynchronised(const StepMetrics& m, const StepDetectorOptions& opt) {
  return m.comparable && m.job.sync_spread && *m.job.sync_spread < opt.sync_spread &&
         m.job.sync_rank_offset && *m.job.sync_rank_offset < opt.sync_rank_offset;
}

StepAnalysis DecideSteps(const StepMetrics& m, const StepDetectorOptions& opt) {
  StepAnalysis out;
  if (m.series.empty()) return out;
  out.ranks = m.ranks;
  out.job = m.job;
  out.job.synchronised = StepsSynchronised(m, opt);
  if (!m.comparable) out.findings.push_back(NoPeersFinding(m, opt));
  if (m.comparable && !m.group_stage.empty() && !out.job.synchronised) {
    if (std::optional<Finding> f = StageImbalanceFinding(m, opt))
      out.findings.push_back(std::move(*f));
  }
  // Per-rank decisions.
  for (size_t r = 0; m.comparable && !out.job.synchronised && r < m.series.size(); ++r) {
    const RankStepStats& st = out.ranks[r];
    if (!st.seconds || st.steps_used < 3) continue;
    RankPattern p = PatternOf(m, r, opt);
    if (!p.any()) continue;
    out.ranks[r].flagged = true;
    out.findings.push_back(StragglerFinding(m, r, p, out, opt));
  }
  if (m.comparable && !out.job.synchronised) {
    if (std::optional<Finding> f = JitterFinding(m, out, opt))
      out.findings.push_back(std::move(*f));
  }
  DecideJobSlowdowns(m, opt, out);
  out.job.level_shift = JobLevelShift(m, out.job, opt);
  if (out.job.synchronised) out.findings.push_back(SynchronisedFinding(m, out.job, opt));
  return out;
}

std::string_view StepBasisName(StepBasis b) {
  return b == StepBasis::kComputeTime ? "compute_time" : "step_time";
}

std::optional<Run> ComputeOnlyRun(const Run& run, const StepDetectorOptions& opt) {
  size_t with_compute = 0;
  for (const StepSeries& s : run.ranks) {
    if (s.steps.empty()) continue;
    size_t n = static_cast<size_t>(std::count_if(
        s.steps.begin(), s.steps.end(), [](const StepRecord& r) { return r.compute_ns > 0; }));
    if (static_cast<double>(n) < opt.min_compute_share * static_cast<double>(s.steps.size()))
      return std::nullopt;
    ++with_compute;
  }
  if (with_compute < 2) return std::nullopt;
  Run out;
  out.ranks.reserve(run.ranks.size());
  for (const StepSeries& s : run.ranks) {
    if (s.steps.empty()) continue;
    StepSeries& c = out.ranks.emplace_back();
    c.info = s.info;
    c.file = s.file;
    c.steps.reserve(s.steps.size());
    for (const StepRecord& r : s.steps) {
      if (r.compute_ns <= 0) continue;
      StepRecord& x = c.steps.emplace_back(r);
      x.duration_ns = r.compute_ns;
    }
  }
  return out;
}

namespace {

// One pass of the detector over `run`'s durations, read as `basis`.
struct StepPass {
  StepMetrics metrics;
  StepAnalysis analysis;
};
StepPass AnalyzeOnce(const Run& run, StepBasis basis, const StepDetectorOptions& opt) {
  StepPass p;
  p.metrics = MeasureSteps(run, opt);
  p.metrics.basis = basis;
  if (p.metrics.series.empty()) return p;
  if (p.metrics.comparable && !StepsSynchronised(p.metrics, opt)) MeasureOnsets(p.metrics, opt);
  p.analysis = DecideSteps(p.metrics, opt);
  if (std::optional<LevelShift>& ls = p.analysis.job.level_shift) {
    ls->start_time =
        ShiftStartTime(run, p.metrics.series, p.metrics.step_numbers, p.metrics.step_median_s,
                       p.analysis.job.profiled_steps, ls->first_step);
  }
  p.analysis.job.basis = basis;
  p.analysis.job.throughput_lost = ThroughputLost(p.metrics, p.analysis.ranks);
  return p;
}

// Per-rank findings come from the compute pass, the job's own slowdowns
// from the end-to-end pass.
bool IsPerRankFinding(FindingCode code) {
  return code == FindingCode::kStepStraggler || code == FindingCode::kStepStageImbalance ||
         code == FindingCode::kJitter || code == FindingCode::kStepsSynchronised ||
         code == FindingCode::kNoPeers;
}

// Per step the compute pass analysed, the end-to-end pass's median step time
// at that step (0 where it has none): what the compute pass's flagged ranks
// cost is read against these.
std::vector<double> EndToEndStepSeconds(const StepPass& whole, const StepPass& compute) {
  const std::vector<int64_t>& steps = whole.metrics.step_numbers;
  std::vector<double> out;
  out.reserve(compute.metrics.step_numbers.size());
  for (int64_t step : compute.metrics.step_numbers) {
    auto it = std::lower_bound(steps.begin(), steps.end(), step);
    out.push_back(it != steps.end() && *it == step
                      ? whole.metrics.step_median_s[static_cast<size_t>(it - steps.begin())]
                      : 0.0);
  }
  return out;
}

}  // namespace

StepAnalysis AnalyzeStepTimes(const Run& run, const StepDetectorOptions& opt) {
  StepPass whole = AnalyzeOnce(run, StepBasis::kStepTime, opt);
  std::optional<Run> compute_run = ComputeOnlyRun(run, opt);
  if (!compute_run) return std::move(whole.analysis);
  StepPass compute = AnalyzeOnce(*compute_run, StepBasis::kComputeTime, opt);
  StepAnalysis out;
  out.job = std::move(whole.analysis.job);
  out.job.basis = StepBasis::kComputeTime;
  out.job.step_times_synchronised = out.job.synchronised;
  out.job.synchronised = compute.analysis.job.synchronised;
  out.job.throughput_lost =
      ThroughputLost(compute.metrics, compute.analysis.ranks, EndToEndStepSeconds(whole, compute));
  out.ranks = std::move(compute.analysis.ranks);
  for (Finding& f : compute.analysis.findings) {
    if (IsPerRankFinding(f.code)) out.findings.push_back(std::move(f));
  }
  for (Finding& f : whole.analysis.findings) {
    if (!IsPerRankFinding(f.code)) out.findings.push_back(std::move(f));
  }
  // compute.metrics points into compute_run, which dies here; the analysis
  // holds values only.
  return out;
}

}  // namespace laggard
