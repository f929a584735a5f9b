// Profiler-trace part of the run model: what trace readers (Kineto Chrome
// JSON, Nsight Systems SQLite) produce and the trace detector reads.
//
//   RankTrace (one per trace file)
//   ├── rank / host / device, as far as the trace says (else nullopt)
//   ├── steps[]        ProfilerStep#N or NVTX step ranges (host clock)
//   ├── ops[]          GPU kernels, memcpy and memset (or CPU ops in a
//   │                  CPU-only trace), each classified, with its name id
//   └── collectives[]  one entry per collective call on this rank: the
//                      communication kernel (or CPU collective) with what
//                      Kineto says about it (name, size, group, sequence)
//
// Times are TimeNs on the trace's own clock (Kineto: baseTimeNanoseconds +
// ts in us; nsys: the session's utcEpochNs + its relative ns). Clocks of different ranks may
// disagree by milliseconds; the trace detector estimates the offsets, readers never adjust them. A
// trace timed from its own start (TraceOrigin::kFileStart: torch's legacy profiler) says so, and
// ingest moves it onto a reference rank's clock once every file is read (RankTrace::alignment,
// ingest/traces/common/clock_alignment.h).
//
// Memory: one TraceOp is 32 bytes; a 1 GB Kineto trace holds ~1-2 M device
// ops, so ops cost a few percent of the trace size. Names are interned once.

#ifndef LAGGARD_MODEL_TRACE_H_
#define LAGGARD_MODEL_TRACE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/process_group.h"
#include "model/time.h"

