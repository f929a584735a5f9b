// The verdict: one answer from all findings — culprit(s), cause, confidence,
// what it costs, what to do first.
//
// Evidence sources so far: the step-time detector and the trace detector.
// A culprit named by one signal alone is capped at kSingleSourceCap (DESIGN:
// single signals lie); corroboration raises confidence (trace late arrival
// + the reason it is late, + the step-time detector naming the same rank),
// contradiction (the two detectors name different ranks) lowers it.
// Hardware and network detectors will plug in the same way.

#ifndef LAGGARD_VERDICT_VERDICT_H_
#define LAGGARD_VERDICT_VERDICT_H_

#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/step_time_detector.h"
#include "analysis/trace_detector.h"
#include "model/run.h"

namespace laggard {

inline constexpr double kSingleSourceCap = 0.7;

enum class VerdictStatus { kStraggler, kNoStraggler, kInconclusive, kJobWide };
std::string_view VerdictStatusName(VerdictStatus s);  // "straggler", "no_straggler", ...

struct Culprit {
  Entity entity;
  std::string cause_class;           // compute_slow | communication | ... | unknown
  std::optional<std::string> cause;  // thermal | power_cap | ... (nullopt: not known)
  double confidence = 0;
  std::optional<double> slowdown;
  std::optional<int64_t> onset_step;
  std::optional<std::string> pattern;
};

struct Verdict {
  VerdictStatus status = VerdictStatus::kNoStraggler;
  std::string summary;  // the terminal's first line, starting with "verdict:"
  std::vector<Culprit> culprits;  // most likely first
  std::optional<double> throughput_lost;
  std::optional<double> gpu_hours_per_day;
  std::vector<std::string> next_steps;
};

// "high" (>= 0.8), "medium" (>= 0.5) or "low".
std::string_view ConfidenceWord(double confidence);

Verdict DecideVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces);
// Step times only (tests, benchmarks).
inline Verdict DecideVerdict(const Run& run, const StepAnalysis& steps) {
  return DecideVerdict(run, steps, TraceAnalysis());
}

}  // namespace laggard

#endif  // LAGGARD_VERDICT_VERDICT_H_
