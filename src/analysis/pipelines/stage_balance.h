// Role peers in pipelined runs without an op timeline: with a run layout
// (analysis/common/run_layout.h), the traced compute of each rank is compared
// with its role peers' (same pipeline stage, same tensor-parallel position)
// and each stage's with the others'. A stage whose every rank computes more
// than the other stages' ranks, alike, is partitioned heavier: the job's
// straggling is the layout's, and no rank of that stage is faulty. Without
// this, the trace detector compares a rank with every other rank and names
// the heavy stage's ranks compute-slow, as if their GPUs were.
//
// Metric: per traced rank, its compute per profiled step (union of
// non-communication ops over the profiled steps, RankTraceStats::compute_busy_ns / steps); per
// stage, the median over its traced ranks.
// Decision, on a layout with pp >= 2 and >= 2 stages traced:
//   the heaviest stage H, the next heaviest N: H / N >= stage_ratio, and
//   every traced rank r of H within member_band of H's median (no single
//   worker makes the stage heavy: that is a slow worker, the trace
//   detector's, compared against its role peers) -> pipeline.stage_imbalance
//   with H's ranks. Its slowdown is H over the stages' mean - 1, and its
//   "recovered" a lower bound: (H - mean) compute per step over the median
//   step. Balanced, every stage computes the mean (the what-if's ideal);
//   the bottleneck stage's excess also sets the pipeline's fill and drain,
//   so balancing gives back at least that share.
//
// Defaults: stage_ratio 1.10 (a transformer layer of eight on a stage is
// 12.5%; CPU gloo jobs here vary by a few percent between ranks of one
// stage), member_band 0.15 (real CPU jobs of bench/realjobs: ranks of one
// stage within ~8%; judgement, docs/accuracy.md).
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_PIPELINES_STAGE_BALANCE_H_
#define LAGGARD_ANALYSIS_PIPELINES_STAGE_BALANCE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/common/run_layout.h"
#include "analysis/traces/trace_detector.h"

namespace laggard {

struct StageBalanceOptions {
  double stage_ratio = 1.10;
  double member_band = 0.15;
  // The heavy stage's excess over the next must be at least this many times
  // the largest spread (max / min - 1) between role peers of any stage.
  double over_peer_spread = 2;
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double stage_imbalance = 0.7;       // pipeline.stage_imbalance, dp >= 2, >= 2 ranks traced
    double stage_imbalance_weak = 0.5;  // pipeline.stage_imbalance, one replica or rank traced
  };
  Confidences confidence;
};

struct StageCompute {
  int32_t stage = 0;
  std::vector<int32_t> ranks;       // traced ranks of the stage, ascending
  std::vector<double> per_step_ns;  // their compute per profiled step, like `ranks`
  double median_ns = 0;
};

struct StageBalance {
  std::vector<StageCompute> stages;  // traced stages, by stage
  std::optional<Finding> finding;    // pipeline.stage_imbalance
};

StageBalance AnalyzeStageBalance(const TraceAnalysis& traces, const RunLayout& layout,
                                 const StageBalanceOptions& options = {});

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_PIPELINES_STAGE_BALANCE_H_
