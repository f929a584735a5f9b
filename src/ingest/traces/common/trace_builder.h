// What every trace reader does the same way while it builds one RankTrace
// (model/trace.h), whichever profiler wrote the file: the Kineto parser
// (ingest/traces/kineto/kineto_parser.h) and the nsys reader
// (ingest/traces/nsys/nsys_reader.cc) fill one TraceBuilder per file.
//
//   launch shapes   "grid 132x1x1 block 128x1x1", interned once per distinct
//                   shape, at most ShapeTable::kMaxShapes per file (then
//                   kNoShape)
//   device ops      each with what finds its launch call: the call's start
//                   (nsys joins it in SQL), or a correlation id that
//                   Finish() matches with the launch calls read (Kineto:
//                   args.correlation of the kernel and of its
//                   cudaLaunchKernel)
//   collectives     one call per communication op; what one lacks (often
//                   "Seq") its CPU-side record has (PyTorch's
//                   record_param_comms, by External id): CommMeta
//   step ranges     the --step-marker's ranges when there are any, else the
//                   reader's built-in ones (ProfilerStep#N, NVTX "step N")
//   Finish()        times shifted onto the trace's clock, ops and
//                   collectives sorted by start (launch times alongside),
//                   then AttributeLaunchGaps() once the reader has chosen
//                   the trace's device
//
// What stays in each reader: how it reads its format, what rank, host and
// device its file names, and its diagnostics.
//
// Thread-safety: one builder per file, used by one thread.

#ifndef LAGGARD_INGEST_TRACES_COMMON_TRACE_BUILDER_H_
#define LAGGARD_INGEST_TRACES_COMMON_TRACE_BUILDER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/traces/common/step_marker.h"
#include "model/trace.h"

namespace laggard {

// v.push_back(x) for the per-op lists of a big trace: past kGrowFrom
// entries a list reserves kGrowTo at once. That is address space only (the
// pages are touched as it fills), and it spares the copy and the page
// faults of every doubling on the way, a tenth of a .gz ingest.
template <typename T>
[[gnu::always_inline]] inline void PushBig(std::vector<T>& v, const T& x) {
  constexpr size_t kGrowFrom = 1 << 16;
  constexpr size_t kGrowTo = 1 << 22;
  if (v.size() == v.capacity() && v.size() >= kGrowFrom && v.capacity() < kGrowTo) {
    try {
      v.reserve(kGrowTo);
    } catch (const std::bad_alloc&) {
      // Where address space is committed up front (vm.overcommit_memory=2)
      // and short: the list grows by doubling instead.
    }
  }
  v.push_back(x);
}

// grid x, y, z, block x, y, z of a kernel launch.
using LaunchShape = std::array<int64_t, 6>;

// The launch shapes of one file, each interned as its text.
class ShapeTable {
 public:
  static constexpr size_t kMaxShapes = 4096;

  // The NameTable id of "grid 132x1x1 block 128x1x1", interned at the
  // shape's first sight; kNoShape for a new shape once kMaxShapes are in.
  uint32_t Intern(const LaunchShape& shape, NameTable& names);

 private:
  struct Hash {
    size_t operator()(const LaunchShape& k) const {
      uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the six values
      for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<LaunchShape, uint32_t, Hash> ids_;
};

// What a collective's CPU-side record (record_param_comms) says about it.
struct CommMeta {
  std::optional<int64_t> seq;
  std::string collective;         // canonical ("allreduce"), "" unknown
  std::optional<uint32_t> group;  // NameTable id
  std::optional<int64_t> nelems;
  std::optional<int32_t> group_size;

  bool empty() const { return !seq && !group && !nelems && !group_size && collective.empty(); }
};

// How a reader's built-in step ranges of one number make one step.
enum class RepeatedSteps {
  kSpan,      // from the earliest start to the latest end (Kineto's ProfilerStep#N
              // on several threads: StepsOfMarkers)
  kEarliest,  // the earliest range (nsys: a step range pushed on two threads, or
              // in two NVTX domains)
};

// The step ranges of one trace, as read.
class StepRanges {
 public:
  void AddMarked(const MarkerRange& r) { marked_.push_back(r); }
  void AddBuiltin(int64_t step, TimeNs start_ns, TimeNs end_ns) {
    builtin_.push_back(MarkerRange{step, start_ns, end_ns});
  }
  // Whether a --step-marker range was read.
  bool marked() const { return !marked_.empty(); }
  size_t builtin_ranges() const { return builtin_.size(); }

  // The steps: of the marker ranges (StepsOfMarkers) when there are any,
  // else of the built-in ones. kEarliest returns them sorted by number.
  std::vector<TraceStep> Take(RepeatedSteps repeats);

