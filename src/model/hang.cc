#include "model/hang.h"

namespace laggard {

std::string_view CollectiveStateName(CollectiveState s) {
  switch (s) {
    case CollectiveState::kUnknown: return "unknown";
    case CollectiveState::kScheduled: return "scheduled";
    case CollectiveState::kStarted: return "started";
    case CollectiveState::kCompleted: return "completed";
  }
  return "unknown";
}

std::string_view HangEventKindName(HangEventKind k) {
  switch (k) {
    case HangEventKind::kWatchdogTimeout: return "watchdog_timeout";
    case HangEventKind::kWatchdogException: return "watchdog_exception";
    case HangEventKind::kBlockingWaitTimeout: return "blocking_wait_timeout";
    case HangEventKind::kDesyncReport: return "desync_report";
    case HangEventKind::kCollectiveMismatch: return "collective_mismatch";
    case HangEventKind::kGlooTimeout: return "gloo_timeout";
    case HangEventKind::kTransportError: return "transport_error";
    case HangEventKind::kRemoteError: return "remote_error";
    case HangEventKind::kProcessExited: return "process_exited";
    case HangEventKind::kWatchdogTerminated: return "watchdog_terminated";
    case HangEventKind::kDumpSignal: return "dump_signal";
    case HangEventKind::kFrTraceNotJoined: return "fr_trace_not_joined";
    case HangEventKind::kFrTraceMismatch: return "fr_trace_mismatch";
    case HangEventKind::kNicEvent: return "nic_event";
    case HangEventKind::kNetSizeMismatch: return "net_size_mismatch";
    case HangEventKind::kCudaError: return "cuda_error";
    case HangEventKind::kVerbsError: return "verbs_error";
    case HangEventKind::kCount: break;
  }
  return "unknown";
}

std::string_view RasRankIssueName(RasRankIssue i) {
  switch (i) {
    case RasRankIssue::kMissing: return "missing";
    case RasRankIssue::kNoComm: return "nocomm";
    case RasRankIssue::kStatus: return "status";
    case RasRankIssue::kOpCount: return "op_count";
    case RasRankIssue::kError: return "error";
    case RasRankIssue::kCount: break;
  }
  return "unknown";
}

}  // namespace laggard
