// What NVRx's straggler detection reported about the ranks
// (model/tool_report.h), summed up over its reports: tool.nvrx_report.
//
// A GPU relative score is the rank's kernels' speed against the fastest
// rank's, kernel by kernel: 0.5 is twice as slow, and the best rank reads
// ~0.99. The worst and best ranks are printed, so a report's range is known
// (its scores cover GPU kernels only, not NCCL, host or data time). A rank is
// a straggler by NVRx's measure when, in at least two reports and 2/3 of
// them, it has the lowest score, the next lowest rank is known (in the
// Worst list, or all ranks listed) and kToolMaterialSpread (5%) above it
// (alone), and the best rank is kNvrxSlowerBy above it; among three ranks
// or more (with two, nothing says which one is odd). The two lowest ranks
// alone on one node, by the same count, point to the node. When every
// report's range lies within 5%, no rank lagged by its measure. A rank
// whose individual score (against its own best interval) fell below
// kNvrxDropped slowed down over the run.

#ifndef LAGGARD_ANALYSIS_TOOL_REPORTS_NVRX_REPORTS_H_
#define LAGGARD_ANALYSIS_TOOL_REPORTS_NVRX_REPORTS_H_

#include <optional>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/tool_reports/straggler_reports.h"
#include "model/run.h"

namespace laggard {

inline constexpr double kNvrxSlowerBy = 0.15;
inline constexpr double kNvrxDropped = 0.9;
// Confidence of tool.nvrx_report for a rank whose individual score dropped.
inline constexpr double kNvrxDroppedConfidence = 0.3;

// Appends tool.nvrx_report findings to `out`; the lowest rank's summary in
// `slowest` (its `spread`: the best score over its own - 1).
void AnalyzeNvrxReports(const Run& run, std::vector<Finding>& out,
                        std::optional<ToolSlowestRank>& slowest);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TOOL_REPORTS_NVRX_REPORTS_H_
