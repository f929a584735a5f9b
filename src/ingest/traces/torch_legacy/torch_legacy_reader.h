// Reader of the Chrome trace that torch's legacy autograd profiler writes:
// PyTorch built without Kineto (Debian's python3-torch 1.13, where
// torch.autograd.kineto_available() is False) exports this from
// torch.profiler.profile(...).export_chrome_trace(), from
// torch.profiler.tensorboard_trace_handler(...) and from
// torch.autograd.profiler.profile().export_chrome_trace(). One RankTrace per
// file, CPU only. Ingest calls it through the trace-reader list
// (ingest/readers.cc) for every file whose head it sniffs as this format.
//
// A real file (tests/data/torch_legacy/, 2-process gloo DDP) is one line,
// a bare JSON array of complete events, written by a printf template
// (torch/autograd/profiler_util.py, EventList.export_chrome_trace):
//   [{"name": "aten::zeros", "ph": "X", "ts": 204, "dur": 85, "tid": 1,
//     "pid": "CPU functions", "args": {}}, {"name": "ProfilerStep#1", "ph":
//     "X", "ts": 306, "dur": 146412, "tid": 1, "pid": "CPU functions",
//     "args": {}}, ... {"name": "gloo:all_reduce", "ph": "X", "ts": 112891,
//     "dur": 33120, "tid": 2, "pid": "CPU functions", "args": {}}, ...]
// No "cat", no distributedInfo, no base time: "ts" and "dur" are
// microseconds from the moment profiling began in that process, so every
// rank has its own origin (TraceOrigin::kFileStart; ingest aligns them,
// ingest/traces/common/clock_alignment.h). "args" is always {}:
// record_shapes=True adds nothing to this export, so there are no shapes.
//
// What becomes of each event (ph "X"):
//   ProfilerStep#N                  TraceStep N (this torch names loop step i
//                                   ProfilerStep#(i-1): the number is kept as
//                                   written, the same on every rank); with
//                                   ReaderContext::step_marker the ranges it
//                                   names instead (step_marker.h)
//   gloo:*, nccl:*, mpi:*, ucc:*    communication op, and a CollectiveCall
//     xccl:*                        of its canonical kind (all_reduce ->
//                                   "allreduce"), on whichever thread it is
//                                   (the DDP reducer's gloo worker threads)
//   c10d::*, record_param_comms     communication op; the collectives when
//                                   the file has no backend range (as the
//                                   Kineto reader's CPU-only traces)
//   any other name with "::"        CPU op (aten::addmm, autograd::engine::
//     or an autograd node           evaluate_function: ..., torch::autograd::
//     (AddmmBackward0)              AccumulateGrad), OpClass kOtherCompute,
//                                   stream = tid, device -1
//   any other name                  not an op: a record_function label
//                                   (DistributedDataParallel.forward,
//                                   Optimizer.step#SGD.step, a data loader's
//                                   __next__) spans time its ops do not fill,
//                                   which Kineto's CPU-only traces leave out
//                                   too (cat user_annotation); counted under
//                                   trace.events_unused
//   "tid": " node_id:1, thread_id:7 "  an event of a remote RPC worker, not
//                                   this rank's: trace.events_unused
// Other events: ph "s" (cat cpu_to_cuda, the arrow of a CUDA launch whose
// kernel this export never writes) and any other phase are counted under
// trace.events_unused, by kind, at the first one's byte offset.
//
// Rank: from the path (ctx.rank_from_path: rank0, rank-1, worker1, or
// --rank-from / --file-ranks), else none and a trace.no_rank note
// (tensorboard_trace_handler's default name is host_pid.<ms>.pt.trace.json).
//
// Names: the template writes names raw, without JSON escapes, so a label
// holding '"' or '\' is not valid JSON. A name ends at the first '"' (not
// after a '\') that blanks and then '}', or ',' and '"', follow: the next
// member or the end of the event. Example: "name": "say "hi", there", "ph"
// is the name say "hi", there. "\n", "\"" and the like are decoded, a '\'
// that starts no escape is kept (a name that ends in '\' is misread).
// Other strings are read as JSON.
//
// Damage: a file cut while writing (a killed job: the array never closed)
// keeps every complete event before the cut and counts one trace.truncated
// at the cut's byte offset (events_lost 1 when the cut is inside an event);
// an event without a string name, with a missing or non-numeric ts / dur,
// or a negative dur is one trace.bad_event at its offset, and reading
// resumes at the next event (after "}, {"; after stray bytes between
// events, at the next '{'); gzip damage is
// gzip.truncated / gzip.corrupt. Memory holds one 1 MiB chunk and the
// event being read (events over 1 MiB are bad events).
//
// Thread-safety: the reader is stateless; each Read() owns its buffers.

#ifndef LAGGARD_INGEST_TRACES_TORCH_LEGACY_TORCH_LEGACY_READER_H_
#define LAGGARD_INGEST_TRACES_TORCH_LEGACY_TORCH_LEGACY_READER_H_

#include <memory>

#include "ingest/traces/common/trace_reader.h"

namespace laggard {

std::unique_ptr<TraceReader> MakeTorchLegacyTraceReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_TORCH_LEGACY_TORCH_LEGACY_READER_H_
