// Step-time detector: which rank is slow, from per-rank step times alone.
// The verdict stage (AnalyzeRun) and the step bench call AnalyzeStepTimes();
// tests call its parts, MeasureSteps() / MeasureOnsets() and DecideSteps().
//
// Assumption: ranks of one job do the same work per step (or the same work
// within a pipeline stage when stages are known), so a healthy rank's step
// time matches its peers' to within normal variation between same-model GPUs
// (< 5% per the article). Only step times measured *without* the collective
// (compute-only, or a host running ahead) differ per rank: in synchronous
// training an end-to-end step waits for the slowest rank, so all ranks report
// the same time. The detector recognises that case and says so instead of
// blaming anyone.
//
// Metrics (MeasureSteps, per rank, after warm-up):
//   excess      median step time / median of peers' medians - 1
//   z           excess in units of the peers' robust spread (1.4826 MAD,
//               floored at min_peer_spread)
//   total excess its total time / its peers' mean time on the same steps
//               - 1, each time capped at its step's median + max(5
//               sigma_noise, 4 flag_threshold) of it
//   x[s]        step s's time / its peer group's median at step s - 1 (own
//               history); onsets: change-point segments of x (MeasureOnsets,
//               change_point.h, shift >= flag_threshold), each with its
//               segment z (RankOnsets::segment_z)
//   slow steps  steps with x >= max(slow_step_excess, slow_step_sigmas x
//               sigma_noise), sigma_noise the robust spread of every x
//   sync spread median over steps of (p90 - p10) / median across ranks
//   rank offset median over a rank's steps of (its time / the step's median
//               across all ranks - 1); sync offset = the largest |rank offset|
//   spikes      steps whose median over ranks is >= max(spike_min,
//               spike_sigmas x sigma of the per-step medians) over the median
//               step (>= min_steps_for_spikes steps)
// Decisions (DecideSteps; defaults, origin):
//   straggler   excess >= flag_threshold (5%) and z >= min_z (3), or a
//               change-point segment of x with median >= 5% that stands out
//               of the noise: (its median - the rest's median) / (sigma_noise
//               * sqrt(1/n + 1/n_rest)) >= segment_min_z, n its points and
//               n_rest the others (article: < 5% is
//               normal variation; >= strong_threshold, 15%, is almost surely a
//               straggler: reported as the band; z 3: judgement; segment z 5:
//               measured, segments of pure noise in 600 real DDP runs reached
//               4.2, bench/realjobs); slow over the whole run (either way),
//               its total time must also exceed its peers' mean time on the
//               same steps by min_total_excess (2.5%, half of
//               flag_threshold; total_excess): ranks in lockstep
//               take the same total time, and a median above its peers' is
//               then the shape of its step times (measured: a healthy DDP
//               rank's median +6% with its total within 0.5%)
//   periodic    >= min_bursts (4) bursts of slow steps (slow_step_excess
//               10%, slow_step_sigmas 6: judgement, above the article's 5%
//               band so that jitter rarely qualifies), every gap within
//               max(1, period_tolerance = 10%) of the median gap (judgement)
//   intermittent >= intermittent_min_steps (3) slow steps holding >=
//               intermittent_share (half) of the job's slow steps, >= 3 ranks
//               (judgement)
//   jitter      slow steps spread over >= jitter_min_ranks (3) ranks, none
//               of them flagged (judgement)
//   synchronised sync spread < sync_spread (0.5%: timer placement differs by
//               a few ms on a ~1 s step; independent per-rank jitter of 1%
//               gives ~2.6%) and sync offset < sync_rank_offset (1%: end to
//               end, every rank's steps end at the same collective, so their
//               durations add up to the same wall time and no rank's median
//               can stay apart; a compute-only straggler at the 5% flag
//               threshold is 5x above). p90 - p10, unlike max - min, does not
//               widen with the rank count (max - min read 0.65% at 16,384
//               ranks of synchronised logs); the offset test keeps one rank
//               that is consistently slow from hiding inside the quantiles.
//   stage imbalance one pipeline stage's median >= flag_threshold above the
//               other stages' and its ranks' spread (1.4826 MAD) < 1 /
//               stage_separation (3) of the gap: they agree with each other
//               (judgement); stages form peer groups when each has >=
//               min_stage_ranks (3) ranks
//   job slowdown per-step median across ranks >= episode_factor (1.3) x the
//               job's 25th percentile step time (the article's 0.8 s -> 8 s
//               is 10x) and >= 1 + episode_sigmas (4) x step_noise_sigma
//               over it (real CPU jobs here: sigma 16-22% on a loaded host,
//               docs/accuracy.md), with >= min_steps_for_episodes (10) steps;
//               periodic when >= min_periodic_episodes (3) episodes recur by
//               the periodic rule above; otherwise an episode needs >=
//               min_episode_steps (3) consecutive steps: shorter ones are
//               spikes (jitter), never a job-wide slowdown; an episode wholly
//               inside the profiled steps, widened by profiler_warmup_steps
//               (2) before them and profiler_export_steps (1) after, is the
//               profiler's overhead (an info finding, not a slowdown):
//               torch.profiler's warm-up steps record like the active ones
//               (a real job's episode ran from its one warm-up step into the
//               window), and the step after the last one exports the trace;
//               at most 10 job-slowdown findings,
//               the last one counting the rest
//   spike       (metric only: spikes name no one; spike_min 2.5% and
//               spike_sigmas 5 sit below the article's 5% band on purpose,
//               the verdict uses them only to corroborate a GPU that idles
//               alone at the same moments)
//
//   compute basis when every rank logs its compute-only step time
//               (StepRecord::compute_ns: a compute column, the agent's
//               phase_compute_s, laggard_step_phase_seconds{phase="compute"})
//               on >= min_compute_share (half) of its steps, the per-rank
//               decisions (stragglers, stage imbalance, jitter,
//               synchronised) read the compute times: end to end, a
//               synchronous step waits for the slowest rank and every rank
//               reports the same time; compute time is what differs (the
//               article's remedy). The job's own slowdowns (episodes,
//               spikes, the profiler's window) still read the end-to-end
//               steps, which a slow network or a pause lengthens too. What
//               the flagged ranks cost: the slowest unflagged rank's compute
//               in place of the slowest rank's, per step, over the sum of the
//               end-to-end step medians.
//
// Thread-safety: every function here is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_STEPS_STEP_TIME_DETECTOR_H_
#define LAGGARD_ANALYSIS_STEPS_STEP_TIME_DETECTOR_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/steps/level_shift.h"
#include "analysis/steps/profiled_steps.h"
#include "base/parallel.h"
#include "base/stats/change_point.h"
#include "base/stats/robust_stats.h"
#include "model/run.h"

