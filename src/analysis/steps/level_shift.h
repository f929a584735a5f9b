// The job's own step time changed level once: from step N on (and, when it
// recovered, until step M) every step took longer. What a fault that began
// mid-run costs is then measured, not modelled: 1 - (step time before) /
// (step time after). The verdict prices a culprit with it
// (ImpactMethod::kBeforeAfter) when the culprit's own onset, if known, is
// the shift's.
//
// Method: the per-step median across ranks (end-to-end step times), the
// profiled steps left out (profiling slows the steps it records), relative
// to its own median: x[s] = median_s[s] / median - 1. Change points by
// binary segmentation (change_point.h) with segments of >= min_segment
// steps and shifts of >= max(min_shift, noise_sigmas x the per-step noise
// sigma (JobStepStats::step_noise_sigma, blind to a level shift)). Only two
// shapes are a shift:
//   - two segments, the second higher: slower from its first step to the
//     end;
//   - three segments, the middle highest and the last back within half a
//     minimum shift of the first: an episode that recovered.
// Each level must be flat (its halves' medians within half a minimum shift of each other,
// relatively: a steady drift split in two is not a step). Anything else (a drop, two rises, a rise
// that settles elsewhere) is not one change and gives nothing: a cost from it could belong to any
// of them. before_s and during_s are the segments' medians of the raw per-step medians (a
// checkpoint step or a spike moves neither), and >= 80% of the steps on each side must sit on that
// side of the halfway mark between the two: a split that fell inside a change shorter than a
// segment is refused.
//
// Defaults (judgement): min_segment 10 steps (the episode rule's 3 is for
// 1.3x slowdowns; a 3% shift needs more steps to stand out of 1% noise);
// min_shift 2% (below it, same-SKU variation and timer placement); 5 noise
// sigmas (a shift 5 sigma of one step's noise, held over >= 10 steps, is
// ~15 standard errors of its mean).
//
// Cost: O(n log n) in steps. Pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_STEPS_LEVEL_SHIFT_H_
#define LAGGARD_ANALYSIS_STEPS_LEVEL_SHIFT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/steps/profiled_steps.h"
#include "model/run.h"

namespace laggard {

struct LevelShift {
  int64_t first_step = 0;            // the first step at the slower level
  std::optional<int64_t> last_step;  // its last step when the job recovered; none: to the end
  size_t steps = 0;                  // analysed steps at the slower level
  double before_s = 0;               // median step time outside it
  double during_s = 0;               // median step time inside it
  // Wall clock at the start of first_step (ShiftStartTime), when known: a
  // GPU's anomaly that began then is tied to the shift by time.
  std::optional<TimeNs> start_time;
  // 1 - before / during: the share of throughput lost while it lasts.
  double cost() const { return during_s > 0 ? 1 - before_s / during_s : 0; }
};

struct LevelShiftOptions {
  size_t min_segment = 10;
  double min_shift = 0.02;
  double noise_sigmas = 5;
};

// `step_numbers` ascending, `median_s` per step (<= 0 where no rank logged
// it), `skip_first` / `skip_last` an inclusive range of step numbers to leave
// out (the profiled window; skip_first > skip_last for none), `noise_sigma`
// the relative per-step noise.
std::optional<LevelShift> MeasureLevelShift(const std::vector<int64_t>& step_numbers,
                                            const std::vector<double>& median_s, int64_t skip_first,
                                            int64_t skip_last, double noise_sigma,
                                            const LevelShiftOptions& options = {});

// Wall clock at the start of logged step `step`: the median of its
// records' own start times over the series that logged one; else, when the
// profiled window is known (`profiled`: logged step = trace step + shift),
// the traces' start of the window's first step (median over the traces)
// moved back (or on) by the per-step medians of the logged steps between
// (`step_numbers` / `median_s` as MeasureLevelShift's). Nullopt when
// neither exists or a step between has no time. Looks at <= 64 series and
// traces (the median of 64 is as good as of all).
std::optional<TimeNs> ShiftStartTime(const Run& run, const std::vector<const StepSeries*>& series,
                                     const std::vector<int64_t>& step_numbers,
                                     const std::vector<double>& median_s,
                                     const std::optional<LogStepRange>& profiled, int64_t step);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_STEPS_LEVEL_SHIFT_H_
