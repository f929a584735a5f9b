// Hang part of the run model: what the ranks of a stopped job say about the
// collectives of their process groups. Readers of PyTorch Flight Recorder
// dumps (ingest/traces/flight_recorder/), of watchdog / timeout / NCCL
// error lines in rank logs (ingest/common/hang_lines.h) and of NCCL RAS
// status reports (ingest/hangs/ncclras_reader.cc) fill it; the hang
// detector reads it.
//
//   HangData
//   ├── groups[]     process groups: id ("0"), description ("default_pg"),
//   │                global ranks (FR pg_config, TORCH_DISTRIBUTED_DEBUG)
//   ├── dumps[]      one per Flight Recorder dump (one rank's ring buffer):
//   │     ├── status[]   per group: last enqueued / started / completed seq
//   │     └── entries[]  the collectives and p2p ops of the ring buffer
//   ├── events[]     one per watchdog / timeout / desync / mismatch /
//   │                transport error line, with what it names
//   └── ras[]        one per NCCL RAS status report (`ncclras`, NCCL >= 2.24):
//         ├── comm_groups[]  the summary table's rows
//         ├── comms[]        the communicators the report details (#0-0 ...)
//         │     └── ranks[]  the ranks it names, with what it says of each
//         └── processes[]    processes it could not reach (INCOMPLETE, DEAD)
//
// Process groups across processes: an FR dump names each group two ways.
// The id (pg_status keys, entries' pg_id) is a counter its own process
// keeps (the n-th group it created): "11" on rank 0 and "11" on rank 9 can
// be two groups. The name (pg_config keys, entries' process_group[0]) is
// torch's group name. What identifies a group on every rank is the
// pg_config record a name points at: description and member ranks. A
// dump's pg_config groups are the `groups` whose src.file is the dump's
// `file`.
//
// Ranks: `rank` fields are global ranks ("[rank12]:" prefixes, FR dumps'
// own rank). A rank inside a process group ("[PG 1 Rank 0]", "[Rank 3]" of
// a subgroup) is `group_rank`, never mixed with the global one. RAS names
// ranks within an NCCL communicator (`comm_rank`), which are global ranks
// only for a communicator of the whole job. Unknown facts are std::nullopt.

#ifndef LAGGARD_MODEL_HANG_H_
#define LAGGARD_MODEL_HANG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/process_group.h"
#include "model/source.h"
#include "model/time.h"