 private:
  std::vector<MarkerRange> marked_;
  std::vector<MarkerRange> builtin_;  // every number set
};

// Which layer of a CPU-only trace recorded a collective call: the
// backend's own range (ProcessGroupGloo / nccl:...), record_param_comms,
// or the c10d:: frontend call.
enum class CpuCommLayer { kBackend = 0, kParamComms = 1, kC10d = 2 };

// A CPU-only trace's collective calls by layer. Only the lowest layer
// present is taken: the layers above it wrap the same calls.
class CpuCollectives {
 public:
  // A call; the reader fills in what else it knows.
  CollectiveCall& Add(CpuCommLayer layer, TimeNs start_ns, DurationNs dur_ns, uint32_t kernel,
                      uint64_t offset) {
    CollectiveCall& c = by_layer_[static_cast<size_t>(layer)].emplace_back();
    c.start_ns = start_ns;
    c.dur_ns = dur_ns;
    c.kernel = kernel;
    c.offset = offset;
    return c;
  }
  // The lowest layer's calls, added to `builder`.
  template <class Builder>
  void AddLowestTo(Builder& builder) const {
    for (const auto& layer : by_layer_) {
      if (layer.empty()) continue;
      for (const CollectiveCall& c : layer) builder.AddCollective(c);
      return;
    }
  }

 private:
  std::vector<CollectiveCall> by_layer_[3];
};

// Launch calls are matched by correlation id; an op without one has this.
// (CUPTI / roctracer correlation ids are 32-bit.)
inline constexpr uint32_t kNoCorrelation = UINT32_MAX;

class TraceBuilder {
 public:
  explicit TraceBuilder(NameTable& names) : names_(names) {}
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  NameTable& names() { return names_; }
  uint32_t Shape(const LaunchShape& shape) { return shapes_.Intern(shape, names_); }

  // Ops, in the order read. A reader adds its device ops one way: each with
  // its launch call's start (AddOpLaunchedAt), or each with a correlation id
  // (AddCorrelatedOp, kNoCorrelation when it has none) and the launch calls
  // apart (AddLaunchCall). AddOp: an op no launch call can be found for
  // (a CPU op). Inline: a reader adds millions.
  [[gnu::always_inline]] void AddOp(const TraceOp& op) { PushBig(ops_, op); }
  void AddOpLaunchedAt(const TraceOp& op, std::optional<TimeNs> launch_ns) {
    ops_.push_back(op);
    any_launch_ |= launch_ns.has_value();
    launch_ns_.push_back(launch_ns.value_or(kNoLaunch));
  }
  [[gnu::always_inline]] void AddCorrelatedOp(const TraceOp& op, uint32_t correlation) {
    PushBig(ops_, op);
    PushBig(op_correlation_, correlation);
  }
  // (A launch call without a correlation links nothing: readers leave it out.)
  [[gnu::always_inline]] void AddLaunchCall(uint32_t correlation, TimeNs start_ns) {
    PushBig(launches_, LaunchCall{correlation, start_ns});
  }
  // Room for `more` ops added with AddOpLaunchedAt (ops and launch times),
  // so that neither vector doubles past what it holds.
  void ReserveLaunchedOps(size_t more) {
    ops_.reserve(ops_.size() + more);
    launch_ns_.reserve(launch_ns_.size() + more);
  }
  // The ops added since the last run are one run (one nsys table), most
  // likely in start order already: Finish() sorts runs apart, then merges.
  void EndOpRun();
  bool has_ops() const { return !ops_.empty(); }

  // A collective call; `meta_id`, the id of its CPU-side record (External
  // id), when it has one.
  void AddCollective(const CollectiveCall& c, std::optional<int64_t> meta_id = std::nullopt) {
    collectives_.push_back(c);
    collective_meta_.push_back(meta_id);
  }
  // The CPU-side record of id `id` (the last one read wins; one that says
  // nothing is not kept).
  void AddCommMeta(int64_t id, CommMeta meta);

  StepRanges& steps() { return steps_; }

  // The trace so far: ops, collectives and steps, each time plus `shift_ns`
  // (Kineto's baseTimeNanoseconds), collectives completed from their
  // CPU-side records, ops (stable) and collectives sorted by start. Launch
  // times are kept for AttributeLaunchGaps(). Rank, host, device and the
  // event counts are the reader's to set.
  RankTrace Finish(TimeNs shift_ns, RepeatedSteps repeats);

  // The host-side gaps of `trace` (model/trace.h AttributeLaunchGaps), from
  // the launch times Finish() kept, which it then frees; call it once the
  // trace's device is set.
  void AttributeLaunchGaps(RankTrace& trace);

 private:
  struct LaunchCall {
    uint32_t correlation = 0;
    TimeNs start_ns = 0;
  };

  void CompleteCollectives();
  LaunchTimes LinkLaunches(size_t n_ops, TimeNs shift_ns);
  void SortOps(std::vector<TraceOp>& ops);

  NameTable& names_;
  ShapeTable shapes_;
  std::vector<TraceOp> ops_;
  std::vector<size_t> run_ends_;  // ops index where each run ends, after a leading 0
  LaunchTimes launch_ns_;         // parallel to ops_ (kNoLaunch: unknown), or empty
  bool any_launch_ = false;
  std::vector<uint32_t> op_correlation_;  // parallel to ops_, or empty
  std::vector<LaunchCall> launches_;
  std::vector<CollectiveCall> collectives_;
  std::vector<std::optional<int64_t>> collective_meta_;  // parallel to collectives_
  std::unordered_map<int64_t, CommMeta> comm_meta_;
  StepRanges steps_;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_TRACES_COMMON_TRACE_BUILDER_H_
