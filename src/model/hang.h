// Hang part of the run model: what the ranks of a stopped job say about the
// collectives of their process groups. Readers of PyTorch Flight Recorder
// dumps (ingest/traces/flight_recorder/) and of watchdog / timeout / NCCL
// error lines in rank logs (ingest/common/hang_lines.h) fill it; the hang
// detector reads it.
//
//   HangData
//   ├── groups[]     process groups: id ("0"), description ("default_pg"),
//   │                global ranks (FR pg_config, TORCH_DISTRIBUTED_DEBUG)
//   ├── dumps[]      one per Flight Recorder dump (one rank's ring buffer):
//   │     ├── status[]   per group: last enqueued / started / completed seq
//   │     └── entries[]  the collectives and p2p ops of the ring buffer
//   └── events[]     one per watchdog / timeout / desync / mismatch /
//                    transport error line, with what it names
//
// Ranks: `rank` fields are global ranks ("[rank12]:" prefixes, FR dumps'
// own rank). A rank inside a process group ("[PG 1 Rank 0]", "[Rank 3]" of
// a subgroup) is `group_rank`, never mixed with the global one. Unknown
// facts are std::nullopt.

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
  std::string pg_id;                      // process_group[0] / pg_id
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
  std::string pg_id;
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
  kProcessExited,        // torchrun: "exitcode: -6", "Signal 6 (SIGABRT) received"
  kWatchdogTerminated,   // "Process group watchdog thread terminated with exception: ...",
                         // "Some NCCL operations have failed or timed out": the watchdog
                         // takes the process down
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
  std::string peer;                   // "peer 10.0.0.2<34567>", NIC / device
  std::optional<TimeNs> time_ns;      // the line's own dated timestamp, when it has one
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

struct HangData {
  std::vector<ProcessGroupInfo> groups;
  std::vector<FlightRecorderDump> dumps;
  std::vector<HangEvent> events;
  std::vector<HangLogInfo> logs;
  bool empty() const { return groups.empty() && dumps.empty() && events.empty() && logs.empty(); }
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_HANG_H_
