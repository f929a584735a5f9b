// Stall detector: live, while a job runs, which rank stopped reporting steps
// while the others wait for it. Run by the node agent on its own ranks
// (agent/metrics.h: laggard_rank_stalled) and by `laggard watch` on every
// rank Prometheus has (AnalysisOptions::live_now_ns). Offline inputs have no
// "now": `laggard diagnose` runs only FindStallsAtHang() (below), when the
// ranks' own lines say the job hung.
//
// A synchronous job cannot finish a step without every rank: when one rank
// stops, the others stop one collective later. Step reports alone therefore
// name a rank only when it stopped *behind* the others: it never reported a
// step that they did report (it hangs after a collective, before its step
// ends: in the optimizer, the logging, the data loader of the next step), or
// the others went on reporting after it stopped (a job whose ranks do not
// wait for each other). A rank that hangs before a collective leaves every
// rank at the same step: that is a job stall, and which rank holds the others
// needs what only the ranks know (Flight Recorder dumps, py-spy).
//
// Metric, per rank: its last reported step S_r, when that report arrived
// (E_r: the step's end, or the receipt time), and its typical step time T_r
// (median of its recent step times). T = median of T_r over the ranks.
//   silent(r)  now - E_r > silence = 1.5 T + 5 s: no report in well over a
//              step. The alert must be up within 2 T + 10 s of the stop;
//              the remaining 0.5 T + 5 s is for scrapes and evaluation.
//   behind(r)  some other rank reported a later step (S_q > S_r), or went on
//              reporting after r fell silent (E_q > E_r + silence)
// Decision:
//   rank stalled  silent and behind, and the behind ranks are no more than
//                 the ranks ahead of them (when most ranks are behind, the
//                 few ahead are not evidence against all the others):
//                 hang.rank_stalled, one finding per rank
//   job stalled   every rank silent, none stalled: hang.job_stalled (no
//                 rank blamed; what to collect). A job that finished looks
//                 the same until the agent forgets its ranks (--rank-ttl).
// Ranks that reported fewer than `min_steps` steps are not judged: their
// typical step is unknown.
//
// Offline, once the ranks' own lines say the job hung (watchdog / gloo
// timeouts, analysis/hangs/hang_detector.h) but not which rank held it,
// FindStallsAtHang() applies the same "behind" rule to where the step logs
// end, with no clock: a minority of ranks whose last step is below the
// others' never finished a step the others finished (confidence 0.6: a log
// flushed late ends early too).
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_HANGS_STALL_DETECTOR_H_
#define LAGGARD_ANALYSIS_HANGS_STALL_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "model/run.h"
#include "model/source.h"
#include "model/time.h"

namespace laggard {

struct StallDetectorOptions {
  double silence_steps = 1.5;                   // silence = silence_steps * T + silence_floor
  DurationNs silence_floor_ns = 5'000'000'000;  //
  size_t min_steps = 3;                         // reports before a rank is judged
  size_t max_ranks_listed = 16;                 // ranks spelled out in a message
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double rank_stalled = 0.8;                // hang.rank_stalled, the others wait too
    double rank_stalled_others_go_on = 0.65;  // hang.rank_stalled, the others go on
    double job_stalled = 0.3;                 // hang.job_stalled
    double behind_at_hang = 0.6;              // hang.rank_stalled offline, step logs only
  };
  Confidences confidence;
};

// What is known of one rank's reports.
struct RankProgress {
  int32_t rank = 0;
  std::optional<std::string> host;
  std::optional<int32_t> gpu;
  int64_t last_step = 0;
  TimeNs last_report_ns = 0;  // end of its last reported step (0: no clock)
  DurationNs typical_ns = 0;  // median of its recent step times
  size_t reports = 0;
  std::optional<SourceRef> last_src;  // where its last step was read
};

struct StalledRank {
  int32_t rank = 0;
  int64_t last_step = 0;
  DurationNs silent_ns = 0;  // now - last report
  int64_t steps_behind = 0;  // the most advanced rank's step - last_step (>= 0)
};

struct StallAnalysis {
  bool judged = false;               // ran, with at least two judged ranks
  bool at_hang = false;              // FindStallsAtHang(): offline, no clock
  DurationNs typical_ns = 0;         // T
  DurationNs silence_ns = 0;         // the silence threshold
  std::vector<StalledRank> stalled;  // ascending rank
  bool job_stalled = false;
  std::optional<int64_t> job_step;  // the last step of the most advanced rank
  std::vector<Finding> findings;    // hang.rank_stalled per rank, or hang.job_stalled
};

StallAnalysis FindStalls(const std::vector<RankProgress>& ranks, TimeNs now_ns,
                         const StallDetectorOptions& options = {});
StallAnalysis FindStallsAtHang(const std::vector<RankProgress>& ranks,
                               const StallDetectorOptions& options = {});

// Each rank's progress from a run's step records (the records' ends;
// typical = median of the last 32 step times). With `need_clock`, ranks
// whose last record has no wall clock are left out.
std::vector<RankProgress> ProgressFromSteps(const Run& run, bool need_clock = true);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_STALL_DETECTOR_H_
