// Host-side gaps: does a rank's GPU idle because its host launched late?
// The trace detector calls it for a late rank whose kernels run at the
// healthy speed, to tell a host / data-loader stall from other waiting.
//
// Metric (from RankTrace / TraceStep, filled by the readers through
// AttributeLaunchGaps): unlaunched idle = GPU idle before the launch call
// of the next op had begun, i.e. with an empty launch queue; queued idle =
// GPU idle while that op was already launched (a dependency, a sync). Per
// step as a share of the step's length, and over the whole trace.
//
// Decision (made by the trace detector, threshold there): the suspect's
// unlaunched idle exceeds the median peer's by at least half of the delay
// it causes at collectives -> its host, not its GPU, makes it late.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_ANALYSIS_TRACES_HOST_GAPS_H_
#define LAGGARD_ANALYSIS_TRACES_HOST_GAPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/trace.h"

namespace laggard {

struct HostGapComparison {
  // False when the suspect or every peer has no op linked to its launch:
  // then nothing below is known.
  bool known = false;
  DurationNs unlaunched_ns = 0;  // suspect, whole trace
  DurationNs queued_ns = 0;
  DurationNs peer_unlaunched_ns = 0;  // median over the peers that know
  DurationNs peer_queued_ns = 0;
  size_t peers = 0;  // peers that know
  // The suspect's step with the largest unlaunched share, and the median
  // share of the peers in their step of the same number.
  std::optional<int64_t> step;
  double step_share = 0;
  std::optional<double> peer_step_share;
};

HostGapComparison CompareHostGaps(const RankTrace& suspect,
                                  const std::vector<const RankTrace*>& peers);

// "GPU idle 38% of step 3 with an empty launch queue, peers 4%" or, without
// steps, "GPU idle 12.00 ms with an empty launch queue, peers 0.40 ms".
std::string DescribeHostGaps(const HostGapComparison& h);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TRACES_HOST_GAPS_H_
