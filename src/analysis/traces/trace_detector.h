// Trace detector: from per-rank profiler traces, does the suspect compute
// slowly or wait, and which rank is the culprit rather than a victim?
// The verdict stage (AnalyzeRun) calls AnalyzeTraces(); tests call its parts.
//
// Assumption (DESIGN, "one subtlety"): a synchronous collective ends at
// nearly the same instant on every participant, when the last rank has
// arrived and the transfer is done. So the culprit is the rank that arrives
// last and waits least; the rank with the longest NCCL time is a victim.
//
// It runs in four steps, because which ranks' kernels to compare depends on
// who is suspected:
//   MeasureTraces     metrics of every rank (below)
//   FindTraceSuspect  decision: a late rank, a late group, variable work, or
//                     no one; with the healthy peer to compare with
//   CompareSuspect    metrics of the suspect against healthy peers: kernel
//                     ratios (kernel_compare.h), host gaps (host_gaps.h)
//   DecideTraces      decision: the findings and the culprit
//
// Metrics:
//   instance    one collective call matched across the ranks of its process
//               group (collective_match.h)
//   offset[r]   median over instances of (end on r - median end): the clock
//               offset of rank r, removed from all its times
//   arrival     aligned start of the collective on a rank; lateness =
//               arrival - median arrival; wait = last arrival - own arrival;
//               transfer = median end - last arrival
//   delay       per instance, last arrival - second-to-last arrival, charged
//               to the last rank: what the job would gain without it
//   busy        union of a rank's device ops (CPU ops in CPU-only traces),
//               per OpClass and in total; idle = window - busy; gaps = idle
//               intervals >= min_gap_ns (10 us: judgement, launch latency)
//   compute     per rank and profiled step, the union of its
//               non-communication ops
//   kernel ratio per compute kernel (name, shape) with >= min_launches (3)
//               launches on both ranks: median duration on the suspect / on
//               healthy peers (up to max_kernel_peers, 4), aggregated
//               weighted by the peers' time in that kernel
// Decisions (defaults, origin):
//   late arrival the rank with the most delay holds >= late_delay_share (50%)
//               of all delay and >= late_over_next (3x) the next rank's, was
//               last at >= min_instances (3) instances, its mean delay is >=
//               min_lateness_ns (100 us) and >= late_over_noise (3x) the
//               median delay of the instances others were last at, it costs
//               >= min_cost_share (1%: the article's < 5% per GPU, seen once
//               per collective) of the profile and is late in >= 2 profiled
//               steps (a stalled rank is late only at the first collective
//               of a step, so share of instances is not used; thresholds
//               otherwise judgement); a rare stall instead of min_instances:
//               last at >= rare_late_min_instances (2) instances holding >=
//               rare_late_delay_share (75%) of all delay and >=
//               rare_late_window_share (25%) of the profiled window: two
//               scheduler hiccups of a noisy host cost far less
//               (bench/realjobs d11: a 250 ms stall every 5 steps, last at
//               2 of 9 instances in 10 profiled steps, 87-95% of all delay
//               and 67% of the window, was named nobody, or the rank with
//               the rest of the delay)
//   late group  ranks whose mean lateness sits above a break of >=
//               group_sigmas (6) x the normal ranks' spread (estimated from
//               the lower half's quantiles) and >= 100 us; a host
//               whose every rank idles >= idle_host_ratio (3x) the most idle
//               rank elsewhere; or a block of consecutive ranks computing
//               more (separation >= block_separation 4, >= compute_outlier_min
//               2% more, filling >= block_fill 90% of its range); each
//               costing >= 1% of the profile (judgement, simulated runs);
//               in a CPU-only job slow ops need >= 1 + cpu_op_noise, and a
//               group late for no reason the traces show is kept as info,
//               not blamed, under cpu_unexplained_min_cost_share (15%), as
//               a lone rank is
//   compute outlier one rank's compute per step above the step's median in
//               every profiled step by >= max(2%, 5 sigma / sqrt(steps)) and
//               >= 2x the next rank's (compute_outlier_*: judgement)
//   op outlier  CPU-only jobs, where step logs are synchronised and a few
//               ranks share the host's cores: the rank whose ops (self
//               time, by name and shape) run >= op_outlier_ratio (1.25) as
//               long as its peers', whose log ratio is >= op_outlier_over_next
//               (2x) the next rank's, and that arrives late on average (a
//               victim waits, its ops do not slow): judgement, from healthy
//               real jobs of 2-4 ranks on 2 busy cores, where healthy
//               ranks reached 1.4x: op times there are noisy
//   variable work the ranks' compute per step spreads by >= variable_work_cv
//               (3%: fixed-shape training varies 1-3%, healthy simulated
//               runs 1.1-1.5%) with different ranks slowest across steps
//   compute-slow kernel ratio >= kernel_ratio (1.05: the article's 5% normal
//               variation between same-model GPUs) -> the GPU executes slowly
//   host stall  kernels within 5% but the culprit's idle time with an empty
//               launch queue (all idle time when launches are not linked)
//               exceeds the peer's by >= host_stall_share (half) of its
//               summed lateness -> it waited for the host (data loader, CPU,
//               Python)
//   unexplained a late rank with normal kernels and idle time is blamed only
//               when it costs >= unexplained_min_cost_share (3%) of the profile
//   job idle    no one late, every rank's GPU idles >= job_idle_share (5%:
//               busy GPUs in synchronous training idle < 1%) -> host stall
//               everywhere
//   comm-bound  transfer >= comm_bound_share (40%) of the step time on every
//               rank -> the network is slow for everyone; with no late
//               rank, or beside one (the verdict weighs the two)
//   CPU noise   CPU-only traces, where ops run on host cores that other
//               threads and processes share (SMT siblings, the other
//               ranks' threads, the kernel): a rank's ops must run >=
//               1 + cpu_op_noise (1.10) as long as the healthy peer's to be
//               compute-slow, and with >= 3 ranks stand out from the other
//               ranks' own op ratios by op_outlier_over_next (2x, log
//               ratio: the op outlier's test), an unexplained late rank must cost >=
//               cpu_unexplained_min_cost_share (15%) of the profile, a
//               compute outlier must exceed the median by >= cpu_op_noise,
//               and variable work needs a spread >= cpu_variable_work_cv
//               (25%). A compute-slow rank's compute busy time (the union
//               of its ops) must also exceed the peer's by
//               cpu_min_busy_excess (5%): op-by-op ratios of a noisy host
//               can read 1.26x on a rank whose compute took 1.6% longer in
//               all; and a host-stalled rank's extra idle must be >=
//               cpu_min_idle_share (8%) of its profiled window
//               (bench/realjobs d11-d25, 1,680 runs: ranks that stalled
//               15 ms or more per step 21% and more of the 10 profiled
//               steps' time; other ranks read as idle outliers 5.2% at
//               most outside throttled-link runs, a healthy 2-rank rank
//               5.2% and a 1.1x run's healthy rank 6.0%, both named
//               host-stalled at 5%). Measured on healthy real
//               DDP jobs (bench/realjobs, docs/accuracy.md): healthy ranks' CPU ops differed by up
//               to 1.09x, a late healthy rank cost up to 9% of the profile, and 4 healthy ranks on
//               2 vCPUs spread by up to 21% per step; GPU kernels vary 1-5%
//   idle outlier CPU-only, >= 3 ranks, no rank late by its delay: the rank
//               that runs no op on any thread for >= idle_outlier_share
//               (15%) of its profile and >= idle_outlier_over_next (2.5x)
//               the next rank's share is the culprit (waiting in a
//               collective is an op: idle is time outside the training
//               ops, a data loader or a sleep). On a host whose cores the
//               ranks share, a stalled rank gives its core to the others
//               and hardly arrives late, but its idle shows: real 4- and
//               8-rank jobs stalled 15-50 ms per step idled 16-72% against
//               <= 11% for every other rank; healthy ranks <= 10%, within
//               1.6x of the next
//   second rank CPU-only, >= 3 ranks, a culprit found: another rank that
//               passes the op outlier's test among the rest and whose
//               median lateness is > 0, >= 2x every remaining rank's and >=
//               second_rank_min_lateness (1%) of the median step is named
//               too (it hides behind the culprit)
//   clock offsets reported when one is >= clock_offset_report_ns (1 ms)
//
// Thread-safety: every function here is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_TRACES_TRACE_DETECTOR_H_
#define LAGGARD_ANALYSIS_TRACES_TRACE_DETECTOR_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/traces/host_gaps.h"
#include "analysis/traces/kernel_compare.h"
#include "model/run.h"

