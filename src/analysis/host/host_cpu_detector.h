// Host CPU contention: a rank whose process waits for a CPU.
//
// Input: the per-step CPU records of the ranks (model/run.h StepCpu: time on
// a CPU and time runnable but waiting for one, the scheduler's run_delay of
// the training thread, which python/laggard_step.py reports as cpu_s and
// cpu_wait_s). A process that waits for a CPU shares its cores with other
// work: another job, a data loader, a hog, more ranks than cores.
//
// Measure: per rank with at least min_steps steps whose wait is known, the
// median wait per step, the median step time and the median CPU time over
// those steps. The baseline is the median wait of the other ranks (0 when
// no other rank has one): a job whose ranks all share cores alike waits
// alike, and no rank stands out.
//
// Decide: host.cpu_contention for a rank whose wait exceeds the baseline by
// at least min_wait_share of its median step, by min_wait_ns, and by
// min_excess_over_peers of the baseline (with more ranks than cores every
// rank waits, and one that waits a little more by the scheduler's luck is
// not singled out). Slowdown:
// the excess over the rest of its step (the step would be that much shorter
// on a CPU of its own). Confidence grows with the excess share and the
// number of steps, up to max_confidence.
//
// Defaults: judgements checked on real runs here (bench/realjobs on 2
// cores): a busy loop pinned to the one core of a rank makes it wait ~50%
// of its step, its peer < 1%; four ranks on two cores with the loop on one
// of them wait 60 ms a step against 38 ms (+56%, 22% of the step); four
// healthy ranks on two cores wait 48-59 ms a step, at most 9% over the
// others' median and 3% of the step. min_steps 5; min_wait_share 0.05 (the
// article's 5% band); min_wait_ns 2 ms (below the scheduler's slice a wait
// is noise); min_excess_over_peers 0.3; max_confidence 0.9 (the wait is
// measured, its cause is not).
//
// Or, where the ranks' cores differ in speed and every rank waits, by its
// wait per second on a CPU (its median wait per step over its median CPU
// time per step): at least min_wait_per_cpu and
// min_wait_per_cpu_over_peers times its peers' median (with the share and
// ns floors above), for a rank runnable (on a CPU or waiting for one) at
// least min_runnable_share of its median step. Two busy threads
// sharing a core fairly wait about a second per second run; a third
// runnable thread there (a hog) makes it two. bench/realjobs d11-d21, 4
// ranks on 2 cores, a busy loop on one: its two ranks read 1.90-2.13 in
// 86 of 88 (the extra wait over their peers', 13-29%, under
// min_excess_over_peers where the other core is 1.6-1.9x slower, and 8
// runs named the ranks on that core alone); of 2,600 other ranks none
// above 1.44 (a rank beside a 2.0x compute fault on its core) and none
// passing both with the floors above 1.31; the loop's ranks are runnable
// ~80% of their step. min_runnable_share 0.5: a thread blocked for long (a
// GPU sync, I/O) has little CPU time to divide by.
//
// Slow CPU: python/laggard_step.py also times a fixed piece of work on the
// training thread each step (cpu_probe_s). Per rank the median over its
// steps; host.cpu_slow when it is at least 1 + min_probe_excess times the
// other ranks' median (no peers: nothing to compare, no finding). This is
// what a core slowed by a neighbour the guest cannot see shows: the thread
// seems to run (no wait), but does less per second. Slowdown: ratio - 1;
// confidence 0.5 at the threshold, max_probe_confidence at three times it.
// min_probe_excess 0.1: on a 2-core VM, two pinned loops measured a
// 0.2 ms probe 1.17x apart when their 25 ms work ran 1.17x apart, and 1.00-
// 1.01x apart when the work did; the article's same-SKU spread is < 5%.
//
// More work: the thread's CPU time per step is a measure of its work that
// time-sharing does not stretch (wall times of ops do), but a slower core
// does stretch it. So each step is compared on its own: the rank's CPU time
// over the median of the peers whose probe that step is within
// max_step_probe_gap of its own, those on a core as fast (all its peers in
// a step with no probe logged; no comparison when no peer's probe is that
// close). On a host whose cores differ, a rank sharing a slow core with a
// peer is compared with that peer: bench/realjobs d11-d14, 480 runs,
// against its peers' median on the steps its probe matched theirs 7
// healthy ranks of fault runs passed the floors below, against peers as
// fast none, and the 1.5x rank beside a stalled one (4 ranks) was found in
// 15 of 16 runs, not 10. step.cpu_time_high when the median of >= min_cpu_time_steps
// kept steps is at least 1 + min_cpu_time_excess and stands min_cpu_time_z
// standard errors above 1 (the spread of the kept ratios: the MAD, at least
// kMinWorkSigma). bench/realjobs 2026-12-05, 331 kept runs: healthy ranks'
// medians 0.99-1.09 with z <= 4.3 (a 1.07 over 11 steps: z 3.3; a 1.18
// over 11 steps of a core slowed most of the run: z 4.3), a 1.1x compute
// fault 1.05-1.16 (z 4-23, 14 of 24 runs at z >= 5), 1.2x 1.13-1.25, 1.5x
// 1.33-1.46; the whole run's medians, not paired by step, put a healthy
// rank whose core slowed for half the run at 1.18 with its probe's median
// at 1.00. Below min_cpu_time_z, the steps a run would need to reach it are
// StepsToTell's.
// Thread-safety: a pure function of its input.

