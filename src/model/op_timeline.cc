#include "model/op_timeline.h"

#include <fmt/format.h>

#include "formats/megatron_timeline.h"

namespace laggard {

std::string LayoutText(const ParallelLayout& l) {
  std::string s = fmt::format("dp={},pp={},tp={}", l.dp, l.pp, l.tp);
  if (l.cp > 1) s += fmt::format(",cp={}", l.cp);
  if (l.vpp > 1) s += fmt::format(",vpp={}", l.vpp);
  return s;
}

const char* LayoutSourceName(LayoutSource s) {
  switch (s) {
    case LayoutSource::kFlag: return "flag";
    case LayoutSource::kOpTimeline: return "op_timeline";
    case LayoutSource::kLaunchLog: return "launch_log";
    case LayoutSource::kProcessGroups: return "process_groups";
  }
  return "unknown";
}

std::string_view TimelineOpName(TimelineOpKind kind) {
  return megatron_timeline::kOpTypes[static_cast<size_t>(kind)];
}

std::optional<TimelineOpKind> TimelineOpFromName(std::string_view name) {
  for (size_t i = 0; i < megatron_timeline::kOpTypes.size(); ++i) {
    if (megatron_timeline::kOpTypes[i] == name) return static_cast<TimelineOpKind>(i);
  }
  return std::nullopt;
}

bool IsPipelineP2p(TimelineOpKind kind) {
  return kind == TimelineOpKind::kForwardSend || kind == TimelineOpKind::kForwardRecv ||
         kind == TimelineOpKind::kBackwardSend || kind == TimelineOpKind::kBackwardRecv;
}

bool IsCommunicationOp(TimelineOpKind kind) {
  switch (kind) {
    case TimelineOpKind::kForwardCompute:
    case TimelineOpKind::kBackwardCompute:
    case TimelineOpKind::kOptimizer:
    case TimelineOpKind::kGc: return false;
    default: return true;
  }
}

}  // namespace laggard
