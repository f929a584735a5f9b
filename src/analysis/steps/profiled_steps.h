// Which logged steps a run's profiler traces cover. The step-time detector
// calls ProfiledLogSteps() so that the steps the profiler slowed (recording
// every op costs time: +30-40% per step on the real CPU jobs of
// bench/realjobs) are not read as the whole job slowing down.
//
// A trace numbers its steps by its profiler (ProfilerStep#N), a log by the
// training loop, and the two need not agree: torch 1.13 names loop step i's
// range ProfilerStep#(i-1). The mapping is found from durations, which both
// measure: for each rank with a trace and a step series, the shift k in
// [-max_shift, max_shift] that makes trace step N's duration match logged
// step N + k best (the mean of |ln(trace / log)|, each clipped at 0.5),
// accepted when the median of |ln(trace / log)| is
// <= max_mismatch (5%: the two timers sit microseconds apart around the
// same loop) over >= 3 steps. Ranks that match must agree on k.
//
// Thread-safety: a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_STEPS_PROFILED_STEPS_H_
#define LAGGARD_ANALYSIS_STEPS_PROFILED_STEPS_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "model/run.h"

namespace laggard {

struct LogStepRange {
  int64_t first = 0;  // logged step numbers, inclusive
  int64_t last = 0;
  int64_t shift = 0;  // logged step = trace step + shift
  size_t ranks = 0;   // ranks whose durations gave the shift
};

std::optional<LogStepRange> ProfiledLogSteps(const Run& run, int64_t max_shift = 3,
                                             double max_mismatch = 0.05);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_STEPS_PROFILED_STEPS_H_
