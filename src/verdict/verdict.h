// The verdict: one answer from every detector's findings — culprit(s),
// cause, confidence, what it costs, what to do first. DecideVerdict() only
// combines findings; running the detectors is AnalyzeRun()'s job
// (analysis/analyze_run.h). Called by `laggard diagnose` and `laggard watch`
// (src/cli), the benchmarks and tests; the reports (src/report) print its
// result. Pure functions of their inputs: safe from any thread.
//
// Findings are grouped by entity (rank -> GPU -> host -> NIC -> switch):
//   1. a rank culprit comes from the traces (late arrival) or step times;
//   2. hardware findings on its GPU name the cause (compute_slow: thermal,
//      power_cap, clocks; communication: pcie_downgrade, nvlink_down) when
//      they overlap its slow steps; network findings on its host name a
//      communication cause when nothing says it computes slowly;
//   3. a host with strong network findings (port down, degraded link, low
//      nccl-tests bandwidth, socket fallback) is a culprit of its own, with
//      cause class communication (external when slow hosts share a switch);
//   4. when nothing names a rank, a host.pause finding (pause_detector.h)
//      names the rank that pauses, else one GPU's hardware finding is the
//      remaining hypothesis.
// When the evidence cannot decide, next steps say what to collect.
//
// The confidence rule (DESIGN: single signals lie). A culprit starts from
// its finding's confidence, capped at kSingleSourceCap while one kind of
// evidence names it. Each independent signal that agrees raises it, never
// above kMaxConfidence: by kAgreeingSignalGain when it points at the same
// rank or host (step times agreeing with the traces, a network finding on
// its host, a switch's hosts slowing with whole-job episodes), by
// kCauseObservedGain when it observes the cause itself (a GPU metric during
// the slow steps, a second observation of the same link, a PCIe link under
// a host named by bandwidth alone, episodes together with a
// communication-bound trace), by kErrorsGain for errors on its GPU. A
// signal that contradicts it (detectors naming different ranks, a hot GPU
// on a rank whose trace shows a host stall, an anomaly outside the slow
// steps) or a hypothesis no timing confirms (one GPU's hardware finding
// alone) caps it at kContradictedCap. The values are judgements, not
// measurements; bench/accuracy (docs/accuracy.md) scores the verdicts they
// give on simulated runs.

#ifndef LAGGARD_VERDICT_VERDICT_H_
#define LAGGARD_VERDICT_VERDICT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analyze_run.h"
#include "analysis/common/finding.h"
#include "analysis/steps/step_time_detector.h"
#include "analysis/traces/trace_detector.h"
#include "formats/cause_class.h"
#include "model/run.h"