namespace laggard {

struct StepDetectorOptions {
  size_t warmup_steps = 5;  // skipped per series when >= 3 steps remain
  double flag_threshold = 0.05;
  double strong_threshold = 0.15;
  double min_z = 3.0;
  double segment_min_z = 5.0;
  double min_total_excess = 0.025;
  double min_peer_spread = 0.005;
  double slow_step_excess = 0.10;
  double slow_step_sigmas = 6;
  size_t min_bursts = 4;
  double period_tolerance = 0.1;
  size_t intermittent_min_steps = 3;
  double intermittent_share = 0.5;
  size_t jitter_min_ranks = 3;
  double sync_spread = 0.005;
  double sync_rank_offset = 0.01;
  size_t min_stage_ranks = 3;
  double stage_separation = 3;
  // The run's parallel layout (analysis/common/run_layout.h), when one is
  // stated: it gives the stage of ranks whose RankInfo has none.
  std::optional<ParallelLayout> layout;
  double episode_factor = 1.3;
  double episode_sigmas = 4;
  size_t min_episode_steps = 3;
  int64_t profiler_warmup_steps = 2;
  int64_t profiler_export_steps = 1;
  size_t min_steps_for_episodes = 10;
  size_t min_periodic_episodes = 3;
  double spike_min = 0.025;
  double spike_sigmas = 5;
  size_t min_steps_for_spikes = 10;
  double min_compute_share = 0.5;
  // Threads for the per-rank and per-step passes (0: one per core); runs of
  // fewer than ~2^18 step records stay on the caller's thread. The result
  // does not depend on it (base/parallel.h).
  unsigned threads = 0;
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double no_peers = 1.0;                      // step.no_peers
    double stage_imbalance = 0.7;               // step.stage_imbalance
    double straggler_strong = 0.9;              // step.straggler, excess >= strong_threshold
    double straggler = 0.8;                     // step.straggler, excess >= 10%
    double straggler_weak = 0.65;               // step.straggler, below 10% excess
    double straggler_intermittent_max = 0.6;    // step.straggler, intermittent pattern
    double straggler_few_steps_penalty = 0.15;  // step.straggler, < 20 steps used
    double straggler_min = 0.1;                 // step.straggler, floor after the penalty
    double straggler_max = 0.95;                // step.straggler, ceiling
    double jitter = 0.8;                        // step.jitter
    double periodic_slowdown = 0.8;             // step.periodic_slowdown
    double job_slowdown = 0.8;                  // step.job_slowdown
    double profiler_window = 0.8;               // step.profiler_window
    double synchronised = 0.95;                 // step.synchronised
  };
  Confidences confidence;
};

