// Step-time detector: which rank is slow, from per-rank step times alone.
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
// Metrics (per rank, after warm-up):
//   excess      median step time / median of peers' medians - 1
//   z           excess in units of the peers' robust spread (1.4826 MAD,
//               floored at 0.5%)
//   x[s]        step s's time / all ranks' median at step s - 1 (own history)
//   sync spread median over steps of (p90 - p10) / median across ranks
//   rank offset median over a rank's steps of (its time / the step's median
//               across all ranks - 1); sync offset = the largest |rank offset|
// Decisions (defaults, origin):
//   straggler   excess >= 5% and z >= 3, or a change-point segment of x with
//               median >= 5%  (article: < 5% is normal variation; >= 15% is
//               almost surely a straggler: reported as the band)
//   periodic    >= 4 bursts of slow steps (x >= max(10%, 6 sigma_noise)),
//               every gap within max(1, 10%) of the median gap
//   jitter      slow steps spread over >= 3 ranks, none holding half of them
//   synchronised sync spread < 0.5% (timer placement differs by a few ms on
//               a ~1 s step; independent per-rank jitter of 1% gives ~2.6%)
//               and sync offset < 1% (end to end, every rank's steps end at
//               the same collective, so their durations add up to the same
//               wall time and no rank's median can stay apart; a
//               compute-only straggler at the 5% flag threshold is 5x
//               above). p90 - p10, unlike max - min, does not widen with
//               the rank count (max - min read 0.65% at 16,384 ranks of
//               synchronised logs); the offset test keeps one rank that is
//               consistently slow from hiding inside the quantiles.
//   job slowdown per-step median across ranks >= 1.3 x the job's 25th
//               percentile step time (the article's 0.8 s -> 8 s is 10x)
//
// Thread-safety: Analyze() is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_STEP_TIME_DETECTOR_H_
#define LAGGARD_ANALYSIS_STEP_TIME_DETECTOR_H_

#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/robust_stats.h"
#include "model/run.h"

namespace laggard {

struct StepDetectorOptions {
  size_t warmup_steps = 5;
  double flag_threshold = 0.05;
  double strong_threshold = 0.15;
  double min_z = 3.0;
  double sync_spread = 0.005;
  double sync_rank_offset = 0.01;
  double episode_factor = 1.3;
};

struct RankStepStats {
  RankInfo info;
  size_t steps_total = 0;
  size_t steps_used = 0;  // after warm-up
  std::optional<Summary> seconds;  // of step durations in seconds
  std::optional<double> excess;    // vs peers' median
  std::optional<double> z;
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
  std::optional<double> median_step_s;
  std::optional<double> baseline_step_s;  // 25th percentile of per-step medians
  std::optional<double> sync_spread;       // median per-step (p90 - p10) / median
  std::optional<double> sync_rank_offset;  // largest |rank offset| (see above)
  bool synchronised = false;
  std::optional<double> noise_sigma;  // per-step relative noise, robust
  std::vector<Episode> episodes;
  // Isolated whole-job slow steps (too short or too small for an episode):
  // steps whose median over ranks is >= max(5%, 6 sigma of the per-step
  // medians) above the median step; with their excess (0.2 = +20%).
  std::vector<int64_t> spike_steps;
  std::vector<double> spike_excess;
  std::optional<double> throughput_lost;  // what-if without the flagged ranks
};

struct StepAnalysis {
  std::vector<RankStepStats> ranks;
  JobStepStats job;
  std::vector<Finding> findings;
};

StepAnalysis AnalyzeStepTimes(const Run& run, const StepDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_STEP_TIME_DETECTOR_H_
