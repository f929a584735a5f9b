// Trace detector: from per-rank profiler traces, does the suspect compute
// slowly or wait, and which rank is the culprit rather than a victim?
//
// Assumption (DESIGN, "one subtlety"): a synchronous collective ends at
// nearly the same instant on every participant, when the last rank has
// arrived and the transfer is done. So the culprit is the rank that arrives
// last and waits least; the rank with the longest NCCL time is a victim.
//
// Metrics:
//   instance    one collective call matched across the ranks of its process
//               group: by (group, seq) when traced, else by (group,
//               collective, size, n-th occurrence)
//   offset[r]   median over instances of (end on r - median end): the clock
//               offset of rank r, removed from all its times
//   arrival     aligned start of the collective on a rank; lateness =
//               arrival - median arrival; wait = last arrival - own arrival;
//               transfer = median end - last arrival
//   share_last  share of instances where the rank arrived last
//   busy        union of a rank's device ops (CPU ops in CPU-only traces),
//               per OpClass and in total; gaps = window - busy
//   kernel ratio per compute kernel name with >= 3 launches on both ranks:
//               median duration on the suspect / on a healthy peer,
//               aggregated weighted by the peer's time in that kernel
// Decisions (defaults, origin):
//   delay       per instance, last arrival - second-to-last arrival, charged
//               to the last rank: what the job would gain without it
//   late arrival the rank with the most delay holds >= 50% of all delay and
//               >= 3x the next rank's, was last at >= 3 instances, and its
//               mean delay is >= 100 us (a stalled rank is late only at the
//               first collective of a step, so share of instances is not used)
//   compute-slow kernel ratio >= 1.05 (5%: the article's normal variation
//               between same-model GPUs) -> the GPU executes slowly
//   host stall  kernels within 5% but the culprit's idle time (no kernel at
//               all) exceeds the peer's by >= half its summed lateness -> it
//               waited for the host (data loader, CPU, Python)
//   comm-bound  no late rank, and transfer >= 40% of the step time on
//               every rank -> the network is slow for everyone
//
// Thread-safety: AnalyzeTraces() is a pure function of the run.

#ifndef LAGGARD_ANALYSIS_TRACE_DETECTOR_H_
#define LAGGARD_ANALYSIS_TRACE_DETECTOR_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "model/run.h"

namespace laggard {

// One trace's own time, whether or not it has a rank.
struct TraceBusyStats {
  std::optional<std::string> host;
  uint32_t file = 0;
  uint32_t trace = 0;  // index into Run::traces of the trace analysed
  bool cpu_only = false;
  size_t steps = 0;
  DurationNs window_ns = 0;  // first op start .. last op end
  std::array<DurationNs, static_cast<size_t>(OpClass::kCount)> busy_by_class_ns{};
  DurationNs busy_ns = 0;          // union of all ops
  DurationNs compute_busy_ns = 0;  // union of non-communication ops
  DurationNs comm_busy_ns = 0;     // union of communication ops
  DurationNs idle_ns = 0;          // window - busy
  size_t gaps = 0;                 // idle intervals >= 10 us
  DurationNs largest_gap_ns = 0;
  size_t collectives = 0;
  DurationNs collective_ns = 0;    // total time in communication ops
};

struct RankTraceStats : TraceBusyStats {
  int32_t rank = 0;
  // Cross-rank, when matched.
  std::optional<DurationNs> clock_offset_ns;
  size_t instances = 0;
  double share_last = 0;
  std::optional<DurationNs> median_lateness_ns;
  std::optional<DurationNs> median_wait_ns;
  DurationNs delay_caused_ns = 0;  // sum over instances it was last of (its arrival - next)
  // Per collective call, in RankTrace::collectives order: aligned arrival
  // minus the median arrival of its instance (> 0: late); nullopt when the
  // call matched no instance. Reports draw it on the merged timeline.
  std::vector<std::optional<DurationNs>> call_lateness_ns;
};

struct TraceAnalysis {
  std::vector<RankTraceStats> ranks;  // traces with a rank, by rank
  // Traces without a rank (no distributedInfo.rank, none in the name): their
  // own busy / idle only, matched with nothing; in file order.
  std::vector<TraceBusyStats> unranked;
  std::optional<int32_t> world_size;  // of the job analysed, when traced
  size_t instances = 0;               // matched collective instances
  std::optional<DurationNs> median_transfer_ns;
  std::optional<DurationNs> median_step_ns;
  std::optional<int32_t> culprit;
  // What the culprit costs: per instance it arrived last, its arrival minus
  // the second-to-last arrival, summed, over the profiled window.
  std::optional<double> throughput_lost;
  std::vector<Finding> findings;
};

TraceAnalysis AnalyzeTraces(const Run& run);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TRACE_DETECTOR_H_
