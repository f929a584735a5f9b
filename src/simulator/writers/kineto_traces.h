// Synthetic multi-rank profiler traces with a known culprit, written as real
// torch.profiler / Kineto Chrome-trace JSON (one file per rank), plus a
// truth.json. Used by the trace reader and trace detector tests, the ingest
// benchmark and `laggard simulate`, which decides the timing itself
// (cluster.h) and has this writer render it (TraceScenario::schedule).
//
// The simulator never includes analysis code: what it injects is the truth
// the detectors are tested against.
//
// Model of one data-parallel training step on rank r (times on a true clock,
// integer ns):
//
//   host   ProfilerStep#N: data loader, input copy, forward launches,
//          backward launches with one all-reduce per gradient bucket,
//          optimizer launches, loss.item() (waits for the GPU); the next
//          step starts when item() returns.
//   GPU    compute kernels back to back on stream 7 (a kernel starts at
//          max(its launch + latency, previous kernel end + small gap));
//          NCCL kernels on stream 24.
//
// The part that decides correctness: collective k of a step *arrives* on
// rank r when r's compute before it is done (arrival_r). It ends on every
// rank at max_r(arrival_r) + transfer (+ a skew of at most 2 us per rank),
// where transfer = latency + 2(n-1)/n * bytes / bus_bw (ring all-reduce).
// So rank r's NCCL kernel lasts (max arrival - arrival_r) + transfer: the
// victims show long NCCL kernels, the culprit the shortest, and the next
// compute on every rank starts after the collective ends. Step times
// measured end to end are therefore equal on all ranks (to within the
// jitter of the optimizer section).
//
// Faults:
//   compute_slow  the rank's compute kernels take `factor` x longer;
//   data_stall    `seconds` of host-side wait (in the data loader) before the
//                 rank's first launch of every step; its kernels are normal;
//   network_slow  every collective's transfer takes `factor` x longer, for
//                 everyone (communication-bound job, no single culprit);
//   clock offsets each host's clock reads true time + offset (CPU and GPU
//                 events alike, as Kineto maps GPU time to the host clock).
//
// Output (dir/):
//   node-00/rank-0.<ms>.pt.trace.json[.gz] ...   one per rank
//   truth.json                                    what was injected
// A trace file has the key layout of PyTorch 2.x files: "schemaVersion",
// "deviceProperties", "distributedInfo", "traceEvents" (one event per line),
// then "traceName", "displayTimeUnit", "baseTimeNanoseconds" (or, with
// base_time_in_header, the newest Kineto's header layout). ts are us with
// three decimals relative to that rank's own baseTimeNanoseconds, which
// differs between ranks by whole seconds as it does in real jobs.
//
// Deterministic for a seed: every random draw comes from a splitmix64 stream
// keyed by (seed, purpose, rank, step), so output does not depend on thread
// scheduling. Files are streamed (1 MiB buffers), so memory stays small for
// traces of any length. Thread-safety: the functions are reentrant; one
// call writes its ranks in parallel on its own threads.

#ifndef LAGGARD_SIMULATOR_WRITERS_KINETO_TRACES_H_
#define LAGGARD_SIMULATOR_WRITERS_KINETO_TRACES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace laggard::sim {

struct ComputeSlowFault {
  int rank = 0;
  double factor = 1.2;  // compute kernels take 1.2x as long
};

struct DataStallFault {
  int rank = 0;
  double seconds = 0.2;  // host-side wait before the first launch, every step
};

struct NetworkSlowFault {
  double factor = 4;  // transfer time of every collective, every rank
};

// One rank's profiled step whose timing was decided elsewhere (the cluster
// simulator, cluster.h), true clock. The writer lays the step's events out to
// fit these times: the host gap and the data loader, the H2D copy, compute
// kernels scaled to end where each NCCL kernel starts, NCCL kernels from
// arrival to end, the optimizer, loss.item()'s copy, and the next step's
// start. Kernel gaps and launch latencies are the writer's own.
struct ScheduledStep {
  int64_t start_ns = 0;
  int64_t host_gap_ns = 0;  // host time with no events before the data loader
  int64_t dataloader_ns = 0;
  int64_t h2d_ns = 0;
  std::vector<int64_t> arrival_ns;  // per collective: this rank's NCCL kernel starts
  std::vector<int64_t> end_ns;      // per collective: this rank's NCCL kernel ends
  int64_t optimizer_end_ns = 0;     // the last optimizer kernel ends
  int64_t d2h_ns = 0;
  int64_t next_start_ns = 0;  // ProfilerStep#N ends, #N+1 starts
};

