// The ranks the step and trace detectors suspect, and when their slow steps
// ran: the hardware and network detectors look for a cause on these ranks
// (analyze_run.cc computes them once, after the step and trace detectors).

#ifndef LAGGARD_ANALYSIS_SUSPECTS_H_
#define LAGGARD_ANALYSIS_SUSPECTS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "model/run.h"

namespace laggard {

// The step and trace detectors' output (steps/step_time_detector.h,
// traces/trace_detector.h): only suspects.cc reads them.
struct StepAnalysis;
struct TraceAnalysis;

// A suspect rank, with the time of its slow steps when step start times are
// known.
struct SuspectRank {
  int32_t rank = 0;
  std::optional<TimeNs> slow_from_ns;
  std::optional<TimeNs> slow_to_ns;
};

// The step stragglers (from their onset to their last slow step), the trace
// detector's culprit and the ranks of its late groups, each once.
std::vector<SuspectRank> SuspectRanks(const Run& run, const StepAnalysis& steps,
                                      const TraceAnalysis& traces);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_SUSPECTS_H_
