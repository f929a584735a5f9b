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
// Thread-safety: a pure function of its input.

#ifndef LAGGARD_ANALYSIS_HOST_CPU_DETECTOR_H_
#define LAGGARD_ANALYSIS_HOST_CPU_DETECTOR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/finding.h"
#include "model/run.h"

namespace laggard {

struct HostCpuDetectorOptions {
  size_t min_steps = 5;
  double min_wait_share = 0.05;
  DurationNs min_wait_ns = 2'000'000;
  double min_excess_over_peers = 0.3;
  double max_confidence = 0.9;
};

// One rank's CPU picture over its steps with a known run-queue wait.
struct RankCpuStats {
  int32_t rank = 0;
  size_t steps = 0;                     // steps with a known wait
  DurationNs wait_ns = 0;               // median wait per step
  DurationNs step_ns = 0;               // median step time of those steps
  std::optional<DurationNs> on_cpu_ns;  // median CPU time per step, when logged
};

struct HostCpuAnalysis {
  std::vector<RankCpuStats> ranks;  // by rank
  std::vector<Finding> findings;    // host.cpu_contention, largest excess first
};

HostCpuAnalysis AnalyzeHostCpu(const Run& run, const HostCpuDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HOST_CPU_DETECTOR_H_