// What the per-rank comparison read: end-to-end step times, or the
// compute-only part of each step (see "compute basis" above).
enum class StepBasis : uint8_t { kStepTime, kComputeTime };
std::string_view StepBasisName(StepBasis b);  // "step_time", "compute_time"

struct RankStepStats {
  RankInfo info;
  size_t steps_total = 0;
  size_t steps_used = 0;           // after warm-up
  std::optional<Summary> seconds;  // of step durations in seconds
  std::optional<double> excess;    // vs peers' median
  std::optional<double> z;
  // Its total time over its steps / its peers' mean time on the same steps
  // - 1 (its group's peers; steps with at least one of them; each time
  // capped at its step's median + max(5 sigma_noise, 4 flag_threshold) of
  // it). ~0 on every rank of a job whose ranks run in lockstep,
  // whatever their medians.
  std::optional<double> total_excess;
  double slowest_share = 0;  // share of steps where this rank was the slowest
  bool flagged = false;
};

struct Episode {
  int64_t start_step = 0;
  int64_t end_step = 0;
  size_t steps = 0;
  std::optional<TimeNs> start_time;
  double median_step_s = 0;
  double baseline_step_s = 0;
  std::optional<int32_t> slowest_rank;
  double slowest_share = 0;  // share of the episode's steps where it was slowest
};

struct JobStepStats {
  size_t ranks = 0;
  size_t steps = 0;  // distinct step numbers analysed
  // The first step analysed: the steps before it are warm-up (each series
  // skips its first warmup_steps), which step-time charts leave off their scale.
  std::optional<int64_t> first_step;
  std::optional<int64_t> last_step;  // the last step analysed
  std::optional<double> median_step_s;
  std::optional<double> baseline_step_s;   // 25th percentile of per-step medians
  std::optional<double> sync_spread;       // median per-step (p90 - p10) / median
  std::optional<double> sync_rank_offset;  // largest |rank offset| (see above)
  bool synchronised = false;               // of the times compared (`basis`)
  StepBasis basis = StepBasis::kStepTime;
  // With the compute basis: whether the end-to-end step times are
  // synchronised (they usually are; the compute times then tell).
  bool step_times_synchronised = false;
  std::optional<double> noise_sigma;  // per-step relative noise, robust
  // Noise of the per-step medians relative to the baseline, from the MAD of
  // consecutive differences / sqrt(2) (blind to a level shift).
  std::optional<double> step_noise_sigma;
  // The logged steps the profiler traced (ProfiledLogSteps), and the
  // episodes inside them: profiling slows the steps it records.
  std::optional<LogStepRange> profiled_steps;
  std::vector<Episode> profiler_episodes;
  std::vector<Episode> episodes;
  // Isolated whole-job slow steps (too short or too small for an episode):
  // see "spikes" above; with their excess (0.2 = +20%).
  std::vector<int64_t> spike_steps;
  std::vector<double> spike_excess;
  // Their seconds over the median step, over every step's seconds from the
  // first spike on, the profiled steps left out: what they cost since then
  // (a pause culprit's price); nullopt unless every spike left is isolated.
  std::optional<double> spike_cost;
  // The first spike spike_cost counts from.
  std::optional<int64_t> spike_cost_from;
  std::optional<double> throughput_lost;  // what-if without the flagged ranks
  // The job's step time changed level once (level_shift.h): what a fault
  // that began mid-run costs, measured before and after.
  std::optional<LevelShift> level_shift;
};

