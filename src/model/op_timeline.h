// Op timelines of model-parallel jobs: per worker (a rank with its data-,
// pipeline- and tensor-parallel coordinates), the ops of each training step
// (forward / backward compute of each microbatch, pipeline sends and
// receives, the data-parallel collectives, the optimizer) with their start
// and duration. Readers of Megatron-style timelines fill it
// (ingest/traces/megatron/); the what-if replay (analysis/pipelines/pipeline_replay.h)
// replays it on the step's dependency graph.
//
//   OpTimeline
//   ├── file          index into Run::files
//   ├── layout        dp × pp × tp (× vpp), when the file or --layout says
//   ├── workers[]     (dp, pp, tp) and the global rank when known
//   └── ops[]         TimelineOp{kind, worker, step, microbatch, chunk, seq,
//                                start, duration, src}
//
// A communication op holds its transfer only (the exporter's convention):
// its start is when the last peer arrived, so waiting shows as idle time of
// the other ops, not as a long collective.

#ifndef LAGGARD_MODEL_OP_TIMELINE_H_
#define LAGGARD_MODEL_OP_TIMELINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/parallel_layout.h"
#include "model/source.h"
#include "model/time.h"

namespace laggard {

// The op types of a Megatron step (formats/megatron_timeline.h spells them).
enum class TimelineOpKind : uint8_t {
  kForwardCompute,
  kBackwardCompute,
  kForwardSend,
  kForwardRecv,
  kBackwardSend,
  kBackwardRecv,
  kParamsAllGather,
  kGradsReduceScatter,
  kSeparateGradsAllReduce,
  kEmbeddingGradsAllReduce,
  kLayernormGradsAllReduce,
  kOptimizerClipMainGrad,
  kOptimizer,
  kGc,
};
inline constexpr int kTimelineOpKinds = 14;

std::string_view TimelineOpName(TimelineOpKind kind);
std::optional<TimelineOpKind> TimelineOpFromName(std::string_view name);
// Communication by nature (p2p, the DP collectives, the embedding and
// layernorm all-reduces, the grad-norm all-reduce): its typical duration is
// a median, compute's a mean (the StragglerAnalysis method).
bool IsCommunicationOp(TimelineOpKind kind);
bool IsPipelineP2p(TimelineOpKind kind);

struct TimelineOp {
  TimeNs start_ns = 0;
  DurationNs dur_ns = 0;
  int64_t step = 0;
  SourceRef src;            // file and byte offset of the event
  int32_t worker = 0;       // index into OpTimeline::workers
  int32_t microbatch = -1;  // -1: not given
  int32_t chunk = -1;       // model chunk (virtual stage); -1: not given
  int32_t seq = 0;          // index among the worker's ops of this kind in this step
  TimelineOpKind kind = TimelineOpKind::kForwardCompute;
};

struct TimelineWorker {
  ParallelCoord coord;
  // False when the file does not say where the worker sits (no thread_name
  // metadata for its threads): coord is then unset until a --layout maps
  // `rank` to coordinates.
  bool coord_known = true;
  std::optional<int32_t> rank;  // global rank, when the file or the layout says
};

struct OpTimeline {
  uint32_t file = 0;
  std::optional<ParallelLayout> layout;  // sizes the file states or implies
  std::vector<TimelineWorker> workers;
  std::vector<TimelineOp> ops;  // in file order
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_OP_TIMELINE_H_
