// The run model: the one normalized, in-memory picture of a training run that
// every parser feeds and every detector reads.
//
//   Run
//   ├── files[]          every input file, with the reader that took it
//   ├── ranks[]          one StepSeries per global rank, sorted by rank
//   │     ├── info       rank, host, local GPU, pipeline stage, DP index
//   │     ├── steps[]    StepRecord{step, duration_ns, start_ns?, src}
//   │     └── cpu[]      StepCpu{step, on-CPU, run-queue wait}, when logged
//   ├── unattributed[]   step series whose rank is unknown (one per file)
//   ├── traces[]         one RankTrace per profiler trace (model/trace.h)
//   ├── op_timelines[]   per-op timelines of model-parallel jobs (model/op_timeline.h)
//   ├── layouts[]        parallel layouts the files state (model/parallel_layout.h)
//   ├── tool_reports[]   Megatron StragglerDetector reports in the logs (model/tool_report.h)
//   ├── nvrx_reports[]   NVRx straggler reports in the logs (model/tool_report.h)
//   ├── names            interned kernel / collective names of the traces
//   ├── hardware         GPU facts and metric series per host/GPU (model/hardware.h)
//   ├── network          IB ports, Ethernet links, nccl-tests, NCCL logs,
//   │                    topology, switch map (model/network.h)
//   ├── hang             process groups, Flight Recorder dumps, watchdog and
//   │                    timeout lines of a stopped job (model/hang.h)
//   ├── jobs             the jobs the files hold, when several (model/jobs.h)
//   └── diagnostics      counted bad records (data quality)
//
// Parsers never build a Run directly: they call RunBuilder, which indexes
// ranks densely and keeps provenance; Finalize() sorts steps, drops
// duplicates (counted) and checks ranks for gaps and uneven step counts.
// Unknown facts are std::nullopt, never 0 or -1.
//
// Thread-safety: a RunBuilder belongs to one thread. Builders of different
// files are combined with RunBuilder::MergeFrom() in file order, which keeps
// the result independent of scheduling.

#ifndef LAGGARD_MODEL_RUN_H_
#define LAGGARD_MODEL_RUN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/diagnostics.h"
#include "model/hang.h"
#include "model/hardware.h"
#include "model/jobs.h"
#include "model/network.h"
#include "model/op_timeline.h"
#include "model/source.h"
#include "model/time.h"
#include "model/tool_report.h"
#include "model/trace.h"

namespace laggard {

// An optional time in 8 bytes, read like std::optional<TimeNs>: INT64_MIN
// (never a real time) is "none". std::optional<TimeNs> takes 16, and with
// the compute time a StepRecord grew from 40 to 48 bytes: 16% more memory
// and 18% less parse throughput on 10 M records (step_ingest_bench).
class PackedTime {
 public:
  constexpr PackedTime() = default;
  constexpr PackedTime(std::nullopt_t) {}                                // NOLINT: as std::optional
  constexpr PackedTime(TimeNs t) : v_(t) {}                              // NOLINT: as std::optional
  constexpr PackedTime(std::optional<TimeNs> t) : v_(t ? *t : kNone) {}  // NOLINT
  constexpr bool has_value() const { return v_ != kNone; }
  constexpr explicit operator bool() const { return has_value(); }
  constexpr TimeNs operator*() const { return v_; }
  constexpr TimeNs value_or(TimeNs fallback) const { return has_value() ? v_ : fallback; }
  constexpr operator std::optional<TimeNs>() const {  // NOLINT: reads as one
    return has_value() ? std::optional<TimeNs>(v_) : std::nullopt;
  }
  friend constexpr bool operator==(PackedTime a, PackedTime b) { return a.v_ == b.v_; }
  friend constexpr bool operator==(PackedTime a, TimeNs b) { return a.has_value() && a.v_ == b; }

