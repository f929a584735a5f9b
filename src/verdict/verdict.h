// The verdict: one answer from all findings — culprit(s), cause, confidence,
// what it costs, what to do first.
//
// Evidence sources: the step-time, trace, hardware and network detectors.
// Findings are grouped by entity (rank -> GPU -> host -> NIC -> switch):
//   1. a rank culprit comes from the traces (late arrival) or step times;
//   2. hardware findings on its GPU name the cause (compute_slow: thermal,
//      power_cap, clocks, pcie_downgrade, nvlink_down) when they overlap its
//      slow steps; network findings on its host name a communication cause
//      when nothing says it computes slowly;
//   3. a host with strong network findings (port down, degraded link, low
//      nccl-tests bandwidth, socket fallback) is a culprit of its own, with
//      cause class communication (external when slow hosts share a switch).
// A culprit named by one signal alone is capped at kSingleSourceCap (DESIGN:
// single signals lie); each independent agreeing signal raises confidence
// (+0.1 to +0.15, at most 0.95); contradiction (detectors name different
// ranks, a hot GPU on a rank whose trace shows a host stall, an anomaly
// outside the slow steps) lowers it to at most 0.5. When the evidence cannot
// decide, next steps say what to collect.

#ifndef LAGGARD_VERDICT_VERDICT_H_
#define LAGGARD_VERDICT_VERDICT_H_

#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/hardware_detector.h"
#include "analysis/network_detector.h"
#include "analysis/rank_map.h"
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
  // A group culprit (one host's ranks, a block of ranks late together):
  // every rank of it; empty for a single rank / host / NIC.
  std::vector<int32_t> ranks;
  // The evidence chain: one line per independent signal that supports (or
  // contradicts) this culprit, e.g. "GPU: 93 °C, SM clock -28% during the
  // slow steps".
  std::vector<std::string> evidence;
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

// Every detector's output for one run.
struct Analyses {
  StepAnalysis steps;
  TraceAnalysis traces;
  HardwareAnalysis hardware;
  NetworkAnalysis network;
  RankMap ranks;
};

struct AnalysisOptions {
  StepDetectorOptions steps;
  HardwareDetectorOptions hardware;
  NetworkDetectorOptions network;
  std::optional<int32_t> gpus_per_node;  // placement rule for the rank <-> GPU join
};

// Runs every detector; hardware and network detectors get the ranks the
// step and trace detectors suspect, to relate anomalies to slow steps.
Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options);

Verdict DecideVerdict(const Run& run, const Analyses& analyses);
// Step times and traces only (tests, benchmarks).
Verdict DecideVerdict(const Run& run, const StepAnalysis& steps, const TraceAnalysis& traces);
inline Verdict DecideVerdict(const Run& run, const StepAnalysis& steps) {
  return DecideVerdict(run, steps, TraceAnalysis());
}

}  // namespace laggard

#endif  // LAGGARD_VERDICT_VERDICT_H_