// The logged steps the profiler slowed: the profiled ones, widened by
// profiler_warmup_steps before them and profiler_export_steps after (see
// "job slowdown" above); nullopt when the traces' steps were not found in
// the logs.
struct StepSpan {
  int64_t first = 0;
  int64_t last = 0;
  bool Holds(int64_t step) const { return step >= first && step <= last; }
};
inline std::optional<StepSpan> ProfilerSlowedSteps(const JobStepStats& job,
                                                   const StepDetectorOptions& opt) {
  if (!job.profiled_steps) return std::nullopt;
  return StepSpan{job.profiled_steps->first - opt.profiler_warmup_steps,
                  job.profiled_steps->last + opt.profiler_export_steps};
}

struct StepAnalysis {
  std::vector<RankStepStats> ranks;
  JobStepStats job;
  std::vector<Finding> findings;
};

// A rank's own history, x[s] above, as DecideSteps reads it: the step of its
// first point and the change-point segments of the series (indices into x)
// with the step numbers where each begins and ends.
struct RankOnsets {
  size_t points = 0;                  // length of x
  std::optional<int64_t> first_step;  // step of x[0]
  std::vector<Segment> segments;
  std::vector<int64_t> segment_first_step;  // step of x[segment.begin]
  std::vector<int64_t> segment_last_step;   // step of x[segment.end - 1]
  // How far each segment stands out of the noise: (its median - the other
  // points' median) / (sigma_noise * sqrt(1/n + 1/n_rest)); +inf with no
  // noise or for a segment that is the whole series (nothing to stand out
  // of: its median >= flag_threshold and TotalSlow decide); not measured
  // (fewer z than segments) counts as +inf.
  std::vector<double> segment_z;
};

// What MeasureSteps() measures. Per-rank vectors are indexed like `series`;
// per-step vectors like `step_numbers`.
struct StepMetrics {
  // The series analysed (run.ranks, else run.unattributed), for the ranks'
  // identity and the steps' wall clock and source in findings.
  std::vector<const StepSeries*> series;
  StepBasis basis = StepBasis::kStepTime;  // what the series' durations are
  bool attributed = false;                 // the series carry ranks
  bool comparable = false;                 // attributed and >= 2 series: peers exist
  std::vector<int64_t> step_numbers;       // the analysed steps, ascending
  // Per step across all ranks: median seconds (0 where none logged it), how
  // many ranks logged it, and the index of the slowest (-1: none).
  std::vector<double> step_median_s;
  std::vector<size_t> step_ranks;
  std::vector<int32_t> step_slowest;
  // Step seconds, column-major (one column of series.size() per step, NaN
  // where missing): the what-if of ThroughputLost().
  ParallelBuffer<float> seconds_by_step;
  // Peer groups: pipeline stages (group_stage[g] the stage number) when
  // every rank has one and every stage >= min_stage_ranks ranks, else one
  // group of all ranks (group_stage empty).
  std::vector<size_t> group_of;
  std::vector<int32_t> group_stage;
  // Per group, its ranks' median step seconds; per rank, the median of its
  // group's (0 when none). Filled when comparable.
  std::vector<std::vector<double>> group_rank_medians_s;
  std::vector<double> peer_median_s;
  // RankStepStats without `flagged`; JobStepStats without `synchronised`,
  // `episodes` and `throughput_lost`, which DecideSteps / ThroughputLost add.
  std::vector<RankStepStats> ranks;
  JobStepStats job;
  // Slow steps (see above) of each rank with their x, when comparable; the
  // threshold they passed; the count over all ranks.
  double slow_step_threshold = 0;
  std::vector<std::vector<int64_t>> slow_steps;
  std::vector<std::vector<double>> slow_step_excess;
  size_t slow_events = 0;
  // Filled by MeasureOnsets for ranks with >= 3 steps used; empty before.
  std::vector<RankOnsets> onsets;