// The host and GPU time between events that ScheduledStep times rely on: the
// H2D copy starts kHostToCopyNs after the data loader ends, the NCCL kernel
// kComputeToNcclNs after the compute before it, loss.item()'s copy
// kComputeToNcclNs after the optimizer, and the next step kCopyToNextStepNs
// after that copy.
inline constexpr int64_t kHostToCopyNs = 21'000;
inline constexpr int64_t kComputeToNcclNs = 2'000;
inline constexpr int64_t kCopyToNextStepNs = 20'000;

struct TraceScenario {
  int ranks = 8;
  int gpus_per_node = 8;
  int steps = 4;         // profiled steps
  int first_step = 100;  // ProfilerStep#100, #101, ...
  // "" : steps are ProfilerStep#N ranges (profiler.step()); else ranges of
  // this name without a number, as record_function("train_step") writes
  // them (read with --step-marker).
  std::string step_name;
  uint64_t seed = 1;
  double jitter = 0.01;  // relative standard deviation of every duration

  // Work per step. kernels_per_step counts compute kernels (GEMM, attention,
  // elementwise, optimizer), not NCCL kernels; it must be at least
  // collectives_per_step + 2. Raise both (and steps) for large traces:
  // KinetoBytesPerStep() says how much each step adds to each file.
  int kernels_per_step = 96;
  int collectives_per_step = 4;       // DDP gradient buckets, one all-reduce each
  int64_t bucket_bytes = 25LL << 20;  // DDP bucket_cap_mb = 25 (the first bucket is 1 MiB)
  double bus_bw_gbps = 100;           // NCCL bus bandwidth of one all-reduce
  bool legacy_nccl = false;           // NCCL 2.17 kernel names ("ncclKernel_..."), fp32
                                      // gradients; else NCCL 2.21 ("ncclDevKernel_..."), bf16

  std::optional<ComputeSlowFault> compute_slow;
  std::optional<DataStallFault> data_stall;
  std::optional<NetworkSlowFault> network_slow;

  // Host clocks: clock_offsets_ns[node] when given (one per node), else each
  // node's offset is drawn uniformly from +-max_clock_offset_ms.
  double max_clock_offset_ms = 0;
  std::vector<int64_t> clock_offsets_ns;

  int64_t start_time_s = 1'764'000'000;  // 2025-11-24T16:00:00Z: the step before the
                                         // first profiled one starts (true clock)
  bool base_time_in_header = false;      // newest Kineto: baseTimeNanoseconds before traceEvents

  // With a schedule, the job's timing comes from it, one ScheduledStep per
  // rank and profiled step (0 .. steps-1), instead of this writer's own
  // model; compute_slow, data_stall and network_slow must then be unset.
  // Called from the writer threads: must be thread-safe.
  std::function<const ScheduledStep&(int rank, int step_index)> schedule;
  bool write_truth = true;  // truth.json (the cluster simulator writes its own)
  // The ranks that write a trace, ascending, each in [0, ranks): a job that
  // profiles some ranks only (scale runs: step logs of 16,384 ranks, traces
  // of 1,024). Empty: every rank. The others still take part in every
  // collective; only their files are missing.
  std::vector<int> traced_ranks;
};

// Writes one trace per rank and truth.json into `dir` (created). With gzip,
// files end in .json.gz (zlib level 1).
Status WriteKinetoTraces(const TraceScenario& scenario, const std::string& dir, bool gzip = false);
// The ranks WriteKinetoTraces writes: traced_ranks, or every rank.
std::vector<int> TracedRanks(const TraceScenario& scenario);

// Uncompressed bytes one rank's file grows by per profiled step (measured
// by formatting rank 0's first step; other steps differ by a few bytes).
// For sizing benchmark inputs: steps ~= target_bytes / KinetoBytesPerStep().
StatusOr<uint64_t> KinetoBytesPerStep(const TraceScenario& scenario);

// The trace file of `rank`, relative to the output directory:
// "node-01/rank-9.1764000000063.pt.trace.json" (+ ".gz").
std::string KinetoTracePath(const TraceScenario& scenario, int rank, bool gzip = false);

// Bytes of all-reduce k of a step (the first DDP bucket is 1 MiB).
int64_t CollectiveBytes(const TraceScenario& scenario, int k);

// The share of a step's nominal compute before each collective (k <
// collectives_per_step) and after the last one (the optimizer), summing to 1.
std::vector<double> ComputeSegmentShares(const TraceScenario& scenario);

// The profiled process id of `rank`, also used for its other logs.
int TraceProcessId(int rank);

// Each node's clock offset in ns (host time = true time + offset), as
// written to truth.json.
std::vector<int64_t> HostClockOffsetsNs(const TraceScenario& scenario);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_WRITERS_KINETO_TRACES_H_