#ifndef LAGGARD_ANALYSIS_HOST_HOST_CPU_DETECTOR_H_
#define LAGGARD_ANALYSIS_HOST_HOST_CPU_DETECTOR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/host/host_neighbours.h"
#include "analysis/steps/profiled_steps.h"
#include "base/stats/robust_stats.h"
#include "model/run.h"

namespace laggard {

struct HostCpuDetectorOptions {
  size_t min_steps = 5;
  double min_wait_share = 0.05;
  DurationNs min_wait_ns = 2'000'000;
  double min_excess_over_peers = 0.3;
  double min_wait_per_cpu = 1.5;
  double min_wait_per_cpu_over_peers = 1.5;
  double min_runnable_share = 0.5;
  double max_cpu_spread_of_shared_cores = 0.125;
  double max_window_cpu_excess = 0.15;
  double max_confidence = 0.9;
  double min_probe_excess = 0.1;
  double max_probe_confidence = 0.85;
  double min_cpu_time_excess = 0.05;
  size_t min_cpu_time_steps = 10;
  double min_cpu_time_z = 5;
  double max_step_probe_gap = 0.05;
  double min_job_probe_rise = 0.2;
  // Confidence of a finding at its threshold, and over few steps (it then
  // starts from few_steps_confidence and reaches the full figure at 20
  // steps); more work: threshold_confidence + cpu_time_confidence_rise at
  // four times min_cpu_time_z.
  double threshold_confidence = 0.5;
  double few_steps_confidence = 0.4;
  double cpu_time_confidence_rise = 0.3;
};

inline constexpr double kProbeMeanCap = 3;

// One rank's CPU picture over its steps with a known run-queue wait.
struct RankCpuStats {
  int32_t rank = 0;
  size_t steps = 0;                      // steps with a known wait
  std::optional<DurationNs> wait_ns;     // median wait per step (>= min_steps of them)
  DurationNs step_ns = 0;                // median step time of those steps
  size_t on_cpu_steps = 0;               // steps with a CPU time
  std::optional<DurationNs> on_cpu_ns;   // median CPU time per step (>= min_steps of them)
  std::optional<double> on_cpu_mean_ns;  // mean CPU time per step (a run's total / steps)
  std::optional<double> wait_per_cpu;    // wait_ns over on_cpu_ns (s waited per s run)
  size_t probe_steps = 0;                // steps with a probe time
  std::optional<DurationNs> probe_ns;    // median probe time (>= min_steps of them)
  // Mean probe time, each step's capped at kProbeMeanCap times the median
  // (bench/realjobs d15: one probe of 4 ms against a 52 us median read as
  // a core 2.4x slow): a rank that moves between cores reads its share of
  // the run on the slower one here, not in the median.
  std::optional<double> probe_mean_ns;
  // The median of its per-step CPU time over its probe time, the work per
  // unit of its core's speed, over work_per_probe_steps steps with both
  // (>= min_steps of them).
  std::optional<double> work_per_probe;
  size_t work_per_probe_steps = 0;
  // Mean probe time and mean CPU time per step over the steps the profiler
  // traced (MeasureWindowProbes).
  std::optional<DurationNs> window_probe_ns;
  std::optional<DurationNs> window_cpu_ns;
  // Mean CPU time per step and mean probe time over the steps the
  // profiler did not trace (>= kMinOutsideSteps of them each): the run's
  // work and core without the window a traces culprit was read from.
  std::optional<DurationNs> outside_cpu_ns;
  std::optional<DurationNs> outside_probe_ns;
  // Its work against its peers' (step.cpu_time_high): the median of its
  // per-step CPU time over that of the peers whose CPU ran the probe as
  // fast that step (MeasureWork), over work_steps steps (>=
  // min_cpu_time_steps of them); work_z: (work_ratio - 1) in standard
  // errors. work_probed: every one of those steps had probes to compare
  // (else a slower CPU is not ruled out).
  std::optional<double> work_ratio;
  size_t work_steps = 0;
  double work_z = 0;
  bool work_probed = false;
  double work_sigma = 0;  // the kept ratios' spread per step (>= kMinWorkSigma)
};

// The spread of per-step work ratios is taken as at least this (1%): a
// handful of near-equal ratios is not a measured zero spread.
inline constexpr double kMinWorkSigma = 0.01;

// The steps (rounded up) in which `r` would show its work ratio at
// min_cpu_time_z, at the spread measured, with the same share of its CPU
// steps kept; nullopt without a work ratio of at least 1 +
// min_cpu_time_excess.
std::optional<size_t> StepsToTell(const RankCpuStats& r, const HostCpuDetectorOptions& o);

// The run's sensitivity to more work: the run steps (rounded up) in which
// a rank whose work ratio were 1 + `excess` would stand min_cpu_time_z
// standard errors above 1 in 19 runs of 20 (kTellPowerZ more), at the
// median over the ranks of their per-step spread (work_sigma) and share of
// CPU steps kept, over the ranks with probed work ratios of >=
// min_cpu_time_steps steps (at least two); nullopt with fewer, or
// `excess` <= 0.
inline constexpr double kTellPowerZ = 1.645;
struct WorkSensitivity {
  size_t steps = 0;      // run steps needed
  double sigma = 0;      // the median per-step spread of the work ratios
  size_t run_steps = 0;  // the median of the ranks' steps with a CPU time
  size_t compared = 0;   // the median of the ranks' kept (compared) steps
};
std::optional<WorkSensitivity> StepsToTellExcess(const std::vector<RankCpuStats>& ranks,
                                                 double excess, const HostCpuDetectorOptions& o);

struct HostCpuAnalysis {
  std::vector<RankCpuStats> ranks;  // by rank
  // What the agent saw on each rank's cores (host_neighbours.h), by rank.
  std::vector<RankHostCpu> seen_by_agent;
  std::vector<Finding> findings;  // host.cpu_contention / cpu_slow, step.cpu_time_high,
                                  // most slowed first
  // How far a rank's CPU time per step over a stretch as long as the
  // profiler's window strays from its peers' by chance: the robust spread
  // (1.4826 MAD) of every rank's mean over such stretches of the unprofiled
  // steps against its peers' median (MeasureWindowProbes; >= 3 ranks).
  std::optional<double> window_noise;
  size_t window_noise_samples = 0;  // rank-stretches it was read from
};

HostCpuAnalysis AnalyzeHostCpu(const Run& run, const HostCpuDetectorOptions& options);

// The median of the ranks' `field` but all[skip]'s, where known; nullopt
// when no other rank has it.
template <typename T>
std::optional<double> PeersMedian(const std::vector<RankCpuStats>& all, size_t skip,
                                  std::optional<T> RankCpuStats::*field) {
  std::vector<double> v;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i != skip && all[i].*field) v.push_back(static_cast<double>(*(all[i].*field)));
  }
  return Median(std::move(v));
}

