// The events of one Megatron-style op timeline -> one OpTimeline
// (model/op_timeline.h), for the reader (megatron_timeline_reader.h), which
// frames and parses each event (megatron_event.h) and hands it here in file
// order with its byte offset.
//
// Ops come before the metadata that places their threads (the exporter
// writes every thread_name after the last op), so the ops are kept with
// their thread, (pid, tid), and Finish() makes the workers:
//   - a thread named "PP rank S, TP rank T, <category>" belongs to worker
//     (dp = pid, pp = S, tp = T);
//   - a thread without thread_name whose rank group (pid, tid / 5) has named
//     threads that agree belongs to their worker (a file cut inside its
//     metadata);
//   - any other thread makes a worker of its own per (pid, tid / 5), with
//     coord_known false.
// worker.rank is tid / 5 when all of a worker's threads agree. Workers are
// in Megatron's rank order (pp, then dp, then tp), the unplaced ones after
// them by rank. layout (when every worker is placed): dp = the number of
// distinct pids, which must be 0..n-1; pp, tp = the largest stage / TP rank
// + 1; vpp = the largest model_chunk + 1 (at least 1).
//
// Counted, never dropped silently: events with a missing or malformed
// member (trace.bad_event at their offset), op types outside the
// vocabulary (timeline.op_unknown, once per name with its count, at the
// first one), other phases and metadata (trace.events_unused), workers the
// file does not place or a layout it does not give (timeline.layout_unknown),
// a file without any op (trace.no_events: no timeline then).
//
// Thread-safety: one assembler per file being read.

#ifndef LAGGARD_INGEST_TRACES_MEGATRON_TIMELINE_ASSEMBLER_H_
#define LAGGARD_INGEST_TRACES_MEGATRON_TIMELINE_ASSEMBLER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/common/text_reader.h"
#include "ingest/traces/megatron/megatron_event.h"
#include "model/op_timeline.h"

namespace laggard::megatron {

// "PP rank 1, TP rank 0, compute" -> {1, 0, "compute"}; nullopt when the
// text is not of that form (the numbers in [0, kMaxRank]).
struct ThreadPlace {
  int32_t pp = 0;
  int32_t tp = 0;
  std::string_view category;
};
std::optional<ThreadPlace> ParseThreadName(std::string_view text);

// "DP rank [1]" -> 1; nullopt when the text is not of that form.
std::optional<int32_t> ParseProcessName(std::string_view text);

class TimelineAssembler {
 public:
  explicit TimelineAssembler(ReaderContext& ctx) : ctx_(ctx) {}

  void OnEvent(const MegatronEvent& e, uint64_t offset);
  // An event that could not be read: trace.bad_event at `offset`.
  void BadEvent(uint64_t offset, const std::string& why);
  // Adds the timeline to ctx.out when it holds an op, and counts what was
  // not taken. Returns the events taken (ops and metadata); 0 without ops.
  uint64_t Finish(uint64_t events_total);

 private:
  struct Thread {
    int32_t pid = 0;
    int32_t tid = 0;
    std::optional<ThreadPlace> place;  // category not kept
  };
  // Events not taken of one kind, by name (the first few).
  struct Unused {
    uint64_t count = 0;
    uint64_t first_offset = 0;
    std::vector<std::string> names;
  };
  struct UnknownOp {
    std::string name;
    uint64_t count = 0;
    uint64_t first_offset = 0;
  };

  void OnComplete(const MegatronEvent& e, uint64_t offset);
  void OnMetadata(const MegatronEvent& e, uint64_t offset);
  void OnThreadName(const MegatronEvent& e, uint64_t offset);
  void CountUnknownOp(std::string_view name, uint64_t offset);
  void CountUnused(Unused& u, uint64_t offset, std::string_view name);
  uint32_t ThreadOf(int32_t pid, int32_t tid);
  // Finish()'s steps.
  std::vector<TimelineWorker> MakeWorkers(std::vector<int32_t>& worker_of_thread);
  void NumberUnnumberedOps();
  std::optional<ParallelLayout> LayoutOf(const std::vector<TimelineWorker>& workers);
  void ReportNotTaken();

  ReaderContext& ctx_;
  std::vector<TimelineOp> ops_;  // worker = thread index until Finish(); seq -1: not given
  std::vector<Thread> threads_;
  std::unordered_map<uint64_t, uint32_t> thread_index_;  // (pid << 32 | tid) -> threads_
  int32_t max_chunk_ = -1;
  uint64_t metadata_taken_ = 0;
  std::vector<UnknownOp> unknown_ops_;  // the first kMaxUnknownNames names, in file order
  std::unordered_map<std::string, size_t> unknown_index_;
  UnknownOp other_unknown_;  // the events of the names past those
  Unused unused_phases_, unused_metadata_;
};

}  // namespace laggard::megatron

#endif  // LAGGARD_INGEST_TRACES_MEGATRON_TIMELINE_ASSEMBLER_H_