namespace laggard {

// Where an entry of a Flight Recorder ring buffer stood when it was dumped.
enum class CollectiveState : uint8_t { kUnknown, kScheduled, kStarted, kCompleted };
std::string_view CollectiveStateName(CollectiveState s);

struct StackFrame {
  std::string name;  // function
  std::string file;
  int32_t line = 0;
};

// One entry of a Flight Recorder ring buffer.
struct CollectiveRecord {
  int64_t record_id = 0;
  std::string pg_id;                      // pg_id: this process's id (pg_status key); else
                                          // process_group[0] when the entry has no pg_id
  std::string pg_name;                    // process_group[0]: its pg_config name; "" unknown
  std::string pg_desc;                    // process_group[1], when given
  std::optional<int64_t> collective_seq;  // collective_seq_id (0 / absent for p2p)
  std::optional<int64_t> p2p_seq;         // p2p_seq_id
  std::optional<int64_t> op_id;           // op_id (older dumps' seq_id)
  std::string op;                         // profiling_name: "nccl:all_reduce"
  std::optional<TimeNs> created_ns;       // time_created_ns
  std::optional<TimeNs> started_ns;       // time_discovered_started_ns
  std::optional<TimeNs> completed_ns;     // time_discovered_completed_ns
  std::optional<double> duration_ms;      // duration_ms (when timing was enabled)
  CollectiveState state = CollectiveState::kUnknown;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::string> input_dtypes;
  std::vector<std::string> output_dtypes;
  std::optional<bool> retired;
  std::optional<double> timeout_ms;  // timeout_ms
  std::optional<bool> is_p2p;        // is_p2p: a send / recv, matched by p2p_seq, not by group
  std::vector<StackFrame> frames;    // innermost first, as FR writes them
};

// A group's progress on one rank (FR pg_status).
struct GroupProgress {
  std::string pg_id;  // this process's id of the group (not its pg_config name)
  std::optional<int64_t> last_enqueued;
  std::optional<int64_t> last_started;
  std::optional<int64_t> last_completed;
};

// One rank's Flight Recorder dump.
struct FlightRecorderDump {
  uint32_t file = 0;             // index into Run::files
  std::optional<int32_t> rank;   // from the dump's own fields, else the file name
  std::string version;           // "2.4", "2.10" ...
  std::string format;            // "pickle" or "json"
  std::string comm_lib_version;  // NCCL's: nccl_version (2.7-2.9), comm_lib_version (2.10)
  std::vector<GroupProgress> status;
  std::vector<CollectiveRecord> entries;
  bool truncated = false;  // incomplete: the file ended inside the dump, or damage stopped it
};

// What a hang-related log line says.
enum class HangEventKind : uint8_t {
  kWatchdogTimeout,      // "Watchdog caught collective operation timeout: WorkNCCL(...)"
  kWatchdogException,    // "Exception (either an error or timeout) detected by watchdog at work: N"
  kBlockingWaitTimeout,  // "timed out in blocking wait" / "Operation timed out!" (blocking wait)
  kDesyncReport,         // desync debug: "... finished #N but didn't join #M"
  kCollectiveMismatch,   // TORCH_DISTRIBUTED_DEBUG=DETAIL: "Detected mismatch between collectives"
  kGlooTimeout,          // gloo: "Timed out waiting ... for recv" / "Connection closed by peer"
  kTransportError,       // NCCL: "NET/IB : Got completion from peer ... with error 12"
  kRemoteError,          // ncclRemoteError / "remote process exited or there was a network error"
  kProcessExited,        // torchrun: "exitcode: -6", "Signal 6 (SIGABRT) received"; or a
                         // Python traceback that ends the rank's output with an exception
                         // that is not a communication error (detail: "RuntimeError: ...")
  kWatchdogTerminated,   // "Process group watchdog thread terminated with exception: ...",
                         // "Some NCCL operations have failed or timed out": the watchdog
                         // takes the process down
  kDumpSignal,           // "Received a dump signal due to a collective timeout from rank R
                         // ... Last enqueued NCCL work: N, last completed NCCL work: M",
                         // "Observed flight recorder dump signal": the printing rank's own
                         // progress; R (ranks_named) is the rank whose watchdog fired
                         // first, a waiter, never a culprit
  kFrTraceNotJoined,     // torch's fr_trace analyser: "Not all ranks joining collective N at
                         // entry M" + "missing ranks: {1, 3}" (ranks_named: the missing)
  kFrTraceMismatch,      // fr_trace: "Collective N at entry M errors" + "error msg: Culprit
                         // rank R; Error type: T, ..." (ranks_named: the ranks that differ
                         // from fr_trace's reference rank; which side is wrong is not said)
  kNicEvent,             // "NET/IB : mlx5_0:1 Got async event : local access violation work
                         // queue error": the reporting host's own HCA (peer: the device)
  kNetSizeMismatch,      // "NET/IB : req 0/1 tag 0 peer P collective mismatch error, local
                         // size A remote size B": the two ends posted different sizes
  kCudaError,            // NCCL: "Cuda failure 'invalid argument'" (detail: the text)
  kVerbsError,           // NCCL: "Call to ibv_create_qp failed" (detail: the ibv_ call):
                         // a local verbs resource / device-access failure
  kCount,
};
std::string_view HangEventKindName(HangEventKind k);

struct HangEvent {
  HangEventKind kind = HangEventKind::kWatchdogTimeout;
  std::optional<int32_t> rank;        // global rank ("[rank12]:", "[Rank 3]" of the default group)
  std::optional<int32_t> group_rank;  // rank within pg_id ("[PG 1 Rank 0]")
  std::string pg_id;                  // "" unknown; "PG 1", "PG ID 2" -> "1", "2"
  std::string pg_desc;                // "(default_pg)" -> "default_pg"
  std::string pg_guid;                // "PG GUID 9" (torch 2.5+: the FR dump's pg_name)
  std::optional<int64_t> seq;         // SeqNum / "at work: N"
  std::optional<int64_t> last_enqueued;   // "last enqueued NCCL work: N"
  std::optional<int64_t> last_completed;  // "last completed NCCL work: N"
  std::string op;                         // OpType=ALLREDUCE, "all_reduce"
  std::optional<int64_t> numel_in;
  std::optional<int64_t> numel_out;
  std::optional<double> timeout_ms;
  std::optional<double> ran_for_ms;
  std::vector<int32_t> ranks_named;   // ranks a desync report / mismatch names
  std::optional<int32_t> local_rank;  // torchrun's "local_rank: 3"
  std::optional<int32_t> exit_code;   // torchrun's "exitcode: -6" (-N: killed by signal N)
  std::optional<int32_t> error_code;  // NET/IB "with error 12" / "status=12" (ibv_wc_status)
  std::string host;                   // host of the line, or of the peer in error
  std::optional<int64_t> pid;         // NCCL's "host:pid:tid" prefix
  std::string peer;                   // "peer 10.0.0.2<34567>", NIC / device
  // What the line says in words that fit no field above: a CUDA error's
  // text, an HCA event, fr_trace's error type and sizes, NET's local and
  // remote sizes.
  std::string detail;
  std::optional<TimeNs> time_ns;  // the line's own dated timestamp, when it has one
  // glog's "[E1015 10:11:12.345678 ...]" has no year: ns since Jan 1 00:00
  // of an unknown year, in the writer's local time as printed. Orders the
  // lines of one job (across a New Year it wraps); never a TimeNs.
  std::optional<int64_t> yearless_time_ns;
  std::string text;  // the line, cut to 512 bytes
  SourceRef src;
};

// A log that held hang lines (HangEvent), as its reader saw it. The
// detector needs to know whether a log is whole: a log cut by a pager or a
// full disk says nothing about the ranks whose lines it no longer shows.
struct HangLogInfo {
  uint32_t file = 0;       // index into Run::files
  uint64_t events = 0;     // HangEvents the file gave
  uint64_t lines = 0;      // lines read
  bool truncated = false;  // ends in a pager prompt ("(END)", "--More--") or inside a hang line
  std::string truncation;  // why `truncated`, in words; "" when not
};

// What a RAS report says of one rank of a communicator ("Rank 7 has launched
// up to operation 60 -- GPU 3 managed by process 1650386 on node node1").
// RAS names a rank only when it is an outlier: few ranks (by default at most
// 10 and at most 25% of the communicator) share what it says.
enum class RasRankIssue : uint8_t {
  kMissing,  // no data from its process: INCOMPLETE, "Missing communicator data"
  kNoComm,   // its process answered but is not in the communicator (NOCOMM / UNKNOWN)
  kStatus,   // its status differs from the others' ("has status FINALIZE")
  kOpCount,  // its operation count differs ("has launched up to operation 60")
  kError,    // it reported an NCCL error ("reported Remote process error")
  kCount,
};
std::string_view RasRankIssueName(RasRankIssue i);

struct RasRank {
  int32_t comm_rank = 0;
  RasRankIssue issue = RasRankIssue::kMissing;
  std::string op;                       // kOpCount: "AllReduce" (2.26+), "collective" (2.24, 2.25)
  std::optional<int64_t> ops_launched;  // kOpCount: "launched up to operation N"; 0: none
  std::string status;                   // kStatus: RUNNING, INIT, FINALIZE, ABORT, NOCOMM, UNKNOWN
  std::string error;                    // kError: "Remote process error", "System error" ...
  std::optional<int32_t> gpu;           // CUDA device
  std::optional<int64_t> pid;
  std::string node;  // the process's IP address as RAS prints it
  SourceRef src;
};

// "26 ranks have launched up to operation 6650": how many ranks of a
// communicator share one count, printed for every count when they differ.
struct RasOpCount {
  std::string op;  // as RasRank::op
  int64_t ops_launched = 0;
  int32_t ranks = 0;
  SourceRef src;
};

// A communicator the report details under Errors or Warnings.
struct RasCommunicator {
  std::string id;                        // "#0-0": summary group 0, communicator 0 of it
  std::string hash;                      // "27a079b828ff1a75", as NCCL_DEBUG=INFO prints commHash
  int32_t group = 0;                     // index into RasReport::comm_groups' `index`
  std::vector<std::string> problems;     // INCOMPLETE, ERROR, MISMATCH (each heading seen)
  std::optional<int32_t> ranks_missing;  // "Missing communicator data from N ranks"
  std::vector<RasOpCount> op_counts;
  std::vector<RasRank> ranks;
  SourceRef src;
};

// A row of the summary table: communicators alike in size, nodes, status
// and errors.
struct RasCommGroup {
  int32_t index = 0;
  int32_t comms = 0;           // "Comms in group"
  int32_t nodes = 0;           // "Nodes per comm"
  std::string ranks_per_node;  // "8" or "7-8"
  int32_t ranks_per_comm = 0;  // the communicators' size
  int32_t ranks_in_group = 0;  // distinct GPUs of the group that reported
  std::string status;          // RUNNING, INIT, FINALIZE, ABORT, NOCOMM, UNKNOWN
  std::string errors;          // OK, MISMATCH, INCOMPLETE, ERROR or a comma list of them
  SourceRef src;
};

// A process the report could not reach: "Process 3487984 on node
// 172.16.64.213 managing GPU 5" under INCOMPLETE (no answer this time) or
// DEAD (no answer for 60 s: RAS gave up on it).
struct RasProcess {
  int64_t pid = 0;
  std::string node;
  std::vector<int32_t> gpus;  // CUDA devices
  bool dead = false;
  SourceRef src;
};

// One RAS status report: what `ncclras` (or `echo status | nc localhost
// 28028`) printed, from the version banner to the Warnings section.
struct RasReport {
  uint32_t file = 0;         // index into Run::files
  std::string nccl_version;  // "2.30.7"; "" when the banner was not captured
  // Job summary totals, when the consistent table was printed.
  std::optional<int32_t> nodes;
  std::optional<int32_t> processes;
  std::optional<int32_t> gpus;
  std::vector<RasCommGroup> comm_groups;
  std::vector<RasCommunicator> comms;
  std::vector<RasProcess> processes_lost;
  std::optional<int32_t> processes_missing;  // "Missing communicator data from N job processes"
  std::optional<int32_t> processes_dead;     // "N job processes are considered dead"
  std::optional<int32_t> timeouts;           // "Encountered N communication timeouts"
  bool no_comms = false;                     // "No communicator data collected!"
  bool complete = false;                     // the report reached its Warnings section
  SourceRef src;                             // its "Job summary" (or first) line
};

struct HangData {
  std::vector<ProcessGroupInfo> groups;
  std::vector<FlightRecorderDump> dumps;
  std::vector<HangEvent> events;
  std::vector<HangLogInfo> logs;
  std::vector<RasReport> ras;
  bool empty() const {
    return groups.empty() && dumps.empty() && events.empty() && logs.empty() && ras.empty();
  }
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_HANG_H_
