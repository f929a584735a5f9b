// The 3D-parallel job simulator behind `laggard simulate --layout`: a
// Megatron-LM job of dp × pp × tp workers running the non-interleaved 1F1B
// pipeline schedule, with at most one injected fault, written as the op
// timeline ByteDance's StragglerAnalysis exports (formats/megatron_timeline.h)
// and a truth.json whose what-if slowdown comes from this simulator's own
// scheduler, never from laggard's analysis (docs/simulator.md, "3D-parallel
// jobs").
//
//   PipelineScenario ──► SimulatePipeline() ──► per step: the events of every
//                        (pipeline_sim.cc)       worker, then the ideal re-run
//                                                 ──► PipelineResult
//   WritePipelineRun(): timeline.json.gz + truth.json (pipeline_writer.cc)
//
// Time is microseconds (doubles) throughout, as the format writes it; the
// first step starts at 0 and each next one 10 % of the step time after the
// previous one ends (the exporter's synthetic gaps between sampled steps).
//
// Thread-safety: reentrant; a call uses nothing but its arguments.

#ifndef LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SIM_H_
#define LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SIM_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace laggard::sim {

// Sizes of the data-, pipeline- and tensor-parallel dimensions.
struct PipelineLayout {
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int world() const { return dp * pp * tp; }
};

// A worker's coordinates and its global rank in Megatron's order (tp
// fastest, then dp, then pp): rank = tp + TP · (dp + DP · pp).
struct WorkerCoord {
  int dp = 0;
  int pp = 0;
  int tp = 0;
};
inline int GlobalRank(const PipelineLayout& l, const WorkerCoord& c) {
  return c.tp + l.tp * (c.dp + l.dp * c.pp);
}
inline WorkerCoord CoordOfRank(const PipelineLayout& l, int rank) {
  return {(rank / l.tp) % l.dp, rank / (l.tp * l.dp), rank % l.tp};
}

enum class PipelineFaultKind : uint8_t {
  kNone,
  kSlowWorker,  // one worker's compute × factor            (class "worker")
  kHeavyStage,  // one stage's compute × factor, every replica (class "stage")
  kSeqlen,      // microbatch sequence lengths vary, lognormal cv (class "workload")
  kSlowLink,    // one group's transfers × factor            (class "communication")
};

std::string_view PipelineFaultKindName(PipelineFaultKind kind);   // "slow_worker", ...
std::string_view PipelineFaultClassName(PipelineFaultKind kind);  // "worker", ...
double DefaultPipelineFactor(PipelineFaultKind kind);

// One fault. Coordinates the spec leaves out are drawn from the seed by
// ResolvePipelineFault (a slow link without dp= is the data-parallel group
// of stage pp, one with dp= the pipeline link between stages pp and pp + 1
// of replica dp; tp narrows either to one tensor-parallel rank, else all).
struct PipelineFault {
  PipelineFaultKind kind = PipelineFaultKind::kNone;
  std::optional<int> dp, pp, tp;
  std::optional<double> factor;  // seqlen: the cv; omitted: the kind's default
  int onset_step = 0;            // first step the fault acts
  std::optional<int> end_step;   // last step it acts (inclusive); none: to the end
  std::string spec;              // as given
  bool link_is_p2p = false;      // slow_link: set by ResolvePipelineFault
};

// "slow_worker@dp=1,pp=2:1.3,onset=5" -> PipelineFault. Grammar:
//   KIND[@KEY=N[,KEY=N...]][:FACTOR][,onset=S][,end=S]
//   KIND    slow_worker (dp, pp, tp) | heavy_stage (pp) | seqlen | slow_link (dp, pp, tp) | none
//   FACTOR  a multiplier (1.3, 3); seqlen: the cv of the sequence lengths (0.15 or 15%)
StatusOr<PipelineFault> ParsePipelineFault(std::string_view spec);

// "dp=2,pp=4,tp=1" (any order; a missing size is 1) -> PipelineLayout.
StatusOr<PipelineLayout> ParsePipelineLayout(std::string_view spec);

// Durations and transfer sizes of one job: the base of each op, before
// faults and noise (µs; sizes in MiB, bandwidths in GB/s = 1e9 B/s).
struct PipelineCosts {
  double forward_us = 20'000;   // forward-compute of one microbatch
  double backward_us = 40'000;  // backward-compute
  double optimizer_us = 8'000;
  double compute_cv = 0.015;   // lognormal noise of each compute op
  double transfer_cv = 0.02;   // of each transfer
  double activation_mib = 32;  // one microbatch's activations (= its gradient) between stages
  double p2p_gbps = 50;        // between stages (one 400 Gb/s NIC)
  double p2p_latency_us = 20;
  double stage_params_mib = 2048;  // bf16 parameters of one stage, split over tp
  double dp_busbw_gbps = 100;      // data-parallel all-gather / reduce-scatter bus bandwidth
  double dp_latency_us = 50;
  double embedding_mib = 1000;  // fp32 word-embedding gradients, split over tp
  double layernorm_us = 30;     // the (tiny) layernorm-grads all-reduce
  double clip_us = 1'000;  // grad-norm reduction + all-reduce, plus 50 µs per doubling of world
};

struct PipelineScenario {
  PipelineLayout layout;
  int microbatches = 8;  // per step; at least pp
  int steps = 32;
  uint64_t seed = 1;
  PipelineFault fault;
  PipelineCosts costs;
};

// Checks the layout and fault against each other, draws the coordinates
// the fault leaves out, fills its factor.
Status ResolvePipelineScenario(PipelineScenario* scenario);

// One event of the timeline: an op's transfer or compute on one worker.
struct PipelineEvent {
  double ts_us = 0;
  double dur_us = 0;
  int32_t rank = 0;
  int16_t mb = -1;   // args.mb_id as written (gc: 0; p2p and collectives: -1)
  int16_t seq = 0;   // args.seq_id
  uint8_t kind = 0;  // index into megatron_timeline::kOpTypes
};

struct PipelineStepTruth {
  double start_us = 0;             // the step's origin (every worker starts there)
  double actual_us = 0;            // last op end − start
  double ideal_us = 0;             // the same schedule, every op at its typical duration
  std::optional<int> heaviest_dp;  // seqlen: the replica with the most tokens this step
};

struct PipelineResult {
  PipelineScenario scenario;  // resolved
  std::vector<PipelineStepTruth> steps;
  // The typical duration of each op type (µs, index as kOpTypes; absent
  // types 0): compute (forward, backward, optimizer, gc) the mean over every
  // worker and step, communication the median.
  std::array<double, 14> typical_us{};
  double mean_actual_us = 0;
  double mean_ideal_us = 0;
  double slowdown = 1;  // mean_actual_us / mean_ideal_us
  int64_t events = 0;
};

// Receives each step's events once the step is scheduled: per rank in rank
// order, each rank's sorted by op name, then seq_id (the exporter's order).
using PipelineStepFn = std::function<Status(int step, std::span<const PipelineEvent> events)>;

// Simulates a resolved scenario; `on_step` may be empty.
StatusOr<PipelineResult> SimulatePipeline(const PipelineScenario& scenario,
                                          const PipelineStepFn& on_step);

struct PipelineRunSummary {
  PipelineResult result;
  uint64_t bytes = 0;  // of timeline.json.gz
  double wall_s = 0;
};

// Resolves and simulates `scenario`, writes DIR/timeline.json.gz and
// DIR/truth.json (DIR is created).
StatusOr<PipelineRunSummary> WritePipelineRun(PipelineScenario scenario, const std::string& dir);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_PIPELINE_PIPELINE_SIM_H_
