// Reader of PyTorch Flight Recorder dumps: the ring buffer of collectives
// that ProcessGroupNCCL writes per rank when its watchdog times out
// (TORCH_NCCL_DUMP_ON_TIMEOUT=1) to TORCH_NCCL_DEBUG_INFO_TEMP_FILE /
// TORCH_FR_DUMP_TEMP_FILE + rank (default /tmp/nccl_trace_rank_<rank>).
// One FlightRecorderDump (model/hang.h) per file, and its pg_config groups,
// into ctx.out->hang(). Ingest calls it through the trace-reader list
// (ingest/readers.cc) for every file whose head it sniffs as a dump.
//
// Two forms, both read:
//   - the default, a pickle of a dict written by torch's C++ pickler
//     (protocol 2; read by pickle_reader.h, which refuses any opcode that
//     names or calls code);
//   - the JSON of _dump_nccl_trace_json / dump_json (nlohmann, keys sorted).
// What each dump version writes (checked against torch's source, see
// docs/input-formats.md and tests/data/hangs/make_fr_dumps.py):
//   {"version": "2.10", "pg_config": {"0": {"name": "0", "desc":
//    "default_pg", "ranks": "[0, 1, 2, 3]"}}, "comm_lib_version": "2.27.3",
//    "pg_status": {"0": {"last_enqueued_collective": 6,
//    "last_started_collective": 6, "last_completed_collective": 5}},
//    "entries": [{"frames": [{"name": "all_reduce", "filename": "...",
//    "line": 2501}, ...], "record_id": 7, "pg_id": 0, "process_group":
//    ("0", "default_pg"), "thread_name": ..., "thread_id": ...,
//    "collective_seq_id": 6, "p2p_seq_id": 0, "op_id": 6, "profiling_name":
//    "nccl:all_reduce", "time_created_ns": 1718000001750000000,
//    "duration_ms": 3.25, "input_sizes": [[1048576]], "input_dtypes":
//    ["Float"], "output_sizes": ..., "output_dtypes": ..., "state":
//    "started", "time_discovered_started_ns": ...,
//    "time_discovered_completed_ns": None, "retired": False, "timeout_ms":
//    600000, "is_p2p": False}]}
// 2.3 - 2.6 lack comm_lib_version (2.7 - 2.9 call it nccl_version) and the
// thread keys; JSON writes pg_status values as decimal strings, 0 for a
// time not discovered, no frames, and leaves "entries" out when empty.
//
// What becomes of it:
//   pg_config[name]          a ProcessGroupInfo: id = name, desc, ranks (the
//                            string "[0, 1]" or a list; [] = every rank,
//                            whole_world), size = the ranks' count, src =
//                            the dump's file; a dump without pg_config
//                            (older versions) is noted:
//                            hang.dump_no_pg_config
//   pg_status[uid]           a GroupProgress: the three seqs (ints or
//                            decimal strings; -1 kept as written)
//   entries[]                CollectiveRecords in buffer order; pg_id =
//                            pg_id (the process's own id of the group, the
//                            key of pg_status; else process_group[0]),
//                            pg_name = process_group[0] (the key of
//                            pg_config), pg_desc = process_group[1]; a time
//                            of 0 or None is unknown; state scheduled /
//                            started / completed
//   version, nccl_version /  the dump's version and NCCL version
//   comm_lib_version
//   nccl_comm_state, thread  not read (NCCLX communicator state; the
//   keys                     recording thread)
// Rank: a top-level "rank" when a dump has one (none of the versions
// checked does), else ctx.rank_from_path (nccl_trace_rank_3, --rank-from,
// --file-ranks), else the number that ends the file name (dump_3.pkl ->
// 3), else unknown: hang.dump_no_rank.
//
// Damage, counted, never thrown: a dump cut while written keeps every
// complete entry, group and status before the cut (a cut entry is dropped)
// and counts hang.dump_truncated at the cut's offset; damaged bytes (an
// undefined opcode, bad JSON) count hang.dump_corrupt and keep what came
// before them the same way; a pickle holding an opcode dumps never write
// (GLOBAL, REDUCE, BUILD, ...) or whose top value is no dict is refused
// whole: hang.dump_refused; an entry or record with a missing or wrong-type
// field is hang.dump_bad_entry and skipped; an unknown version is noted
// (hang.dump_version_unknown) and read all the same; gzip damage is
// gzip.truncated / gzip.corrupt.
//
// Memory: the whole file (a dump is a few MB: FR keeps 2000 entries by
// default; files over kMaxDumpBytes are refused) and its value tree.
//
// Thread-safety: the reader is stateless; each Read() owns its buffers.

#ifndef LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_FLIGHT_RECORDER_READER_H_
#define LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_FLIGHT_RECORDER_READER_H_

#include <cstdint>
#include <memory>

#include "ingest/traces/common/trace_reader.h"

namespace laggard {

inline constexpr uint64_t kMaxDumpBytes = 256ull << 20;

std::unique_ptr<TraceReader> MakeFlightRecorderReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_FLIGHT_RECORDER_READER_H_