 private:
  static constexpr TimeNs kNone = INT64_MIN;
  TimeNs v_ = kNone;
};

struct StepRecord {
  int64_t step = 0;
  DurationNs duration_ns = 0;
  PackedTime start_ns;  // wall clock at the start of the step, when logged
  SourceRef src;
  // The step's compute-only part (forward, backward, optimizer: no waiting
  // in collectives), when logged; 0 when not. In synchronous training every
  // rank's end-to-end step time is the same, and this is what differs.
  DurationNs compute_ns = 0;
};
static_assert(sizeof(StepRecord) == 40);

struct RankInfo {
  int32_t rank = 0;
  std::optional<std::string> host;
  std::optional<int32_t> local_gpu;
  std::optional<int32_t> pipeline_stage;
  std::optional<int32_t> data_parallel_index;
};

// What the rank's process did on its host during one step, when its step
// reporter measured it (python/laggard_step.py reads the training thread's
// /proc/thread-self/schedstat): time on a CPU, time runnable but waiting
// for one (the scheduler's run_delay), and the time of a fixed probe. A
// process that waits for a CPU shares its cores with other work; one whose
// probe runs slower than its peers' runs on a slower CPU: host contention.
struct StepCpu {
  int64_t step = 0;
  std::optional<DurationNs> on_cpu_ns;
  std::optional<DurationNs> runq_wait_ns;
  // The time of a fixed piece of work the reporter ran on the same thread
  // in the step: the speed of the CPU the rank ran on, as it got it (a
  // slower core, or steal the hypervisor hides from the guest, shows here).
  std::optional<DurationNs> probe_ns;
};

struct StepSeries {
  RankInfo info;
  std::vector<StepRecord> steps;  // ascending, unique steps after Finalize()
  // Per-step CPU time of the rank's process, when logged (few inputs have
  // it): ascending, unique steps after Finalize(), a subset of `steps`'.
  std::vector<StepCpu> cpu;
  // For an unattributed series: the file it came from.
  std::optional<uint32_t> file;

  // The record of `step` (binary search: `steps` ascending); nullptr when
  // the series lacks it.
  const StepRecord* FindStep(int64_t step) const;
};

struct InputFileInfo {
  std::string path;      // as given by the user (or found under a given directory)
  std::string format;    // reader name, or "" when skipped
  uint64_t bytes = 0;    // decompressed bytes read
  uint64_t records = 0;  // step records taken from the file
  bool used = false;
};

struct Run {
  std::vector<InputFileInfo> files;
  std::vector<StepSeries> ranks;         // sorted by rank, unique
  std::vector<StepSeries> unattributed;  // rank unknown
  std::vector<RankTrace> traces;         // in file order
  std::vector<OpTimeline> op_timelines;  // in file order
  std::vector<LayoutStatement> layouts;  // in file order
  std::vector<ToolReport> tool_reports;  // in file order, then line order
  std::vector<NvrxReport> nvrx_reports;  // in file order, then line order
  NameTable names;
  HardwareData hardware;
  NetworkData network;
  HangData hang;
  Diagnostics diagnostics;
  // The jobs the files hold when there are several (ingest/jobs.h): all but
  // the chosen one are left out of everything above but `files`.
  JobSplit jobs;

  uint64_t total_steps() const;
  // Nothing to analyse: no steps, traces, op timelines, GPU or network
  // data, hang evidence or other tools' reports.
  bool NothingUsable() const;
  const StepSeries* FindRank(int32_t rank) const;
};

// The span of the job's steps that carry a start time: the first start and
// the last end; nullopt when none does.
struct StepTimeSpan {
  TimeNs first = 0;
  TimeNs end = 0;
};
std::optional<StepTimeSpan> StepTimesOf(const Run& run);
// Whether an agent record at `t` is the job's: within `span` widened by
// kJobSpanSlackNs (model/hardware.h); any time when the steps carry none.
inline bool InJobSpan(const std::optional<StepTimeSpan>& span, TimeNs t) {
  return !span || (t >= span->first - kJobSpanSlackNs && t <= span->end + kJobSpanSlackNs);
}

// Largest accepted rank number. Ranks index a dense table, so a garbled line
// claiming rank 2^31 must not allocate gigabytes.
inline constexpr int32_t kMaxRank = 4 * 1024 * 1024;

class RunBuilder {
 public:
  RunBuilder() = default;

