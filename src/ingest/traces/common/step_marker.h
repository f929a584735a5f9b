// A user-named step marker (`laggard diagnose --step-marker NAME`), shared by
// the trace readers: a range whose name is NAME marks one training step,
// where the loop does not call profiler.step() (no ProfilerStep#N) and names
// its own ranges, such as torch.profiler.record_function("train_step") in a
// Kineto trace or nvtx.range_push("train_step 12") in an Nsight Systems one.
//
//   "train_step"       a step, numbered by its order in the trace
//   "train_step 12"    step 12; the separator is one run of ' ', '_', '#',
//   "train_step#12"    ':', '=' or '-' (none needed before a digit:
//   "train_step12"     "train_step12")
//   "train_step_fwd"   not a step: a nested range must not count twice
//
// Names compare byte for byte (case matters), after the reader has decoded
// the JSON string. Pure functions.

#ifndef LAGGARD_INGEST_TRACES_COMMON_STEP_MARKER_H_
#define LAGGARD_INGEST_TRACES_COMMON_STEP_MARKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/trace.h"

namespace laggard {

struct MarkedStep {
  std::optional<int64_t> number;  // nullopt: the marker carried none
};

// Whether `name` is the marker `marker` (non-empty), and its step number.
std::optional<MarkedStep> MatchStepMarker(std::string_view marker, std::string_view name);

// One marker range of a trace, as read.
struct MarkerRange {
  std::optional<int64_t> number;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
};

// The steps of a trace's marker ranges: by their numbers when every range
// carries one (ranges of one number, on several threads, make one step from
// the earliest start to the latest end), else numbered 0, 1, ... in order of
// start (ranks profiled over the same steps then number them alike).
std::vector<TraceStep> StepsOfMarkers(std::vector<MarkerRange> ranges);

// Why `marker` cannot be a step marker ("" when it can): empty, over 200
// bytes, or holding a control character.
std::string CheckStepMarker(std::string_view marker);

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_STEP_MARKER_H_