// `rank`'s `field` over its peers' median (PeersMedian); nullopt when
// either is unknown or the median is not positive.
template <typename T>
std::optional<double> RatioToPeers(const std::vector<RankCpuStats>& all, int32_t rank,
                                   std::optional<T> RankCpuStats::*field) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].rank != rank || !(all[i].*field)) continue;
    std::optional<double> median = PeersMedian(all, i, field);
    if (!median || *median <= 0) return std::nullopt;
    return static_cast<double>(*(all[i].*field)) / *median;
  }
  return std::nullopt;
}

// Fills RankCpuStats::window_probe_ns and window_cpu_ns over the logged
// steps the profiler traced (`profiled`, from the step detector): the speed of each rank's CPU
// while the traces were taken, which a culprit read from the traces alone
// is compared with. The mean, not the median: the traces sum a rank's
// lateness over the window, so a core that slowed for 3 of its 10 steps
// counts in part (bench/realjobs: a healthy rank's probe 1.8x for steps
// 30-32, then its peer's; last at 9 of 9 collectives). Each needs >=
// kMinWindowProbes samples in the window (probes; CPU times). Also fills
// outside_cpu_ns and outside_probe_ns from >= kMinOutsideSteps samples
// outside the window, and HostCpuAnalysis::window_noise: stretches of the
// window's length, half-overlapping, after the first kNoiseWarmupSteps
// steps and clear of the window by kNoiseWindowMargin steps (the
// profiler's warm-up and export run in them), each rank's mean from at
// least half the stretch, >= 3 ranks in a stretch, >= kMinNoiseSamples
// rank-stretches in all.
inline constexpr size_t kMinWindowProbes = 3;
inline constexpr size_t kMinOutsideSteps = 10;
inline constexpr int64_t kNoiseWarmupSteps = 5;
inline constexpr int64_t kNoiseWindowMargin = 2;
inline constexpr size_t kMinNoiseSamples = 6;
void MeasureWindowProbes(const Run& run, const std::optional<LogStepRange>& profiled,
                         HostCpuAnalysis& analysis);

