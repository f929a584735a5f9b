// Reader of Megatron-style op timelines: the Chrome trace that ByteDance's
// StragglerAnalysis (OSDI'25, "Understanding Stragglers in Large Model
// Training Using What-if Analysis"; analyzer/to_timeline.py) writes from a
// Megatron-LM job's per-op timers. One OpTimeline (model/op_timeline.h) per
// file: the job's workers with their (dp, pp, tp) place and the ops of each
// step, for the what-if replay. Ingest calls it through the trace-reader
// list (ingest/readers.cc) for every file whose head it sniffs as this
// format; the raw names are in formats/megatron_timeline.h.
//
// A real file (the corpus' timeline-ST.json.gz, dp 2 x pp 4, 32 steps) is
// gzip'd, one line, a bare JSON array, every op first, then the metadata:
//   [{"name":"backward-compute","cat":"backward-compute","pid":0,"tid":0,
//     "ts":848671.6747283936,"dur":138679.68320846558,"ph":"X",
//     "args":{"step":23,"model_chunk":0,"mb_id":0,"seq_id":0}},
//    {"name":"backward-recv","cat":"backward-recv","pid":0,"tid":1,
//     "ts":847876.4295578003,"dur":802.0401000976562,"ph":"X",
//     "args":{"step":23,"model_chunk":-1,"mb_id":-1,"seq_id":0}}, ...
//    {"name":"thread_name","pid":1,"tid":35,"ph":"M",
//     "args":{"name":"PP rank 3, TP rank 0, compute"}},
//    {"name":"thread_sort_index","pid":1,"tid":35,"ph":"M",
//     "args":{"sort_index":35}}, ...
//    {"name":"process_name","pid":1,"ph":"M","args":{"name":"DP rank [1]"}}]
//
// What becomes of each event:
//   ph X, name one of kOpTypes          a TimelineOp: kind = name; worker =
//                                       the thread's (below); start_ns /
//                                       dur_ns = ts / dur (µs, decimal text
//                                       read exactly, rounded to the ns);
//                                       step = args.step; microbatch =
//                                       args.mb_id, chunk = args.model_chunk,
//                                       seq = args.seq_id (-1 or null: not
//                                       given; a missing seq_id is numbered
//                                       by start among the worker's ops of
//                                       the kind in the step); src = {file, 0}
//   ph X, another name                  not taken: timeline.op_unknown, once
//     (tp-allreduce, data-load,         per name with its count, at the
//     forward-backward, ...)            first one's offset (the exporter
//                                       puts these on its tp-comm / compute
//                                       / misc threads; the vocabulary has
//                                       no place for them in the replay)
//   ph M thread_name                    the thread (pid, tid) sits at
//     "PP rank S, TP rank T, <cat>"     (dp = pid, pp = S, tp = T)
//   ph M process_name "DP rank [d]"     checked against the pid; a label
//   ph M thread_sort_index              display order; taken, unused
//   other phases and metadata           trace.events_unused, by kind
// Workers, their ranks (tid / 5) and the layout: timeline_assembler.h.
//
// Quirks of the producer: the exporter writes every thread_name after the
// last op, so a cut file loses its metadata first (its workers are then
// unplaced: the analysis needs the layout from elsewhere); ujson writes no
// blanks, Python's json ", " and ": " (both read); it writes null for an
// arg the job's timers lack (mb_id of old Megatron, model_chunk without
// virtual pipelining); tid's category index follows its own list (compute,
// pp-comm, tp-comm, dp-comm, misc) whatever the thread_name says; steps are
// laid end to end with synthetic 10% gaps, and a communication op keeps
// only its transfer (ts = when the last peer arrived).
//
// Damage: a file cut while writing keeps every complete event before the
// cut and counts one trace.truncated at the cut's byte offset; an event
// that is not valid JSON, lacks pid / tid / ts / dur / args.step, has a
// negative dur or a non-integer index is one trace.bad_event at its offset,
// and reading resumes after it (at the next "}, {" when its brackets do not
// balance); a file without any op counts trace.no_events and gives no
// timeline; gzip damage is gzip.truncated / gzip.corrupt.
//
// Memory: one 1 MiB chunk of the file plus the event being read (events
// over 1 MiB are bad events) and simdjson's padding, plus the ops (56 bytes
// each) and one entry per thread; the file is never held whole.
//
// Thread-safety: the reader is stateless; each Read() owns its buffers.

#ifndef LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_TIMELINE_READER_H_
#define LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_TIMELINE_READER_H_

#include <memory>

#include "ingest/traces/common/trace_reader.h"

namespace laggard {

std::unique_ptr<TraceReader> MakeMegatronTimelineReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_MEGATRON_MEGATRON_TIMELINE_READER_H_
