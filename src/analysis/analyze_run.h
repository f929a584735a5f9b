// Runs every detector of the analysis stage on one run, in dependency
// order: step times and traces first, then the rank <-> GPU join, then the
// hardware and network detectors (which get the ranks the first two
// suspect, to relate anomalies to slow steps) and the pause detector (which
// reads the step and trace results); live, the stall detector. Called by
// `laggard diagnose` and `laggard watch` (src/cli), the accuracy benchmark
// and tests; its result goes to DecideVerdict() (verdict/verdict.h) and the
// reports.
//
// Thread-safety: AnalyzeRun() is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_ANALYZE_RUN_H_
#define LAGGARD_ANALYSIS_ANALYZE_RUN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/common/rank_map.h"
#include "analysis/common/run_layout.h"
#include "analysis/hangs/hang_detector.h"
#include "analysis/hangs/stall_detector.h"
#include "analysis/hardware/hardware_detector.h"
#include "analysis/host/host_cpu_detector.h"
#include "analysis/network/network_detector.h"
#include "analysis/pauses/pause_detector.h"
#include "analysis/pipelines/pipeline_detector.h"
#include "analysis/steps/step_time_detector.h"
#include "analysis/tool_reports/straggler_reports.h"
#include "analysis/traces/trace_detector.h"
#include "model/run.h"

namespace laggard {

// Every detector's output for one run.
struct Analyses {
  StepAnalysis steps;
  TraceAnalysis traces;
  HardwareAnalysis hardware;
  NetworkAnalysis network;
  PauseAnalysis pauses;
  HostCpuAnalysis host_cpu;    // ranks that wait for a CPU (host_cpu_detector.h)
  PipelineAnalysis pipelines;  // one entry per op timeline of the run
  RankMap ranks;
  // The run's parallel layout (common/run_layout.h) and the statements not
  // used; with pp >= 2 the step-time detector groups ranks by stage and
  // the traces' stages are compared (stage_balance.h, its finding in
  // pipelines.findings).
  RunLayoutResult layout;
  HangAnalysis hang;    // a stopped job's evidence (hang_detector.h)
  StallAnalysis stall;  // live only: ranks whose steps stopped (stall_detector.h)
  // Other tools' straggler reports in the logs (tool_reports/straggler_reports.h).
  ToolReportAnalysis tool_reports;

  // Every detector's findings, in report order: hang, stall, pipelines,
  // traces, steps, pauses, host CPU, hardware, network, other tools. Every
  // report lists these; a new detector adds its findings to FindingLists().
  std::vector<const Finding*> AllFindings() const;
  std::vector<Finding*> MutableFindings();  // the same, to amend

 private:
  // Each detector's findings list, in report order (`Self`: const or not).
  template <typename Self>
  static auto FindingLists(Self& a) {
    return std::array{&a.hang.findings,        &a.stall.findings,    &a.pipelines.findings,
                      &a.traces.findings,      &a.steps.findings,    &a.pauses.findings,
                      &a.host_cpu.findings,    &a.hardware.findings, &a.network.findings,
                      &a.tool_reports.findings};
  }
};

// Every detector's thresholds, in one place; each member's defaults and
// where they come from are in that detector's header.
struct AnalysisOptions {
  StepDetectorOptions steps;
  TraceDetectorOptions traces;
  HardwareDetectorOptions hardware;
  NetworkDetectorOptions network;
  PauseDetectorOptions pauses;
  HostCpuDetectorOptions host_cpu;
  PipelineDetectorOptions pipelines;
  HangDetectorOptions hang;
  StallDetectorOptions stall;
  // Live evaluation (`laggard watch`): the end of the window, "now", from
  // which the stall detector measures how long each rank has been silent.
  // Unset offline: a file has no now.
  std::optional<TimeNs> live_now_ns;
  // --layout: the parallel layout of the run, and of op timelines that do
  // not state theirs.
  std::optional<ParallelLayout> layout;
  // The rank <-> GPU join's placement rule (rank_map.h): --gpus-per-node,
  // and --first-node, the number in the host name of the job's first node.
  std::optional<int32_t> gpus_per_node;
  std::optional<int32_t> first_node;
};

Analyses AnalyzeRun(const Run& run, const AnalysisOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_ANALYZE_RUN_H_