namespace laggard {

// What a device op does. Serialized by name (OpClassName): append only.
enum class OpClass : uint8_t {
  kGemm,           // matrix multiply (gemm, xmma, cutlass, cublas, wgmma...)
  kAttention,      // flash / fused / memory-efficient attention
  kOtherCompute,   // every other compute kernel (or CPU aten op)
  kCommunication,  // NCCL / RCCL kernels, gloo / c10d CPU collectives
  kMemcpy,
  kMemset,
  kCount,
};
std::string_view OpClassName(OpClass c);

// Interned strings (kernel names, collective names, process groups).
class NameTable {
 public:
  uint32_t Intern(std::string_view s);
  std::string_view Get(uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> index_;
};

// TraceOp::shape when the launch configuration is unknown (CPU ops, memcpy,
// traces without grid / block, or past a reader's cap on distinct shapes).
inline constexpr uint32_t kNoShape = UINT32_MAX;

struct TraceOp {
  TimeNs start_ns = 0;
  DurationNs dur_ns = 0;
  uint32_t name = 0;    // NameTable id
  int32_t stream = -1;  // CUDA stream / HIP queue, or CPU thread id
  OpClass cls = OpClass::kOtherCompute;
  int16_t device = -1;  // GPU index, -1 for CPU ops
  // NameTable id of the kernel's launch configuration, "grid 132x1x1 block
  // 128x1x1" (Kineto args grid / block, nsys gridX..blockZ), or kNoShape. It
  // sits in what was padding: TraceOp stays 32 bytes.
  uint32_t shape = kNoShape;
};
static_assert(sizeof(TraceOp) == 32, "TraceOp is held per device op: keep it at 32 bytes");

struct CollectiveCall {
  TimeNs start_ns = 0;
  DurationNs dur_ns = 0;
  uint32_t kernel = 0;            // NameTable id of the kernel / op name
  uint32_t collective = 0;        // NameTable id: "allreduce", "allgather", ... ("" unknown)
  std::optional<uint32_t> group;  // NameTable id of the process group name
  std::optional<int64_t> seq;     // sequence number within the group, when traced
  std::optional<int64_t> nelems;  // input message elements
  std::optional<int32_t> group_size;
  uint64_t offset = 0;  // byte offset of the event in its file (evidence)
};

struct TraceStep {
  int64_t step = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  // Host-side gaps (filled by AttributeLaunchGaps), inside [start_ns, end_ns):
  // time the trace's GPU ran no op at all, between its first and last op.
  DurationNs gpu_idle_ns = 0;
  // The part of gpu_idle_ns before the host began the launch call (runtime
  // API, e.g. cudaLaunchKernel) of the op that ended the gap: nothing was
  // queued, the GPU waited for the host. nullopt when the trace links no
  // op to its launch.
  std::optional<DurationNs> idle_unlaunched_ns;
  // The part after that launch call began: the op was queued but did not
  // start (stream / event dependency, synchronisation, launch latency).
  std::optional<DurationNs> idle_queued_ns;
};

// Where the times of a trace count from.
enum class TraceOrigin : uint8_t {
  kHostClock,  // the host's clock (Kineto baseTimeNanoseconds, nsys utcEpochNs): ranks
               // agree up to their hosts' skew
  kFileStart,  // the moment profiling began in that process (torch's legacy autograd
               // profiler: "ts" from 0): ranks disagree by whatever separates their
               // profiler starts, until ingest aligns them
};

// How ingest moved a kFileStart trace onto a reference rank's clock: every
// time of the trace had shift_ns added. The offset is the median, over the
// collectives matched with the reference (same kind, same place in the
// sequence), of reference end - own end: a synchronous collective ends at
// nearly the same instant on every rank, where arrivals differ.
struct ClockAlignment {
  int32_t reference_rank = 0;  // whose clock the times are on (the trace's own rank: it
                               // is the reference, shift 0, matched 0)
  DurationNs shift_ns = 0;
  DurationNs spread_ns = 0;  // median |offset - shift_ns| over the matched collectives
  uint32_t matched = 0;      // collectives whose ends gave the offset
};

struct RankTrace {
  uint32_t file = 0;  // index into Run::files
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  std::optional<std::string> host;
  std::optional<int32_t> device;  // the GPU this rank used, when one dominates
  // The process groups this rank is in (Kineto distributedInfo.pg_config),
  // as the file lists them; empty when it does not.
  std::vector<ProcessGroupInfo> groups;
  std::string producer;  // "kineto", "nsys", "torch-legacy"
  bool cpu_only = false;
  TraceOrigin origin = TraceOrigin::kHostClock;
  std::optional<ClockAlignment> alignment;  // of a kFileStart trace, once aligned
  std::vector<TraceStep> steps;
  std::vector<TraceOp> ops;                 // sorted by start_ns
  std::vector<CollectiveCall> collectives;  // sorted by start_ns
  uint64_t events_total = 0;                // events seen in the file
  uint64_t events_lost = 0;                 // events after a truncation point (estimate)
  bool truncated = false;
  // Host-side gaps over the whole trace (first to last op on `device`), as
  // in TraceStep: idle, and its split by whether the next op's launch call
  // had begun. launches_linked: ops of the trace matched to their launch
  // call (Kineto args.correlation, nsys correlationId); the splits are
  // nullopt when it is 0.
  DurationNs gpu_idle_ns = 0;
  std::optional<DurationNs> idle_unlaunched_ns;
  std::optional<DurationNs> idle_queued_ns;
  uint64_t launches_linked = 0;
};

// A launch time that is not known (LaunchTimes): 8 bytes an op, where a
// std::optional<TimeNs> takes 16, for traces of tens of millions of ops.
inline constexpr TimeNs kNoLaunch = std::numeric_limits<TimeNs>::min();
using LaunchTimes = std::vector<TimeNs>;

// Fills the host-side gap fields of `trace` (RankTrace and each TraceStep)
// from its ops (sorted by start_ns) and `launch_ns`, parallel to trace.ops:
// the host time the launch call of each op began, kNoLaunch when unknown.
// Only the ops of trace.device (every device op when unset) count; CPU ops
// never do. Readers call it once, after sorting, with a vector they then
// free: launch times are not kept per op.
//
// Each idle gap [a, b) between the union of ops, followed by op k launched
// at L, splits into [a, min(max(L, a), b)) unlaunched and the rest queued.
// Example: ops [0, 10) and [30, 40) us, the second launched at 25 us: idle
// 20 us, unlaunched 15 us (10..25), queued 5 us (25..30). Launched at 5 us
// (before the gap): 0 unlaunched, 20 queued.
void AttributeLaunchGaps(RankTrace& trace, const LaunchTimes& launch_ns);

// Sorts `ops` by start_ns (stable) and permutes `launch_ns` (empty, or
// parallel to ops) alongside, in place: 4 bytes per op of extra memory (and
// stable_sort's buffer of indices), not a second copy of the ops.
void SortOpsByStart(std::vector<TraceOp>& ops, LaunchTimes& launch_ns);

}  // namespace laggard

#endif  // LAGGARD_MODEL_TRACE_H_