  // Adds one step of `rank`. The caller has validated duration > 0 and
  // step >= 0; rank must be in [0, kMaxRank].
  //
  // Records are buffered flat, in the order added, and moved to their
  // series by FlushSteps() (which MergeFrom() and Finalize() call): with
  // thousands of ranks interleaved line by line, appending straight to each
  // rank's vector missed the cache and TLB on every record and stalled the
  // parser behind that store; the flat buffer is written sequentially and
  // the scatter, in a tight loop, overlaps its misses and sizes every
  // series exactly (no growth copies, no shrink in Finalize()).
  // `compute` is the step's compute-only time (0: not logged).
  void AddStep(int32_t rank, int64_t step, DurationNs duration, std::optional<TimeNs> start,
               SourceRef src, DurationNs compute = 0) {
    uint32_t index = SeriesIndex(rank);
    if (pending_.size() == pending_.capacity()) [[unlikely]]
      NewPendingBlock();
    uint32_t flags = (start.has_value() ? kHasStart : 0u) | (compute > 0 ? kHasCompute : 0u);
    pending_.push_back(PendingStep{step, duration, index, src.file, src.line, flags});
    if (start.has_value()) [[unlikely]]
      pending_starts_.push_back(*start);
    if (compute > 0) [[unlikely]]
      pending_computes_.push_back(compute);
    ++pending_count_[index];
  }
  // Moves the buffered steps into their series, keeping their order, and
  // frees the buffer. Ingest calls it at the end of each file, on the
  // reading thread.
  void FlushSteps();
  // The CPU time of one step of `rank` (rank in [0, kMaxRank]); at least one
  // of the two is set. Kept only for steps the series has.
  void AddStepCpu(int32_t rank, StepCpu cpu) { SeriesFor(rank).cpu.push_back(cpu); }
  // Adds one step to the unattributed series of file `file`.
  void AddUnattributedStep(uint32_t file, int64_t step, DurationNs duration,
                           std::optional<TimeNs> start, SourceRef src, DurationNs compute = 0);

  // Attaches facts about a rank; a later, different value is counted as
  // rank.conflicting_info and ignored.
  void SetHost(int32_t rank, std::string_view host, std::string_view file, uint64_t line);
  void SetLocalGpu(int32_t rank, int32_t gpu, std::string_view file, uint64_t line);
  // Role of a rank when the input names it: pipeline stage, data-parallel index.
  void SetRole(int32_t rank, std::optional<int32_t> pipeline_stage,
               std::optional<int32_t> data_parallel_index);

  Diagnostics& diagnostics() { return diagnostics_; }

  // Gives `host` to every rank and trace of this builder that has none (the
  // host implied by a file's directory, applied after reading the file).
  void SetHostWhereUnknown(const std::string& host);

  // A parsed profiler trace. Its name ids refer to `names`, the builder's
  // own table, which MergeFrom() re-maps into the merged one.
  void AddTrace(RankTrace trace) { traces_.push_back(std::move(trace)); }
  // A per-op timeline of a model-parallel job (Megatron-style timelines).
  void AddOpTimeline(OpTimeline timeline) { op_timelines_.push_back(std::move(timeline)); }
  const std::vector<OpTimeline>& op_timelines() const { return op_timelines_; }
  // A parallel layout a file states (a launch log's layout line).
  void AddLayout(LayoutStatement layout) { layouts_.push_back(layout); }
  const std::vector<LayoutStatement>& layouts() const { return layouts_; }
  // A report another tool printed in a log (Megatron's StragglerDetector).
  void AddToolReport(ToolReport report) { tool_reports_.push_back(std::move(report)); }
  const std::vector<ToolReport>& tool_reports() const { return tool_reports_; }
  // An NVRx straggler report in a log.
  void AddNvrxReport(NvrxReport report) { nvrx_reports_.push_back(std::move(report)); }
  const std::vector<NvrxReport>& nvrx_reports() const { return nvrx_reports_; }
  NameTable& names() { return names_; }

  // GPU data of one file (hardware readers): one record per GPU per file.
  void AddGpu(GpuRecord gpu) { gpus_.push_back(std::move(gpu)); }
  // The agent's host CPU log of one host in one file.
  void AddHostCpu(HostCpuLog log) { host_cpu_.push_back(std::move(log)); }
  // Network data (network readers append to the vectors).
  NetworkData& network() { return network_; }
  // Hang evidence (Flight Recorder and watchdog-log readers append to it).
  HangData& hang() { return hang_; }

  // What the builder holds so far, for a summary of one file's reading
  // (Ingest's FileFacts). Steps still buffered are not in series(): call
  // FlushSteps() first.
  const std::vector<StepSeries>& series() const { return series_; }
  const std::vector<StepSeries>& unattributed() const { return unattributed_; }
  const std::vector<RankTrace>& traces() const { return traces_; }
  const std::vector<GpuRecord>& gpus() const { return gpus_; }
  const NetworkData& network() const { return network_; }
  const HangData& hang() const { return hang_; }
  const Diagnostics& diagnostics() const { return diagnostics_; }