namespace laggard {

struct TraceDetectorOptions {
  DurationNs min_gap_ns = 10'000;
  DurationNs min_lateness_ns = 100'000;
  size_t min_instances = 3;
  size_t rare_late_min_instances = 2;
  double rare_late_delay_share = 0.75;
  double rare_late_window_share = 0.25;
  size_t min_launches = 3;
  size_t max_kernel_peers = 4;
  double late_delay_share = 0.5;
  double late_over_next = 3;
  double late_over_noise = 3;
  double min_cost_share = 0.01;
  double unexplained_min_cost_share = 0.03;
  double group_sigmas = 6;
  double idle_host_ratio = 3;
  double compute_outlier_min = 0.02;
  double compute_outlier_sigmas = 5;
  double block_separation = 4;
  double block_fill = 0.9;
  double variable_work_cv = 0.03;
  double kernel_ratio = 1.05;
  double host_stall_share = 0.5;
  double job_idle_share = 0.05;
  double comm_bound_share = 0.4;
  double op_outlier_ratio = 1.25;
  double op_outlier_over_next = 2;
  double cpu_op_noise = 0.10;
  double cpu_unexplained_min_cost_share = 0.15;
  double cpu_min_busy_excess = 0.05;
  double cpu_min_idle_share = 0.08;
  double cpu_variable_work_cv = 0.25;
  double idle_outlier_share = 0.15;
  double idle_outlier_over_next = 2.5;
  double second_rank_min_lateness = 0.01;
  DurationNs clock_offset_report_ns = 1'000'000;
  // Each global rank's role in a pipelined layout (analysis/common/run_layout.h:
  // its role peers' lowest rank), indexed by rank; empty: every rank has
  // the same work. Variable work is measured after each role's own typical
  // compute is taken out: pipeline stages differ by design.
  std::vector<int32_t> role_of_rank;
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double no_match = 0.9;                  // trace.no_match
    double clock_offsets = 0.9;             // trace.clock_offsets
    double late_group = 0.7;                // trace.late_group
    double job_idle = 0.6;                  // trace.host_stall / late_group: every GPU idles
    double late_arrival = 0.6;              // trace.late_arrival
    double late_arrival_most_delay = 0.75;  // trace.late_arrival, >= 80% of the waiting
    double late_arrival_from_group = 0.55;  // trace.late_arrival, by mean lateness
    double late_arrival_unblamed = 0.3;     // trace.late_arrival, small delay, no why: info
    double compute_slow = 0.8;              // trace.compute_slow, by kernel comparison
    double compute_slow_by_excess = 0.6;    // trace.compute_slow, by compute per step
    double second_slow_rank = 0.6;          // trace.compute_slow of a second rank
    double host_stall = 0.75;               // trace.host_stall
    double comm_bound = 0.7;                // trace.comm_bound
    double variable_work = 0.7;             // trace.variable_work, >= 2 steps
    double variable_work_one_step = 0.5;    // trace.variable_work, 1 step
  };
  Confidences confidence;
};

