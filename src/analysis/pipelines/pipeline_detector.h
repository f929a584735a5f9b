// Pipeline detector: for a model-parallel job's op timeline
// (model/op_timeline.h), which worker, which stage, the work itself or a
// communication group holds the step up, and what fixing it is worth. Run
// by AnalyzeRun() (analysis/analyze_run.h) on every OpTimeline of the run;
// the verdict turns its findings into a culprit and prints the what-if.
//
// Assumption: the workers of one (stage, tp position) on different DP
// replicas do the same work (their role peers). A worker slower than its
// role peers is faulty or slow; a stage slower on every replica is
// partitioned heavier; a slowest replica that changes from step to step
// has more work in those steps (longer sequences); a communication kind
// whose measured transfers hold the step up is the network's.
//
// Metric (MeasurePipeline):
//   whatif         the replay of pipeline_replay.h: slowdown, by stage, DP
//                  rank, op type and worker
//   peer ratio     per worker, the median over steps of its compute time in
//                  the step (forward + backward + optimizer) over the median
//                  of its role peers' in that step (dp >= 2)
//   slowest dp     per step, the replica with the most compute, and the
//                  spread (its compute over the replicas' median): evidence
//                  of a workload finding, never its reason
//   work           per (step, replica, microbatch), its forward / backward
//                  over their (kind, stage) medians: cv, and the share of
//                  its variance between replicas (MeasureWork)
//   comm groups    per communication op type, the workers whose median
//                  transfer is >= comm_group_ratio x that type's median
// Decision (DecidePipeline), nothing when slowdown < min_slowdown:
//   1. communication: the communication op types' group excesses
//      (slowdown - 1) together are >= min_group_excess and >= min_comm_share
//      of the job's (a slow p2p link slows its forward and backward
//      transfers both); named by the largest;
//   2. workload: the work of a microbatch (each forward / backward over the
//      median of its kind and stage, averaged per step, replica and
//      microbatch over stages and TP ranks) varies by a cv >= min_work_cv,
//      and at most max_work_dp_share of that variance is between replicas
//      (a slow worker's is all one replica's): the work moves;
//   3. slow worker: the largest peer ratio >= worker_ratio while every role
//      peer of it is < peer_quiet_ratio, and making it typical gives back
//      >= min_worker_recovered of the step (its "recovered");
//   4. stage imbalance: the stage with the largest group slowdown, when it
//      exceeds min_group_excess.
// Each finding carries the what-if's slowdown (as a relative excess) and
// "recovered" (what removing the culprit gives back).
//
// Defaults and where they come from:
//   min_slowdown 1.03, min_group_excess 0.02: the paper's decomposition
//     threshold (1.03; StragglerAnalysis --decompose-thres) and two thirds
//     of it for a group.
//   worker_ratio 1.05, peer_quiet_ratio 1.02: the article's "suspect" band
//     starts at 5%; a peer within 2% is normal variation.
//   min_work_cv 0.04, max_work_dp_share 0.5, min_worker_recovered 0.01:
//     judgement, checked on simulated runs (bench/pipeline_accuracy,
//     docs/accuracy.md): op noise of 1.5% averages below 1% over a
//     microbatch's ops; with 2 replicas and 8 steps the most frequent
//     slowest replica is slowest in > 60% of the steps by chance in most
//     runs, so which replica is slowest decides nothing (it is evidence).
//   comm_group_ratio 1.5, min_comm_share 0.5: judgement.
//
// Thread-safety: pure functions of their inputs.

#ifndef LAGGARD_ANALYSIS_PIPELINES_PIPELINE_DETECTOR_H_
#define LAGGARD_ANALYSIS_PIPELINES_PIPELINE_DETECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/pipelines/pipeline_replay.h"
#include "model/run.h"

namespace laggard {

struct PipelineDetectorOptions {
  double min_slowdown = 1.03;
  double min_group_excess = 0.02;
  double worker_ratio = 1.05;
  double peer_quiet_ratio = 1.02;
  double min_work_cv = 0.04;
  double max_work_dp_share = 0.5;
  double min_worker_recovered = 0.01;
  double comm_group_ratio = 1.5;
  double min_comm_share = 0.5;
  WhatIfOptions whatif;
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double slow_communication = 0.6;           // pipeline.slow_communication
    double slow_worker = 0.7;                  // pipeline.slow_worker
    double workload_imbalance = 0.6;           // pipeline.workload_imbalance
    double stage_imbalance = 0.7;              // pipeline.stage_imbalance
    double stage_imbalance_one_replica = 0.5;  // pipeline.stage_imbalance, dp < 2
    double no_layout = 1;                      // pipeline.no_layout
  };
  Confidences confidence;
};

struct PipelineWorkerMetrics {
  int32_t worker = 0;
  ParallelCoord coord;
  std::optional<int32_t> rank;
  std::optional<double> peer_ratio;  // nullopt without role peers (dp == 1)
};

struct PipelineMetrics {
  uint32_t file = 0;  // the timeline's
  std::optional<WhatIf> whatif;
  std::optional<std::string> error;  // why the replay did not run
  std::vector<PipelineWorkerMetrics> workers;
  std::vector<int32_t> slowest_dp;  // per replayed step
  std::optional<double> median_spread;
  std::optional<double> top_share;      // share of steps of the most frequent slowest replica
  std::optional<double> work_cv;        // of a microbatch's work (MeasureWork)
  std::optional<double> work_dp_share;  // of that variance, the share between replicas
  // Per communication op type (WhatIfOpType), the workers with long transfers.
  std::vector<std::pair<std::string, std::vector<int32_t>>> comm_groups;
};

struct PipelineAnalysis {
  std::vector<PipelineMetrics> timelines;
  std::vector<Finding> findings;
};

PipelineMetrics MeasurePipeline(const Run& run, const OpTimeline& timeline,
                                const std::optional<ParallelLayout>& layout,
                                const PipelineDetectorOptions& options);
std::vector<Finding> DecidePipeline(const Run& run, const OpTimeline& timeline,
                                    const PipelineMetrics& m,
                                    const PipelineDetectorOptions& options);
PipelineAnalysis AnalyzePipelines(const Run& run, const std::optional<ParallelLayout>& layout,
                                  const PipelineDetectorOptions& options = {});

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_PIPELINES_PIPELINE_DETECTOR_H_
