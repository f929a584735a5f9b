// Hang evidence in rank logs: the lines that ProcessGroupNCCL's watchdog,
// gloo, NCCL and torchrun print when a job hangs or dies, read into
// RunBuilder::hang() (model/hang.h). The forms, the torch / NCCL versions
// that print them and the public logs they were learned from are listed in
// docs/input-formats.md ("Hang evidence in rank logs").
//
// These lines sit inside logs that other readers take (step-time logs,
// NCCL_DEBUG logs), so this is a line matcher, not a reader: the text-log
// reader (step_logs/text_log_reader.cc) and the NCCL_DEBUG reader
// (nccl/nccl_debug.cc) offer it every line they do not take themselves,
// and the hang-log reader (hang_log_reader.cc) claims files that hold
// such lines and no step lines. MaybeHangLine() is the cheap test in
// front of the parsing; most lines of a real log fail it.
//
// Worked example (torch 2.4, [rankN]: from TORCH_LOGS / torchrun's
// --tee, glog header, then the process group of the line):
//
//   [rank12]:[E1015 10:11:12.345678 123 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0]
//   Exception (either an error or timeout) detected by watchdog at work: 1580,
//   last enqueued NCCL work: 1582, last completed NCCL work: 1579.
//
// -> kWatchdogException, rank 12 (global), group_rank 0 of pg_id "1",
//    seq 1580, last_enqueued 1582, last_completed 1579, yearless time
//    Oct 15 10:11:12.345678. "[Rank M]" alone (torch 1.x, and the
//    "Watchdog caught" line of 2.x) names the rank within a group the line
//    does not name: group_rank M, rank unknown. Only in the default group
//    ("PG 0", "PG ID 0", "default_pg") is the group rank the global rank.
// A line without a rank of its own takes the rank of the file's path
// (rank-3.log), except torchrun's lines, which are about other processes.
//
// Wrappers around the line are taken off before it is read (`text` keeps
// the line as written): a Markdown quote's "> ", Open MPI's output tag
// "[1,3]<stdout>:" (its second number, the MPI rank, is the line's rank
// when nothing else names one), and Markdown autolinks whose text is the
// link's own host: "[10.1.3.201](http://10.1.3.201/)" -> "10.1.3.201".
//
// torch's fr_trace analyser prints a block per finding, read across its
// lines by the collector:
//
//   Collective 39 at entry 38 errors
//   group info: 0:default_pg
//   collective: nccl:all_reduce
//   expected ranks: {0, 1, 2, 3}
//   error msg: Culprit rank 2; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected
//   input sizes: '[[1025]]' does not match found input sizes: '[[262144]]'
//
// -> kFrTraceMismatch, seq 39, pg_id / pg_guid "0", pg_desc "default_pg",
//    op "nccl:all_reduce", ranks_named {2}, detail "SIZE_OR_SYNTAX_MISMATCH,
//    Expected input sizes: ...", and group "0" with ranks {0, 1, 2, 3}.
//    "Not all ranks joining collective 5 at entry 4" + "missing ranks: {1}"
//    -> kFrTraceNotJoined with ranks_named {1}.
//
// Not thread-safe; one collector per file.

#ifndef LAGGARD_INGEST_COMMON_HANG_LINES_H_
#define LAGGARD_INGEST_COMMON_HANG_LINES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ingest/common/python_traceback.h"
#include "ingest/common/text_reader.h"
#include "model/hang.h"

