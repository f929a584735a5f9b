// What-if replay of a model-parallel step (the method of "Understanding
// Stragglers in Large Model Training Using What-if Analysis", OSDI'25):
// the ops of an OpTimeline (model/op_timeline.h) are replayed on the step's
// dependency graph, once with every op at its measured duration, once with
// every op at its type's typical duration (the ideal: no op straggles), and
// once per group (a stage, a DP replica, an op type, a worker) with only
// that group at its measured durations. Run by the pipeline detector
// (pipeline_detector.h); the verdict and the reports print its numbers.
//
// The graph, per worker (dp, pp, tp) and step:
//   - forward / backward compute in the order they ran (one stream);
//   - each pipeline p2p kind (forward send / recv, backward send / recv) in
//     seq order (one stream each); the i-th send follows the i-th compute of
//     its direction; the i-th receive precedes that compute and follows the
//     compute before it; the first backward send / receive follows the
//     compute two places before the first backward compute;
//   - params-all-gather, then grads-reduce-scatter, in the order they ran;
//     the first forward compute of a model chunk follows that chunk's last
//     all-gather;
//   - after the last compute: gc, layernorm-grads-all-reduce,
//     embedding-grads-all-reduce (first and last stage), the
//     reduce-scatters (or, when separate-grads-all-reduce is present, each
//     reduce-scatter after its chunk's last backward, then that op),
//     optimizer-clip-main-grad, optimizer.
// Communication groups end together: a group starts when its last member is
// ready, and each member ends its own transfer time later (a timeline op of
// a communication kind holds its transfer only). Groups: a send and the
// peer stage's receive of the same seq (stage s+1 for forward, s-1 for
// backward; wrapping around when vpp > 1), a DP collective across the DP
// replicas of one (stage, tp), the embedding all-reduce between the first
// and the last stage of one replica, and optimizer-clip-main-grad across
// every worker. A step starts with its ops that depend on nothing at 0 and
// ends with its last optimizer.
//
// Typical duration: the mean of a compute kind's durations (forward,
// backward, optimizer, gc) over every worker and step, the median of a
// communication kind's. slowdown = mean step time measured / mean step time
// ideal; a group's slowdown = mean step time with that group measured, the
// rest ideal / ideal. recovered = 1 - mean step time with that group ideal,
// the rest measured / measured: what removing it gives back.
//
// Ops that do not fit (a duplicate seq, a send whose compute is missing, a
// receive without its peer, a unit of a dependency cycle) are counted in
// ReplayFit; the replay runs on the rest.
//
// Cost: building the graph is O(n log n) in ops, one replay O(ops + edges).
// Thread-safety: pure functions of their inputs.

#ifndef LAGGARD_ANALYSIS_PIPELINES_PIPELINE_REPLAY_H_
#define LAGGARD_ANALYSIS_PIPELINES_PIPELINE_REPLAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/op_timeline.h"

namespace laggard {

// What did not fit the schedule (counted, never fatal).
struct ReplayFit {
  uint64_t ops = 0;               // ops in the graph
  uint64_t duplicates = 0;        // a second op of one (step, worker, kind, seq)
  uint64_t missing_compute = 0;   // a p2p op whose compute of that seq is absent
  uint64_t unpaired = 0;          // a p2p op without its peer (replayed alone)
  uint64_t incomplete_group = 0;  // a collective that some members lack
  uint64_t cyclic = 0;            // ops left in a dependency cycle (not replayed)
  uint64_t steps_dropped = 0;     // steps with such ops, left out of the step times
  bool any() const {
    return duplicates + missing_compute + unpaired + incomplete_group + cyclic > 0;
  }
};

// One group's effect.
struct WhatIfGroup {
  std::string label;              // "3" (stage / DP rank), "forward-compute", "dp0 pp3 tp0"
  std::optional<int32_t> dp;      // set for a DP rank or a worker
  std::optional<int32_t> pp;      // set for a stage or a worker
  std::optional<int32_t> tp;      // set for a worker
  std::optional<int32_t> worker;  // index into OpTimeline::workers
  double slowdown = 1;            // ideal + this group measured, over ideal
  // 1 - (measured with this group ideal) / measured; for the first
  // WhatIfOptions::recovered_groups of each decomposition only.
  std::optional<double> recovered;
};

struct WhatIfStep {
  int64_t step = 0;
  double measured_ns = 0;
  double ideal_ns = 0;
  double slowdown = 1;
  std::vector<double> by_stage;  // per stage, as WhatIfGroup::slowdown for this step
};

struct WhatIf {
  ParallelLayout layout;
  double slowdown = 1;
  double measured_step_ns = 0;  // mean over the steps
  double ideal_step_ns = 0;
  // Sorted by slowdown, largest first.
  std::vector<WhatIfGroup> by_stage;
  std::vector<WhatIfGroup> by_dp_rank;
  std::vector<WhatIfGroup> by_op_type;
  // Per (dp, pp) worker, its tensor-parallel ranks together (they wait for
  // each other inside every op; tp set only when tp is 1): every one up to
  // max_worker_groups, else the heaviest.
  std::vector<WhatIfGroup> by_worker;
  std::vector<WhatIfStep> per_step;  // in step order
  ReplayFit fit;
  size_t workers_replayed = 0;  // by_worker's size
  // The ideal replay per timeline op (index as OpTimeline::ops): start and
  // end in ns from its step's start; empty with keep_ideal_timeline off,
  // NaN for an op that was not replayed. The merged trace draws the ideal
  // step beside the measured one from these.
  std::vector<float> ideal_start_ns, ideal_end_ns;
};

struct WhatIfOptions {
  // Each worker group is one replay: past this many workers, only the ones
  // whose compute exceeds its typical duration most are replayed.
  size_t max_worker_groups = 64;
  // False: the measured and ideal replays only (no group replays).
  bool decompose = true;
  // Groups of each decomposition (the largest first) that get "recovered":
  // one more replay each.
  size_t recovered_groups = 3;
  // Keep WhatIf::ideal_start_ns / ideal_end_ns (8 bytes per op).
  bool keep_ideal_timeline = true;
};

// The layout of `timeline`: its own, else `layout` (--layout), which then
// also places workers without coordinates (Megatron rank order). An error
// says what is missing (the ranks without coordinates) or inconsistent.
StatusOr<ParallelLayout> ResolveLayout(const OpTimeline& timeline,
                                       const std::optional<ParallelLayout>& layout,
                                       std::vector<ParallelCoord>* coords);

StatusOr<WhatIf> RunWhatIf(const OpTimeline& timeline, const std::optional<ParallelLayout>& layout,
                           const WhatIfOptions& options = {});

// "forward-compute"; p2p kinds by direction: "forward-pp-comm", "backward-pp-comm".
std::string WhatIfOpType(TimelineOpKind kind);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_PIPELINES_PIPELINE_REPLAY_H_
