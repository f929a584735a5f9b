// Reports: the terminal text, the versioned JSON document, the self-contained
// HTML page and the merged Chrome/Perfetto trace, all rendered from the same
// ReportInput. Documented in docs/json-report.md, docs/html-report.md and
// docs/merged-trace.md.
//
// Reports only format; they decide nothing.

#ifndef LAGGARD_REPORT_REPORT_H_
#define LAGGARD_REPORT_REPORT_H_

#include <ostream>
#include <string>

#include "analysis/common/rank_map.h"
#include "analysis/common/run_layout.h"
#include "analysis/hangs/hang_detector.h"
#include "analysis/hangs/stall_detector.h"
#include "analysis/hardware/hardware_detector.h"
#include "analysis/host/host_cpu_detector.h"
#include "analysis/network/network_detector.h"
#include "analysis/pauses/pause_detector.h"
#include "analysis/steps/step_time_detector.h"
#include "analysis/tool_reports/straggler_reports.h"
#include "analysis/traces/trace_detector.h"
#include "model/run.h"
#include "verdict/verdict.h"

namespace laggard {

inline constexpr std::string_view kReportSchema = "laggard.report/1";
inline constexpr std::string_view kLaggardVersion = "0.1.0";

struct ReportInput {
  const Run& run;
  const StepAnalysis& steps;
  const TraceAnalysis& traces;
  const Verdict& verdict;
  // Hardware and network detectors (nullptr: not run).
  const HardwareAnalysis* hardware = nullptr;
  const NetworkAnalysis* network = nullptr;
  // The rank <-> GPU join (nullptr: not shown).
  const RankMap* ranks = nullptr;
  // The pipeline detector's findings (op timelines; nullptr: not run).
  const PipelineAnalysis* pipelines = nullptr;
  // The run's parallel layout and the statements not used (nullptr: none).
  const RunLayoutResult* layout = nullptr;
  // The hang detector's findings (nullptr: not run).
  const HangAnalysis* hang = nullptr;
  // The stall detector's (analysis/hangs/stall_detector.h; nullptr: not run).
  const StallAnalysis* stall = nullptr;
  // The pause detector's (analysis/pauses/pause_detector.h; nullptr: not run).
  const PauseAnalysis* pauses = nullptr;
  // The host CPU detector's (analysis/host/host_cpu_detector.h; nullptr: not run).
  const HostCpuAnalysis* host_cpu = nullptr;
  // Other tools' straggler reports (analysis/tool_reports/; nullptr: none).
  const ToolReportAnalysis* tool_reports = nullptr;

  // The rank <-> GPU join when the reports show it: the run has GPU metrics
  // and ranks were tied to GPUs, or some host's GPUs could not be.
  const RankMap* RankMapShown() const {
    if (ranks == nullptr || run.hardware.gpus.empty()) return nullptr;
    return ranks->Ties().empty() && ranks->untied().empty() ? nullptr : ranks;
  }

  // Findings of every detector, in report order.
  std::vector<const Finding*> AllFindings() const {
    std::vector<const Finding*> all;
    if (hang != nullptr) {
      for (const Finding& f : hang->findings) all.push_back(&f);
    }
    if (stall != nullptr) {
      for (const Finding& f : stall->findings) all.push_back(&f);
    }
    if (pipelines != nullptr) {
      for (const Finding& f : pipelines->findings) all.push_back(&f);
    }
    for (const Finding& f : traces.findings) all.push_back(&f);
    for (const Finding& f : steps.findings) all.push_back(&f);
    if (pauses != nullptr) {
      for (const Finding& f : pauses->findings) all.push_back(&f);
    }
    if (host_cpu != nullptr) {
      for (const Finding& f : host_cpu->findings) all.push_back(&f);
    }
    if (hardware != nullptr) {
      for (const Finding& f : hardware->findings) all.push_back(&f);
    }
    if (network != nullptr) {
      for (const Finding& f : network->findings) all.push_back(&f);
    }
    if (tool_reports != nullptr) {
      for (const Finding& f : tool_reports->findings) all.push_back(&f);
    }
    return all;
  }
};

struct TextOptions {
  bool color = false;
  bool quiet = false;        // only the verdict line
  size_t max_findings = 20;  // then "... and N more"
};

void RenderText(const ReportInput& in, const TextOptions& options, std::ostream& out);
std::string RenderJson(const ReportInput& in);
// One HTML file that opens offline: the JSON report plus Chart.js, both
// embedded (Chart.js at build time).
std::string RenderHtml(const ReportInput& in);
// Chrome trace JSON (object format) with steps, collectives, GPU counters and
// findings of every rank on one timeline.
void WriteMergedTrace(const ReportInput& in, std::ostream& out);

}  // namespace laggard

#endif  // LAGGARD_REPORT_REPORT_H_
