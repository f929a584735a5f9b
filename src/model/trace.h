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
// ts in us; nsys: the session's utcEpochNs + its relative ns). Clocks of different ranks may disagree
// by milliseconds; the trace detector estimates the offsets, readers never
// adjust them.
//
// Memory: one TraceOp is 32 bytes; a 1 GB Kineto trace holds ~1-2 M device
// ops, so ops cost a few percent of the trace size. Names are interned once.

#ifndef LAGGARD_MODEL_TRACE_H_
#define LAGGARD_MODEL_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

struct TraceOp {
  TimeNs start_ns = 0;
  DurationNs dur_ns = 0;
  uint32_t name = 0;       // NameTable id
  int32_t stream = -1;     // CUDA stream / HIP queue, or CPU thread id
  OpClass cls = OpClass::kOtherCompute;
  int16_t device = -1;     // GPU index, -1 for CPU ops
};

struct CollectiveCall {
  TimeNs start_ns = 0;
  DurationNs dur_ns = 0;
  uint32_t kernel = 0;              // NameTable id of the kernel / op name
  uint32_t collective = 0;          // NameTable id: "allreduce", "allgather", ... ("" unknown)
  std::optional<uint32_t> group;    // NameTable id of the process group name
  std::optional<int64_t> seq;       // sequence number within the group, when traced
  std::optional<int64_t> nelems;    // input message elements
  std::optional<int32_t> group_size;
  uint64_t offset = 0;              // byte offset of the event in its file (evidence)
};

struct TraceStep {
  int64_t step = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
};

struct RankTrace {
  uint32_t file = 0;  // index into Run::files
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  std::optional<std::string> host;
  std::optional<int32_t> device;  // the GPU this rank used, when one dominates
  std::string producer;           // "kineto", "nsys"
  bool cpu_only = false;
  std::vector<TraceStep> steps;
  std::vector<TraceOp> ops;                  // sorted by start_ns
  std::vector<CollectiveCall> collectives;   // sorted by start_ns
  uint64_t events_total = 0;     // events seen in the file
  uint64_t events_lost = 0;      // events after a truncation point (estimate)
  bool truncated = false;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_TRACE_H_