// One trace's own time, whether or not it has a rank.
struct TraceBusyStats {
  std::optional<std::string> host;
  uint32_t file = 0;
  uint32_t trace = 0;  // index into Run::traces of the trace analysed
  bool cpu_only = false;
  size_t steps = 0;
  DurationNs window_ns = 0;  // first op start .. last op end
  std::array<DurationNs, static_cast<size_t>(OpClass::kCount)> busy_by_class_ns{};
  DurationNs busy_ns = 0;          // union of all ops
  DurationNs compute_busy_ns = 0;  // union of non-communication ops
  DurationNs comm_busy_ns = 0;     // union of communication ops
  DurationNs idle_ns = 0;          // window - busy
  size_t gaps = 0;                 // idle intervals >= 10 us
  DurationNs largest_gap_ns = 0;
  size_t collectives = 0;
  DurationNs collective_ns = 0;  // total time in communication ops
};

struct RankTraceStats : TraceBusyStats {
  int32_t rank = 0;
  // Cross-rank, when matched.
  std::optional<DurationNs> clock_offset_ns;
  size_t instances = 0;
  double share_last = 0;
  std::optional<DurationNs> median_lateness_ns;
  std::optional<DurationNs> median_wait_ns;
  DurationNs delay_caused_ns = 0;  // sum over instances it was last of (its arrival - next)
  // Per collective call, in RankTrace::collectives order: aligned arrival
  // minus the median arrival of its instance (> 0: late); nullopt when the
  // call matched no instance. Reports draw it on the merged timeline.
  std::vector<std::optional<DurationNs>> call_lateness_ns;
};