  // Internal to the metric functions: the row-major matrix and the
  // per-group medians of each step that x[s] divides by.
  ParallelBuffer<float> seconds_by_rank;
  std::vector<double> group_step_median_s;  // [group * steps + step]
  std::vector<size_t> group_step_ranks;
};

// Whether rank `st` is slow over the whole run by its total time: its
// total_excess >= min_total_excess, or not measured.
bool TotalSlow(const RankStepStats& st, const StepDetectorOptions& opt);

// Whether rank `st`'s median excess is >= flag_threshold and TotalSlow
// (slow over the whole run with no test of how far it stands out of its
// peers' spread).
bool SlowByMedianAndTotal(const RankStepStats& st, const StepDetectorOptions& opt);

// Whether rank `st` straggles over the whole run: SlowByMedianAndTotal and
// z >= min_z.
bool SlowOverTheRun(const RankStepStats& st, const StepDetectorOptions& opt);

// Every metric except the onsets. Reads warmup_steps, min_stage_ranks,
// flag_threshold (the totals' cap), threads and the spike and slow-step
// thresholds of `options`.
StepMetrics MeasureSteps(const Run& run, const StepDetectorOptions& options);
// The ranks' own-history onsets (change points with a shift of at least
// flag_threshold), for ranks with >= 3 steps used. AnalyzeStepTimes calls it
// only when the job is comparable and not synchronised: only then is any
// rank judged.
void MeasureOnsets(StepMetrics& metrics, const StepDetectorOptions& options);
// The synchronised decision (see above).
bool StepsSynchronised(const StepMetrics& metrics, const StepDetectorOptions& options);

// Whether the profiled steps miss episode `e` entirely (the traces cannot
// time it); false when which steps were profiled is unknown.
bool ProfileMisses(const JobStepStats& job, const Episode& e);
// The first whole-job slowdown episode ProfileMisses(); nullptr when none.
const Episode* EpisodeOutsideProfile(const JobStepStats& job);
// The findings, in this order: no peers, stage imbalance, stragglers (by
// rank index), jitter, job slowdowns, synchronised; with the metrics'
// numbers, the flagged ranks, the job's episodes and `synchronised`
// (throughput_lost is ThroughputLost's).
StepAnalysis DecideSteps(const StepMetrics& metrics, const StepDetectorOptions& options);
// What the flagged ranks cost: 1 - (sum over steps of the slowest unflagged
// rank's time) / (sum of the slowest rank's time); nullopt when no rank is
// flagged or peers are not comparable. With `step_s` (per analysed step,
// the end-to-end step time; <= 0 where unknown), the metrics are compute
// times and the cost is the sum of (slowest - slowest unflagged, at most the
// step) over the sum of step_s, over the steps that have both.
std::optional<double> ThroughputLost(const StepMetrics& metrics,
                                     const std::vector<RankStepStats>& ranks,
                                     std::span<const double> step_s = {});

// The ranks' compute-only steps as a run of their own (durations = the
// compute times, steps without one left out), when every rank with steps
// has a compute time on >= min_compute_share of them and >= 2 ranks do;
// nullopt otherwise. Only `ranks` is filled.
std::optional<Run> ComputeOnlyRun(const Run& run, const StepDetectorOptions& options);

// MeasureSteps, MeasureOnsets, DecideSteps, ThroughputLost; on the compute
// basis when ComputeOnlyRun() gives one (then per-rank decisions from it,
// job slowdowns from `run`'s end-to-end steps).
StepAnalysis AnalyzeStepTimes(const Run& run, const StepDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_STEPS_STEP_TIME_DETECTOR_H_
