// The parser of the Kineto reader, its last stage: the events the
// tokenizer reads (EventFields, kineto_event.h) -> one RankTrace
// (model/trace.h), through the trace builder the nsys reader shares
// (ingest/traces/common/trace_builder.h). The reader (kineto_reader.cc)
// gives it to the trace tokenizer as its EventSink, then calls Finish().
//
// What it takes, by category (kineto_keys::category) and name:
//   kernel / Kernel           device op, classified by name (kernel_names.h):
//                             communication also with a "Collective name" arg
//   gpu_memcpy, gpu_memset    kMemcpy / kMemset ops
//   cuda_runtime / _driver    launch calls: the host time each device op was
//                             launched, by args.correlation
//   ProfilerStep#N            TraceStep (cat user_annotation or cpu_op); with
//                             ReaderContext::step_marker the ranges it names
//                             instead (ingest/traces/common/step_marker.h)
//   record_param_comms        what a collective kernel lacks (often "Seq"),
//                             by the External id they share
//   cpu_op, and comm          ops of a CPU-only trace (kCpu pass), device -1
//   annotations (gloo:*)
//
// Collectives: one CollectiveCall per communication kernel (per CPU
// collective in a CPU-only trace). The collective name is canonical so that
// ranks and PyTorch versions compare: "Collective name" arg, annotation or
// kernel name, lowercased without '_', mapped to allreduce, allgather,
// reducescatter, alltoall, broadcast, sendrecv, send, recv, reduce, gather,
// scatter or barrier. Example: ncclDevKernel_AllReduce_Sum_f32_RING_LL ->
// "allreduce"; "_allgather_base" -> "allgather"; ncclDevKernel_Generic -> ""
// (unknown). A CPU-only trace's collectives are its backend's comm ranges
// (gloo:all_reduce, nccl:all_to_all) when present, else the
// record_param_comms ops, else the c10d:: ops: each collective shows at
// several of these levels, and only one level is counted.
//
// Times are base-relative while reading (Kineto writes baseTimeNanoseconds
// after traceEvents); Finish() adds the base. An event with "ts": "abc", no
// ts / dur, or a negative dur is one trace.bad_event at its offset.
//
// Thread-safety: one parser per pass over one file.

#ifndef LAGGARD_INGEST_TRACES_KINETO_KINETO_PARSER_H_
#define LAGGARD_INGEST_TRACES_KINETO_KINETO_PARSER_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/common/text_reader.h"
#include "ingest/traces/common/trace_builder.h"
#include "ingest/traces/kineto/kineto_event.h"
#include "ingest/traces/kineto/trace_tokenizer.h"
#include "model/trace.h"

namespace laggard::kineto {

class KinetoParser final : public EventSink {
 public:
  // ctx: the file's index, rank from its path, --step-marker and
  // --comm-kernel, and the run whose names it interns into.
  KinetoParser(Mode mode, ReaderContext& ctx, EventDiagnostics& diag);

  void OnEvent(const EventFields& e, uint64_t offset) override;

  // Whether an op was taken (a device op, or in a kCpu pass a CPU op).
  bool has_ops() const { return builder_.has_ops(); }

  // The trace of the events taken, with what the rest of the file said
  // (`header`, the tokenizer's counts); adds the pass's closing diagnostics
  // (trace.no_step_marker, more bad events, trace.no_rank,
  // trace.no_events).
  RankTrace Finish(const TraceHeader& header, uint64_t events_total, uint64_t events_lost,
                   bool truncated);

 private:
  struct NameInfo {
    uint32_t id = 0;
    std::optional<OpClass> kernel_class;
    std::optional<uint32_t> kernel_collective;  // derived from the kernel name
    // The launch shape this kernel had last (a kernel keeps its grid and
    // block from launch to launch), and its id: saves the shape table lookup.
    LaunchShape last_shape{};
    std::optional<uint32_t> last_shape_id;
  };
  // Kernel names run to kilobytes, and one is looked up per device op: hash
  // the length and three 32-byte windows (head, middle, tail), compare fully.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      if (s.size() <= 96) return std::hash<std::string_view>{}(s);
      uint64_t h = s.size() * 0x9E3779B97F4A7C15ULL;
      for (size_t at : {size_t{0}, s.size() / 2 - 16, s.size() - 32}) {
        for (size_t i = 0; i < 32; i += 8) {
          uint64_t w;
          std::memcpy(&w, s.data() + at + i, 8);
          h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
          h ^= h >> 32;
        }
      }
      return static_cast<size_t>(h);
    }
  };
  // The names looked up last, by QuickNameHash: a device op's name is one of
  // a few hundred, so most lookups end here, on one compare (the map's nodes
  // do not move, so the pointers stay valid).
  struct NameCacheEntry {
    const std::string* key = nullptr;
    NameInfo* info = nullptr;
  };
  static constexpr size_t kNameCacheSize = 512;

  NameInfo& Name(std::string_view s);
  uint32_t Intern(std::string_view s) { return Name(s).id; }
  std::optional<uint32_t> GroupOf(const EventFields& e);
  // (Always inlined: parts of OnEvent, in kineto_parser.cc.)
  [[gnu::always_inline]] inline std::string CollectiveOf(const EventFields& e);
  [[gnu::always_inline]] inline void TakeLaunchCall(const EventFields& e, uint64_t offset);
  [[gnu::always_inline]] inline uint32_t ShapeOf(const EventFields& e, NameInfo& kernel);
  [[gnu::always_inline]] inline void TakeDeviceOp(const EventFields& e, std::string_view name,
                                                  int64_t ts, int64_t dur, uint64_t offset);
  [[gnu::always_inline]] inline void RememberCommMeta(int64_t ext, const EventFields& e);

  const Mode mode_;
  const bool collecting_cpu_;
  ReaderContext& ctx_;
  EventDiagnostics& diag_;
  TraceBuilder builder_;
  const std::string_view marker_;  // --step-marker, "" when not given
  CpuCollectives cpu_collectives_;
  std::unordered_map<std::string, NameInfo, NameHash, std::equal_to<>> names_;
  std::array<NameCacheEntry, kNameCacheSize> name_cache_{};
  std::string scratch_, name_scratch_;
};

}  // namespace laggard::kineto

#endif  // LAGGARD_INGEST_TRACES_KINETO_KINETO_PARSER_H_