struct TraceAnalysis {
  std::vector<RankTraceStats> ranks;  // traces with a rank, by rank
  // Traces without a rank (no distributedInfo.rank, none in the name): their
  // own busy / idle only, matched with nothing; in file order.
  std::vector<TraceBusyStats> unranked;
  std::optional<int32_t> world_size;  // of the job analysed, when traced
  size_t instances = 0;               // matched collective instances
  std::optional<DurationNs> median_transfer_ns;
  std::optional<DurationNs> median_step_ns;
  std::optional<int32_t> culprit;
  // The healthy rank the findings compare the late rank (or late group)
  // with: TraceSuspect::peer, or the group's peer; nullopt when no one is
  // late. Every report names this one rank as the healthy peer.
  std::optional<int32_t> peer;
  // What the culprit costs: per instance it arrived last, its arrival minus
  // the second-to-last arrival, summed, over the profiled window.
  std::optional<double> throughput_lost;
  std::vector<Finding> findings;
};

// Compute time (union of non-communication ops, ns) of every rank in every
// profiled step, cut to the steps all of them profiled.
struct StepCompute {
  std::vector<std::vector<double>> per;  // [rank index][step]
  size_t steps = 0;
};

// What MeasureTraces() measures. Per-rank vectors are indexed like `ranks`
// (ascending rank); per-instance vectors like the matched instances.
struct TraceMetrics {
  // The job's traces, one per rank (the job: the world size with the most
  // ranked traces; the first trace in file order per rank), and the run's
  // name table; CompareSuspect reads both.
  std::vector<const RankTrace*> traces;
  const NameTable* names = nullptr;
  // Busy stats of every rank, with the arrival metrics below summarised
  // (clock offset, share last, median lateness and wait, delay caused).
  std::vector<RankTraceStats> ranks;
  std::vector<std::optional<int32_t>> device;  // the GPU of each rank, when known
  std::vector<TraceBusyStats> unranked;
  std::optional<int32_t> world_size;
  std::optional<DurationNs> median_step_ns;
  DurationNs window_ns = 0;  // the longest window of any rank
  size_t instances = 0;      // matched; the metrics below are empty without
  std::optional<DurationNs> median_transfer_ns;
  std::vector<std::vector<double>> lateness_ns;  // per rank, one per instance it is in
  std::vector<size_t> last_count;                // instances it arrived last at
  std::vector<double> delay_ns;                  // the delay charged to it, summed
  // Whether its last arrivals fall into >= 2 of its profiled steps (true
  // when it profiled fewer than 2): one unlucky step (a rank's jitter that
  // step is several sigma out among hundreds of ranks) makes a rank last at
  // every collective of that step, and nothing more.
  std::vector<char> late_in_several_steps;
  // Per instance: (rank index, aligned arrival ns) of each arrival.
  std::vector<std::vector<std::pair<size_t, double>>> arrivals_ns;
  // Per instance of >= 2 arrivals: the last rank and the delay it caused.
  std::vector<std::pair<size_t, double>> instance_delays;
  StepCompute compute;
  // Every trace is CPU-only (no device op): the CPU noise floors apply.
  bool cpu_only = false;
  // CPU-only jobs: each rank's op ratio against up to max_kernel_peers
  // other ranks (CompareEachWithPeers: self time of the same ops by name
  // and shape), indexed like `ranks`; empty when any trace has device ops.
  std::vector<KernelComparison> op_ratio;
  // Each rank's role (TraceDetectorOptions::role_of_rank), indexed like
  // `ranks`; empty when the options give none. Ops are still compared
  // across roles: with one role peer per rank on a shared host, pairwise
  // ratios were too noisy to tell a 3x rank (real dp 2 x pp 2 jobs,
  // 2026-12-03); variable work is measured per role.
  std::vector<int32_t> role;
};

