// Collective matching: which collective calls of different ranks' traces are
// one instance of one collective. The trace detector's metric function
// (MeasureTraces, trace_detector.h) calls it once per analysis.
//
// Rule: a call is keyed by (process group, seq) when the trace records the
// group's sequence number, else by (process group, collective, message
// elements, n-th such call on the rank). An instance is kept when at least
// two ranks have a call of that key and no rank has two: a key seen twice on
// one rank is ambiguous (a group name reused by two groups) and is dropped.
// When every trace is CPU-only and has steps (torch's CPU traces: the gloo
// ranges run on the host, inside the ProfilerStep#N that issued them), the
// n-th is counted within the step that holds the call's start (the last
// step to start at or before it), as clock alignment matches them
// (ingest/traces/common/clock_alignment.h): a call lost at one trace's edge
// (a gloo range still open when the profiler stopped) then shifts no match
// of a later step. Device collectives are not keyed by step: a GPU kernel
// can run after the host's step range that launched it has ended.
//
// Thread-safety: a pure function.

#ifndef LAGGARD_ANALYSIS_TRACES_COLLECTIVE_MATCH_H_
#define LAGGARD_ANALYSIS_TRACES_COLLECTIVE_MATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/trace.h"

namespace laggard {

// One rank's call of a matched instance, on that rank's own clock.
struct Arrival {
  size_t rank_index;  // into the traces given to MatchCollectives
  TimeNs start;
  TimeNs end;
  uint64_t offset;  // byte offset of the call's event in its file
  size_t call;      // index into the rank's RankTrace::collectives
};

// The matched instances in key order, each with its arrivals by rank index.
std::vector<std::vector<Arrival>> MatchCollectives(const std::vector<const RankTrace*>& traces);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TRACES_COLLECTIVE_MATCH_H_