// A job-wide slowdown (step.job_slowdown) in whose steps the ranks' CPUs
// ran the probe markedly slower: the machine slowed (its clocks, cores a
// hypervisor took), not the job. Per rank with >= 2 probes inside the
// episode and min_steps outside, the median inside over the median
// outside; when at least half of >= 2 ranks rose by min_job_probe_rise and
// their median rise is >= that and >= half the episode's slowdown, the
// finding says so (message, evidence) and its first next step is to look
// at the machines. min_job_probe_rise 0.2: in bench/realjobs here, every
// job-wide episode of a healthy run (+45-65%) had the ranks' probes
// 1.5-1.9x their own medians outside it, and CPU time per step 1.3-1.7x
// (the same work took more CPU: the cores ran slower). This VM's cores
// slow like that often: 58 of those 120 runs had 3 or more steps in a row
// with the ranks' probes >= 1.2x their medians.
// Failing that, one rank whose probe rose by min_job_probe_rise and whose
// thread's CPU time per step rose by half the episode's slowdown, above the
// other ranks' median rise by as much (waiting ranks poll in gloo), at most
// 1 + kSlowedCoreWorkMargin times its probe's rise (the same work on a
// slower core): its core slowed and the job waited for it, the machine
// again, its next step that rank's machine. bench/realjobs d40 w2_healthy_2
// rep 0: +56% over steps 5-9, rank 1's probe 1.47x and CPU time 1.62x there (rank 0's core had
// slowed in steps 1-3 the same way), read "job-wide slowdown" with no cause; the margin keeps a
// fault that began there on a slower core out (d35: CPU time 2.56x on a core 1.79x as slow).
inline constexpr double kSlowedCoreWorkMargin = 0.25;
void ExplainJobSlowdownsByHostCpu(const Run& run, std::vector<Finding>& step_findings,
                                  const HostCpuDetectorOptions& options);

// A trace.variable_work finding of a CPU-only job (`cpu_only`: every traced
// rank's trace holds CPU ops only; its ops' compute per step spreads
// between the ranks, a different rank slowest each step) whose ranks wait
// for a CPU (the median rank's wait at least min_wait_share of its step),
// none using max_window_cpu_excess more CPU time than its peers in the
// profiled steps (window_cpu_ns, MeasureWindowProbes first), and whose own
// CPU time per step does not spread: over the profiled steps with a CPU
// time for every rank (>= kMinWindowProbes of them), the median of each
// step's robust spread (1.4826 MAD / median) under
// max_cpu_spread_of_shared_cores. Then the ranks share cores and wait for
// them, the work does not vary: the finding is kept at severity info with
// that said, its next step dropped, and the verdict does not read it as
// workload imbalance. max_cpu_spread_of_shared_cores 0.125 (half the
// traces' cpu_variable_work_cv): bench/realjobs d11-d21, 4 ranks on 2
// cores, the 3 healthy runs with this finding (cores within 1.05x) have a
// CPU-time spread of 0.014-0.065 against the ops' 0.26-0.28 and wait ~32%
// of the step; where the cores differ in speed the CPU time spreads with
// them (0.17-0.32) and the finding stays. max_window_cpu_excess 0.15: one
// rank doing more work, which the MAD of 4 ranks would not show; those 3
// healthy runs' ranks read 0.91-1.10x their peers' CPU time there.
void ExplainVariableWorkByHostCpu(const Run& run, const std::optional<LogStepRange>& profiled,
                                  bool cpu_only, const HostCpuAnalysis& host,
                                  std::vector<Finding>& trace_findings,
                                  const HostCpuDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HOST_HOST_CPU_DETECTOR_H_