namespace laggard {

// Longest HangEvent::text kept, in bytes (cut at a UTF-8 boundary).
inline constexpr size_t kHangTextBytes = 512;

// False for lines that cannot be a hang line (or a pager prompt): a few
// substring tests, no allocation. True does not mean the line is one.
bool MaybeHangLine(std::string_view line);

// What one line says on its own. nullopt when it is not a hang line.
// `cut` (optional) is set when the line starts a known form but ends
// before the form does (a log cut mid-line). Fills everything but `src`
// and the path's rank; `text` is the line cut to kHangTextBytes.
std::optional<HangEvent> ParseHangLine(std::string_view line, bool* cut = nullptr);

// "(END)", "--More--", a lone ":": what a pager shows at its last page,
// left at the end of a log copied out of it.
bool IsPagerPrompt(std::string_view line);

class HangLineCollector {
 public:
  // Reads `line` when it is a hang line: appends a HangEvent (and the
  // process group it names, once per file) to ctx.out->hang() and returns
  // true. Returns false for any other line. torchrun's failure table
  // ("host : node-1", "rank : 3 (local_rank: 3)", "exitcode : -6 (pid:
  // 1234)") is read across its lines: one event per failed process. An
  // fr_trace block is one event, appended when the block ends (at the
  // first line that is not one of its fields, or in Finish()); its header
  // and field lines return true. A line without NCCL's "host:pid:tid"
  // prefix that repeats the tail of an earlier prefixed NCCL line (torch's
  // "Last error:" continuation) returns true and adds nothing.
  //
  // A Python traceback that ends a process's output (python_traceback.h)
  // becomes a kProcessExited event at Finish() when its exception is not a
  // communication error: its rank from the lines' prefix, else the path's.
  bool Offer(std::string_view line, uint64_t line_number, ReaderContext& ctx);

  // A reader that takes some lines itself (step lines) and offers the rest
  // hands those to LineTaken() while watching() is true: a traceback
  // followed by more of its process's output did not end the process.
  bool watching() const { return tracebacks_.watching(); }
  void LineTaken(std::string_view line) { tracebacks_.WentOn(line); }

  // Appends the file's HangLogInfo when it gave events (`lines_read`: the
  // file's last line number) and returns the number of events.
  uint64_t Finish(uint64_t lines_read, ReaderContext& ctx);

  uint64_t events() const { return events_; }

 private:
  struct TableEntry {
    std::optional<int32_t> rank, local_rank;
    std::string host;
  };

  // An fr_trace block being read: its event, and the group's ranks.
  struct FrBlock {
    bool open = false;
    bool in_stack = false;  // after "collective stack trace:": indented frames follow
    HangEvent event;
    uint64_t line = 0;                  // the header's
    std::vector<int32_t> ranks;         // "expected ranks: {0, 1}"
    std::optional<int32_t> world_size;  // "world size: 2", "expected ranks: 2"
  };

  // The process group `e` names, once per file; `ranks` (global, any
  // order) and `size` are set on it when given and not known yet.
  void AddGroup(const HangEvent& e, uint64_t line_number, ReaderContext& ctx,
                const std::vector<int32_t>& ranks = {}, std::optional<int32_t> size = {});
  // A field line of the open fr_trace block: true when `t` is one.
  bool FrField(std::string_view line, std::string_view t, uint64_t line_number);
  void CloseFrBlock(ReaderContext& ctx);
  // True when `t`, a line without NCCL's prefix, repeats the tail of an
  // earlier prefixed NCCL line.
  bool RepeatsPrefixedLine(std::string_view t) const;

  uint64_t events_ = 0;
  uint64_t last_line_ = 0;   // last non-blank line offered
  uint64_t pager_line_ = 0;  // last pager prompt offered
  uint64_t cut_line_ = 0;    // last hang line that ended early
  TableEntry table_;         // torchrun failure entry being read
  // gloo's monitoredBarrier report of a rank other than 0, until the
  // exception after it says whether its peer ever entered the barrier.
  struct PendingBarrier {
    uint64_t line = 0;
    size_t index = 0;  // of its event in the run's hang events
    int32_t from = 0;  // "from rank 0"
    std::optional<int32_t> rank;
  };
  void MonitoredBarrier(std::string_view t, uint64_t line_number, const HangEvent& e,
                        std::vector<HangEvent>& events);

  FrBlock fr_;  // fr_trace block being read
  PythonTracebacks tracebacks_;
  std::optional<PendingBarrier> barrier_;
  // "id\x1fguid\x1fdesc" -> index into ctx.out->hang().groups
  std::vector<std::pair<std::string, size_t>> groups_seen_;
  std::vector<std::string> prefixed_;  // last few prefixed NCCL lines, trimmed
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_HANG_LINES_H_
