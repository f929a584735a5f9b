// What Megatron-LM's StragglerDetector reported about the ranks
// (model/tool_report.h), summed up over its reports: the rank it names
// slowest most often, by how much, and the rank whose data loading is slow.
//
// A report gives each metric's minimum and maximum over the ranks in one
// logging interval. The largest round trip always belongs to some rank, so
// one report names no straggler: only a rank that is slowest in most of
// several reports (kMinReports, kConsistentShare), by more than
// same-model GPUs differ (kMaterialSpread, the article's 5%), is one. Its
// "Bottom N" throughput list, when printed, shows whether that rank is
// alone or one of several as slow. The verdict (verdict/tool_culprit.cc)
// cites the result beside laggard's own detectors.

#ifndef LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_
#define LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/finding.h"
#include "model/run.h"

namespace laggard {

inline constexpr int kToolMinReports = 3;
inline constexpr double kToolConsistentShare = 2.0 / 3.0;
inline constexpr double kToolMaterialSpread = 0.05;

// The StragglerDetector's slowest rank by round-trip time.
struct ToolSlowestRank {
  int32_t rank = 0;
  int named = 0;    // reports in which it had the largest round trip
  int reports = 0;  // reports that give both the smallest and the largest
  // Median over the reports naming it of (largest / smallest - 1).
  double spread = 0;
  // Slowest in most of several reports, by a material spread.
  bool consistent = false;
};

struct ToolReportAnalysis {
  std::vector<Finding> findings;  // tool.straggler_report, tool.data_loader_slow
  std::optional<ToolSlowestRank> slowest;
};

ToolReportAnalysis AnalyzeToolReports(const Run& run);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TOOL_REPORTS_STRAGGLER_REPORTS_H_