namespace laggard {

inline constexpr double kSingleSourceCap = 0.7;
inline constexpr double kAgreeingSignalGain = 0.1;
inline constexpr double kCauseObservedGain = 0.15;
inline constexpr double kErrorsGain = 0.05;
inline constexpr double kMaxConfidence = 0.95;
inline constexpr double kContradictedCap = 0.5;
// Ranks late together with slow kernels and no hardware finding do more
// work per step (imbalance): inferred, not observed, so at most
// kImbalanceInferredCap when their hosts' GPU metrics show no hardware
// cause, kImbalanceAssumedCap when there are no metrics to rule one out.
inline constexpr double kImbalanceInferredCap = 0.6;
inline constexpr double kImbalanceAssumedCap = 0.5;
// A network finding names a host on its own when it is critical and at
// least this confident.
inline constexpr double kStrongNetworkConfidence = 0.65;
// Port counters naming a switch, with whole-job slowdown episodes: two
// indirect signals, at most this.
inline constexpr double kSwitchCountersCap = 0.85;
// ConfidenceWord(): "high" from kHighConfidence, "medium" from
// kMediumConfidence, else "low".
inline constexpr double kHighConfidence = 0.8;
inline constexpr double kMediumConfidence = 0.5;

// kCommBound: collective transfers take most of every rank's step, and no
// rank holds the others up, or one does by far less than the transfers
// cost (said beside it as a smaller problem): the network is slow for
// everyone, or one link of it that the traces cannot place (a ring runs at
// its slowest link).
enum class VerdictStatus { kStraggler, kNoStraggler, kInconclusive, kJobWide, kCommBound, kHang };
// "straggler", "no_straggler", "inconclusive", "job_wide",
// "communication_bound", "hang" (the job stopped: analysis/hangs/hang_detector.h).
std::string_view VerdictStatusName(VerdictStatus s);

struct Culprit {
  Entity entity;
  CauseClass cause_class = CauseClass::kUnknown;
  std::optional<std::string> cause;  // thermal | power_cap | ... (nullopt: not known)
  double confidence = 0;
  std::optional<double> slowdown;
  std::optional<int64_t> onset_step;
  std::optional<Pattern> pattern;
  // A group culprit (one host's ranks, a block of ranks late together):
  // every rank of it; empty for a single rank / host / NIC.
  std::vector<int32_t> ranks;
  // The evidence chain: one line per independent signal that supports (or
  // contradicts) this culprit, e.g. "GPU: 93 °C, SM clock -28% during the
  // slow steps".
  std::vector<std::string> evidence;
};

// How Verdict::throughput_lost was found. kReplay: the what-if replay of
// an op timeline (analysis/pipelines/pipeline_replay.h) removed the culprit and
// measured the step again. kUpperBound: what the others waited on the
// culprit (traces, step times), never more than 1 - 1/(1 + slowdown) of
// the culprit's own slowdown: a rank 1.24x as slow can cost at most 19%.
// kLowerBound: a pipeline stage's excess over the mean stage, from traces
// without a replay. kBeforeAfter: measured, the job's own step time before
// and after it changed level at the culprit's onset (analysis/steps/level_shift.h):
// 1 - before / after, while the change lasted (impact_first_step ..
// impact_last_step). kSlowSteps: measured, the seconds of the job's isolated
// slow steps (a pause culprit's) over the median step, over all its seconds
// since the first (from impact_first_step). Serialized by
// ImpactMethodName(); append, never rename.
enum class ImpactMethod : uint8_t { kUpperBound, kReplay, kLowerBound, kBeforeAfter, kSlowSteps };
// "upper_bound", "replay", "lower_bound", "before_after", "slow_steps"
std::string_view ImpactMethodName(ImpactMethod m);

struct Verdict {
  VerdictStatus status = VerdictStatus::kNoStraggler;
  std::string summary;            // the terminal's first line, starting with "verdict:"
  std::vector<Culprit> culprits;  // most likely first
  std::optional<double> throughput_lost;
  ImpactMethod impact_method = ImpactMethod::kUpperBound;
  // kBeforeAfter, kSlowSteps: the steps the figure was measured over (last:
  // none while it lasts to the end of the logs); unset for other methods.
  std::optional<int64_t> impact_first_step, impact_last_step;
  std::optional<double> gpu_hours_per_day;
  std::vector<std::string> next_steps;
  // The what-if replay of the op timeline the verdict comes from
  // (analysis/pipelines/pipeline_replay.h), when there is one.
  std::optional<WhatIf> whatif;
};

std::string_view ConfidenceWord(double confidence);

// How the summary names a culprit: "rank 3", "node-05 (mlx5_2 port 1)",
// "ranks 2-5 (node-01)", "the job".
std::string CulpritNameOf(const Culprit& c);

Verdict DecideVerdict(const Run& run, const Analyses& analyses);
// Step times and traces only (tests, benchmarks).
Verdict DecideVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces);
inline Verdict DecideVerdict(const Run& run, const StepAnalysis& steps) {
  return DecideVerdict(run, steps, TraceAnalysis());
}

}  // namespace laggard

#endif  // LAGGARD_VERDICT_VERDICT_H_
