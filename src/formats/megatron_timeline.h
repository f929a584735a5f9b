// The raw vocabulary of Megatron-style op timelines: the Chrome trace that
// ByteDance's StragglerAnalysis (OSDI'25, "Understanding Stragglers in Large
// Model Training Using What-if Analysis") exports from a Megatron-LM job's
// per-op timers (analyzer/to_timeline.py). The reader
// (ingest/traces/megatron/) matches these names; the simulator's pipeline
// writer (simulator/) writes them, so what one writes the other reads.
//
//   [{"name": "forward-compute", "cat": "forward-compute", "pid": 0,
//     "tid": 10, "ts": 112860.1, "dur": 63480.2, "ph": "X",
//     "args": {"step": 23, "model_chunk": 0, "mb_id": 0, "seq_id": 0}},
//    ...
//    {"name": "thread_name", "pid": 0, "tid": 10, "ph": "M",
//     "args": {"name": "PP rank 1, TP rank 0, compute"}},
//    {"name": "process_name", "pid": 0, "ph": "M",
//     "args": {"name": "DP rank [0]"}}]
//
// pid is the DP rank; tid is global rank * 5 + the thread's category index
// (compute, pp-comm, tp-comm, dp-comm, misc); ts / dur are microseconds,
// floats. args.mb_id / model_chunk are -1 where they do not apply (p2p ops,
// the step's collectives); seq_id numbers the ops of one type of one worker
// in one step. A communication op keeps only its transfer: ts is when its
// last peer arrived.
//
// Header-only, constants only (laggard_formats).

#ifndef LAGGARD_FORMATS_MEGATRON_TIMELINE_H_
#define LAGGARD_FORMATS_MEGATRON_TIMELINE_H_

#include <array>
#include <string_view>

namespace laggard::megatron_timeline {

// The op types (event "name" and "cat"), in the order of TimelineOpKind
// (model/op_timeline.h).
inline constexpr std::string_view kForwardCompute = "forward-compute";
inline constexpr std::string_view kBackwardCompute = "backward-compute";
inline constexpr std::string_view kForwardSend = "forward-send";
inline constexpr std::string_view kForwardRecv = "forward-recv";
inline constexpr std::string_view kBackwardSend = "backward-send";
inline constexpr std::string_view kBackwardRecv = "backward-recv";
inline constexpr std::string_view kParamsAllGather = "params-all-gather";
inline constexpr std::string_view kGradsReduceScatter = "grads-reduce-scatter";
inline constexpr std::string_view kSeparateGradsAllReduce = "separate-grads-all-reduce";
inline constexpr std::string_view kEmbeddingGradsAllReduce = "embedding-grads-all-reduce";
inline constexpr std::string_view kLayernormGradsAllReduce = "layernorm-grads-all-reduce";
inline constexpr std::string_view kOptimizerClipMainGrad = "optimizer-clip-main-grad";
inline constexpr std::string_view kOptimizer = "optimizer";
inline constexpr std::string_view kGc = "gc";

inline constexpr std::array<std::string_view, 14> kOpTypes = {kForwardCompute,
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
                                                              kGc};

// Thread categories, in tid order (tid = rank * kCategories.size() + index).
inline constexpr std::array<std::string_view, 5> kCategories = {"compute", "pp-comm", "tp-comm",
                                                                "dp-comm", "misc"};

// Metadata events.
inline constexpr std::string_view kThreadName = "thread_name";
inline constexpr std::string_view kThreadSortIndex = "thread_sort_index";
inline constexpr std::string_view kProcessName = "process_name";
// thread_name's args.name: "PP rank <stage>, TP rank <tp>, <category>".
inline constexpr std::string_view kPpRankPrefix = "PP rank ";
inline constexpr std::string_view kTpRankPrefix = "TP rank ";
// process_name's args.name: "DP rank [<dp>]".
inline constexpr std::string_view kDpRankPrefix = "DP rank [";

// Members of an op event's args.
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kModelChunk = "model_chunk";
inline constexpr std::string_view kMicrobatch = "mb_id";
inline constexpr std::string_view kSeqId = "seq_id";

}  // namespace laggard::megatron_timeline

#endif  // LAGGARD_FORMATS_MEGATRON_TIMELINE_H_