  // Appends everything of `other` (ranks, records, diagnostics).
  void MergeFrom(RunBuilder&& other);

  // Sorts, de-duplicates and checks the series; moves them into `run`, whose
  // `files` table must already be filled (it names the duplicates' files).
  void Finalize(Run& run);

 private:
  friend struct WireAccess;  // model/wire.cc: the MPI wire codec

  // Ranks are looked up through a dense table of 4-byte slots over the
  // ranks from the lowest to the highest this builder has seen (16 MiB at
  // most, at kMaxRank); the series themselves are stored only for ranks that
  // exist. From slot_base_, not from 0: a node's file holds 8 ranks of
  // 100,000, and one builder per file must not each clear a table of all.
  uint32_t SeriesIndex(int32_t rank) {
    if (rank < slot_base_) [[unlikely]]
      GrowSlotsDown(rank);
    size_t r = static_cast<size_t>(rank - slot_base_);
    if (r >= slot_.size()) slot_.resize(r + 1, 0);
    if (slot_[r] == 0) [[unlikely]]
      AddSeries(rank);
    return slot_[r] - 1;
  }
  void GrowSlotsDown(int32_t rank);
  StepSeries& SeriesFor(int32_t rank) { return series_[SeriesIndex(rank)]; }
  void AddSeries(int32_t rank);
  void NewPendingBlock();
  bool present(int32_t rank) const {
    if (rank < slot_base_) return false;
    size_t r = static_cast<size_t>(rank - slot_base_);
    return r < slot_.size() && slot_[r] != 0;
  }

  // A buffered step: 32 bytes, not a StepRecord's 40 plus the index, as
  // the buffer is written once and read once per record. The start times
  // of the (few) records that have one wait in pending_starts_, in order.
  struct PendingStep {
    int64_t step;
    DurationNs duration_ns;
    uint32_t series;  // index into series_
    uint32_t file;
    uint32_t line;
    uint32_t flags;  // kHasStart / kHasCompute: the next entry of pending_starts_ /
                     // pending_computes_ is its start / compute time
  };
  static constexpr uint32_t kHasStart = 1, kHasCompute = 2;
  static_assert(sizeof(PendingStep) == 32);

  // Allocates the large pending blocks on 2 MiB boundaries and asks the
  // kernel for transparent huge pages there (madvise; a hint it may
  // ignore): a 32 MiB block then costs 16 page faults instead of 8,192.
  // Small blocks come from operator new.
  template <typename T>
  struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding
    T* allocate(size_t n) { return static_cast<T*>(AllocateHugePageHinted(n * sizeof(T))); }
    void deallocate(T* p, size_t n) { FreeHugePageHinted(p, n * sizeof(T)); }
    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const {
      return true;
    }
  };
  static void* AllocateHugePageHinted(size_t bytes);
  static void FreeHugePageHinted(void* p, size_t bytes);
  using PendingBlock = std::vector<PendingStep, HugePageAllocator<PendingStep>>;

  std::vector<uint32_t> slot_;      // rank - slot_base_ -> 1 + index into series_, 0 when absent
  int32_t slot_base_ = INT32_MAX;   // the rank of slot_[0] (none yet: past every rank)
  std::vector<StepSeries> series_;  // in order of first appearance
  // Steps not yet in series_: full earlier blocks, then the one being
  // filled (blocks never move, so filling never copies), and how many of
  // them each series has.
  std::vector<PendingBlock> pending_blocks_;
  PendingBlock pending_;
  std::vector<TimeNs> pending_starts_;
  std::vector<DurationNs> pending_computes_;
  std::vector<uint32_t> pending_count_;  // parallel to series_
  std::vector<StepSeries> unattributed_;
  std::vector<RankTrace> traces_;
  std::vector<OpTimeline> op_timelines_;
  std::vector<LayoutStatement> layouts_;
  std::vector<ToolReport> tool_reports_;
  std::vector<NvrxReport> nvrx_reports_;
  NameTable names_;
  std::vector<GpuRecord> gpus_;
  std::vector<HostCpuLog> host_cpu_;
  NetworkData network_;
  HangData hang_;
  Diagnostics diagnostics_;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_RUN_H_
