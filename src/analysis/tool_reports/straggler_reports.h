// What Megatron-LM's StragglerDetector reported about the ranks
// (model/tool_report.h), summed up over its reports: the rank it names
// slowest most often, by how much, and the rank whose data loading is slow.
//
// A report gives each metric's minimum and maximum over the ranks in one
// logging interval; its round trip is the time of the work the detector
// times (Megatron's forward step), not the iteration. The largest round
// trip always belongs to some rank, and the spread from the fastest grows
// with the number of ranks, so one report names no straggler. A rank is one
// when it is slowest in most of several reports (kToolMinReports,
// kToolConsistentShare) and alone there: its "Bottom N" throughput lists
// (--straggler-minmax-count) put the next lowest rank more than same-model
// GPUs differ above it (kToolMaterialSpread, the article's 5%). A healthy
// pipeline's stage with more work is slowest in every report, with its
// ranks together. Without Bottom lists nothing says which, and no rank is
// named. When every report's extremes lie within 5%, no rank lagged in
// those intervals.
//
// Reports repeated in several files (a log and its copy) count once; the
// reports of the file with the most of them are read, the others (another
// run, a restart) are not pooled with them, and the finding says so. The
// verdict (verdict/tool_culprit.cc) cites the result beside laggard's own
// detectors.

#ifndef LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_
#define LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "model/run.h"

namespace laggard {

inline constexpr int kToolMinReports = 3;
inline constexpr double kToolConsistentShare = 2.0 / 3.0;
inline constexpr double kToolMaterialSpread = 0.05;
// Confidence of a tool report's finding (0..1), a judgement: a rank (or
// node) it names consistently, every rank within kToolMaterialSpread, and a
// rank it names without what it takes to blame it.
inline constexpr double kToolConsistentConfidence = 0.6;
inline constexpr double kToolEvenConfidence = 0.5;
inline constexpr double kToolUnconfirmedConfidence = 0.3;

// The StragglerDetector's slowest rank by round-trip time.
struct ToolSlowestRank {
  int32_t rank = 0;
  int named = 0;    // reports in which it had the largest round trip
  int reports = 0;  // reports that give both the smallest and the largest
  // Median over the reports naming it of (largest / smallest - 1); with
  // `even`, the largest over all reports.
  double spread = 0;
  // Every report's round trips lie within kToolMaterialSpread: no rank
  // lagged in the intervals reported.
  bool even = false;
  // Median, over the reports naming it with a Bottom list that puts it
  // lowest, of the next lowest rank's throughput over its own - 1.
  std::optional<double> gap;
  // Slowest in most of several reports, and alone there by a material gap.
  bool consistent = false;
};

struct ToolReportAnalysis {
  // tool.straggler_report, tool.data_loader_slow, tool.nvrx_report
  // (nvrx_reports.h).
  std::vector<Finding> findings;
  std::optional<ToolSlowestRank> slowest;  // Megatron's StragglerDetector
  std::optional<ToolSlowestRank> nvrx;     // NVRx's lowest GPU relative score
};

ToolReportAnalysis AnalyzeToolReports(const Run& run);

// "in its only report" / "in 3 of 5 reports": how often a tool named a rank.
std::string InReports(int named, int reports);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_