// How a late group was found: late together, an idle host, or a compute block.
enum class GroupBasis { kLateness, kIdle, kCompute };

// What FindTraceSuspect() decides. Indices are rank indices of TraceMetrics.
struct TraceSuspect {
  // A late rank: `rank`, found by its delay, or (from_group) by its mean
  // lateness over all collectives or, with compute_excess, by its compute
  // per step (the mean excess over the step's median rank).
  bool late = false;
  bool from_group = false;
  std::optional<double> compute_excess;
  // Found as the op outlier (CPU-only jobs): its op ratio.
  std::optional<double> op_ratio;
  // Found as the idle outlier (CPU-only jobs): its idle share of its
  // profile and the next rank's.
  std::optional<std::pair<double, double>> idle_share;
  // The rank with the most delay unless another rank was found; its share
  // of all delay and mean delay per instance it was last at.
  size_t rank = 0;
  double delay_share = 0;
  double mean_delay_ns = 0;
  // Ranks late together, ascending, and how: excess is the least late
  // member's lateness over a normal rank's (kLateness, in ns) or the block's
  // mean compute excess (kCompute).
  std::vector<size_t> group;
  double group_excess = 0;
  GroupBasis basis = GroupBasis::kLateness;
  // No one late: the work per rank varies from step to step.
  std::optional<Finding> variable_work;
  // The healthy peer (least |median lateness| other than `rank`) and the
  // victim (most time in collectives).
  size_t peer = 0;
  size_t victim = 0;
};

// What CompareSuspect() measures against healthy peers.
struct SuspectComparison {
  // A late rank against up to max_kernel_peers healthy peers, the peer
  // first: kernels, host gaps and the top kernel in words.
  size_t peers = 0;
  KernelComparison kernels;
  HostGapComparison host_gaps;
  std::string top_kernel;
  // A group: each member's kernel ratio against the group's healthy peer
  // (the non-member least late, `group_peer`; >= ranks.size() when none).
  size_t group_peer = SIZE_MAX;
  std::vector<double> group_kernel_ratios;
};

TraceMetrics MeasureTraces(const Run& run, const TraceDetectorOptions& options);
TraceSuspect FindTraceSuspect(const TraceMetrics& metrics, const TraceDetectorOptions& options);
// The delay ranks `group` add, summed over the collectives: per instance,
// how much later the group's last arrival is than the other ranks' last.
double GroupDelay(const std::vector<size_t>& group, const TraceMetrics& m);

// CPU-only jobs: the op outlier (see "op outlier" above) among the ranks
// other than `exclude`: its index and op ratio. FindTraceSuspect looks at
// every rank; DecideTraces, for a second slow rank, at all but the culprit.
std::optional<std::pair<size_t, double>> FindOpOutlier(
    const TraceMetrics& metrics, const TraceDetectorOptions& options,
    std::optional<size_t> exclude = std::nullopt);
SuspectComparison CompareSuspect(const TraceMetrics& metrics, const TraceSuspect& suspect,
                                 const TraceDetectorOptions& options);
// Findings in this order: no match, clock offsets, then the late rank (and
// why: compute-slow or host stall), or the group, or variable work, or a
// job-wide host stall, or communication-bound; with the metrics' numbers.
TraceAnalysis DecideTraces(const TraceMetrics& metrics, const TraceSuspect& suspect,
                           const SuspectComparison& comparison,
                           const TraceDetectorOptions& options);

// The four steps above, with default options or `options`.
TraceAnalysis AnalyzeTraces(const Run& run);
TraceAnalysis AnalyzeTraces(const Run& run, const TraceDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_TRACES_TRACE_DETECTOR_H_
