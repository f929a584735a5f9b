// Reader of Kineto / torch.profiler traces in the Chrome trace event format
// (.json or .json.gz, gzip detected by content): one RankTrace per file with
// the device ops (classified), the collective calls, the ProfilerStep#N
// steps and what the trace says about its rank. Ingest() calls it through
// the trace-reader list the CLI builds (next to the nsys reader) for every
// file whose head it sniffs as a trace (kSniffCertain with "traceEvents",
// a little less on other Kineto keys or an array of events with ph and ts,
// above every other JSON reader; never a JSONL step log).
//
// Both layouts load: the JSON Object Format ({"traceEvents": [...],
// "distributedInfo": ..., "baseTimeNanoseconds": ...}, members in any order)
// and the JSON Array Format (a bare [...] of events, whose closing ']' the
// format allows to be missing).
//
// What is taken from the trace:
//   events ph "X", cat kernel / Kernel     device op, classified by name:
//                                          communication (a "Collective name"
//                                          arg, or nccl* / rccl* / c10d::),
//                                          attention (flash, fmha, attention,
//                                          sdpa, mem_eff), GEMM (gemm, gemv,
//                                          xmma, cutlass, cublas, wgmma,
//                                          nvjet, sm<NN>_*, Cijk_ = ROCm
//                                          Tensile / hipBLASLt), else other
//          cat gpu_memcpy / Memcpy,      kMemcpy / kMemset ops
//              gpu_memset / Memset
//          name ProfilerStep#N           TraceStep (cat user_annotation or
//                                        cpu_op; GPU-side copies ignored);
//                                        with ReaderContext::step_marker the
//                                        ranges it names instead
//                                        (ingest/traces/common/step_marker.h)
//          cat cpu_op, and comm          ops of a CPU-only trace, device -1
//          annotations (gloo:*, nccl:*)  (see CPU-only below)
//   distributedInfo.rank / world_size   rank and world size; without a rank
//                                       ctx.rank_from_path, else a
//                                       trace.no_rank note
//   distributedInfo.hostname, top-level host_name / hostname   host
//   baseTimeNanoseconds                 added to every time (0 when absent)
//
// Times: ts and dur are microseconds whatever displayTimeUnit says (it only
// sets the viewer's display). ts is read as decimal text, not as a double:
// "ts": 1712195495505583.123 is 1712195495505583123 ns, which a double
// (53-bit mantissa) cannot hold; digits beyond the ns are rounded half up.
// Kineto writes baseTimeNanoseconds after traceEvents, so times are kept
// base-relative while reading and the base is added at the end.
//
// Collectives: one CollectiveCall per communication kernel (per CPU
// collective in a CPU-only trace). The collective name is canonical so that
// ranks and PyTorch versions compare: "Collective name" arg, annotation or
// kernel name, lowercased without '_', mapped to allreduce, allgather,
// reducescatter, alltoall, broadcast, sendrecv, send, recv, reduce, gather,
// scatter or barrier. Example: ncclDevKernel_AllReduce_Sum_f32_RING_LL ->
// "allreduce"; "_allgather_base" -> "allgather"; ncclDevKernel_Generic -> ""
// (unknown). A kernel without "Seq" takes it (and any other missing field)
// from the record_param_comms CPU op with the same "External id".
//
// CPU-only: a trace read to its end with CPU ops but no device op and no
// CUDA / HIP runtime call (a gloo job, or GPU tracing off). Its ops are the
// cpu_op events and the backend's comm ranges; its collectives are those
// ranges (gloo:all_reduce, nccl:all_to_all) when present, else the
// record_param_comms ops, else the c10d:: ops: each collective shows at
// several of these levels, and only one level is counted. A trace cut short
// is judged on what it kept: cut before any GPU event, it is CPU-only and
// keeps its CPU ops, as it would read whole. Kineto writes CPU ops first, so
// a GPU trace cut early reads the same; when its header lists GPUs
// (deviceProperties, an NCCL backend) its trace.truncated note says so.
//
// Damage: a cut file (job killed while writing) keeps every complete event
// before the cut and counts one trace.truncated at the cut's byte offset;
// an event with "ts": "abc", no ts / dur, or a negative dur is one
// trace.bad_event at its offset; gzip damage is gzip.truncated / .corrupt.
//
// Stages, each in its own files and testable alone (kineto/):
//   byte_scanner.h     SIMD over raw bytes: brackets outside strings, the
//                      ends of strings and scalars
//   json_tokens.h      the JSON subset Kineto writes: token ends, decoders
//   trace_tokenizer.h  the file: its top-level members, each event's span
//   event_tokenizer.h  one event: prefilter, flat walker, templates, On-Demand
//   kineto_parser.h    the events -> one RankTrace, through the trace
//                      builder the nsys reader shares (common/trace_builder.h)
// kineto_reader.cc runs them, once per pass (see CPU-only above).
//
// Streaming: memory holds the largest event plus a 512 KiB chunk, not the
// file; events over 8 MiB are trace.bad_event. Every read path (templates,
// walker, On-Demand) gives the same fields. The design and its switches:
// docs/input-formats.md, "How the Kineto reader streams a trace".
//
// Thread-safety: the reader is stateless; each Read() owns its buffers and
// parsers, so ingest threads read different files in parallel.

#ifndef LAGGARD_INGEST_TRACES_KINETO_KINETO_READER_H_
#define LAGGARD_INGEST_TRACES_KINETO_KINETO_READER_H_

#include <memory>
#include <string>

#include "ingest/traces/common/trace_reader.h"

namespace laggard {

std::unique_ptr<TraceReader> MakeKinetoTraceReader();

// The kernels in use, e.g. "event boundaries: avx512, events: flat walker,
// else on-demand, simdjson stage 1: icelake, simdjson on-demand: fallback"
// (the indexer and simdjson's stage 1
// are chosen at run time; the On-Demand front end is compiled for the
// build's baseline ISA, which is "fallback" without -march flags). For
// benchmarks and bug reports.
std::string KinetoJsonImplementation();

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_KINETO_KINETO_READER_H_
