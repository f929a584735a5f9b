// The host-CPU seam of the agent: what slows a rank's CPU from outside the
// job (issue 45, the seed's "external interference").
//
//   <root>/proc/stat   per-core jiffies ("cpuN user nice system idle iowait
//                      irq softirq steal ..."), procs_running (the run queue:
//                      threads runnable now, the sampler's own included) and
//                      procs_blocked. Between two rounds: each core's busy
//                      share (not idle or iowait) and steal share (time the
//                      hypervisor ran another guest on it).
//
// Steal is often invisible: a guest whose neighbour shares its physical
// core sees none (bench/realjobs: two vCPUs 1.1-1.8x apart with 0 steal).
// So the sampler also runs a speed probe on each core: a fixed piece of
// integer work, run pinned to the core in turn and timed. A core slowed by a
// neighbour the guest cannot see, or shared with a busy thread, runs it
// longer; CoreSample::speed_ratio puts each against the fastest core's
// latest probe. The work is calibrated once so that a round's probes take
// about `probe_budget` in all (the agent's default 200 us), each at least
// kMinProbeNs: where the budget does not cover every core at that, each
// round probes the next budget / kMinProbeNs cores in turn, and each core
// reports its latest probe.
//
// A file that is missing leaves its values absent; a line that does not
// parse is counted in HostCpu::parse_errors. Nothing here throws or stops
// the agent.
//
// Thread-safety: one HostCpuSampler per sampling thread (it keeps the
// previous round's counters); the probe pins a thread of its own.

#ifndef LAGGARD_AGENT_HOST_CPU_H_
#define LAGGARD_AGENT_HOST_CPU_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.h"

namespace laggard::agent {

// One "cpuN" line of /proc/stat, in USER_HZ ticks.
struct CpuTicks {
  int32_t cpu = 0;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct ProcStat {
  std::vector<CpuTicks> cpus;  // per core, in file order ("cpu" totals left out)
  std::optional<uint64_t> procs_running;
  std::optional<uint64_t> procs_blocked;
  uint64_t parse_errors = 0;
};

ProcStat ParseProcStat(std::string_view text);

struct CoreSample {
  int32_t cpu = 0;
  std::optional<double> busy_ratio;   // over the last round: not idle / all ticks
  std::optional<double> steal_ratio;  // over the last round: steal / all ticks
  std::optional<double> probe_s;      // the fixed work's wall time on this core, latest
  std::optional<double> speed_ratio;  // the fastest core's latest probe / this core's (1: fastest)
};

struct HostCpu {
  std::vector<CoreSample> cores;  // by cpu number
  std::optional<uint64_t> procs_running;
  std::optional<uint64_t> procs_blocked;
  uint64_t parse_errors = 0;
};

// Busy and steal shares per core between two readings (a core in both whose
// tick total grew); procs from `now`.
HostCpu CpuDelta(const ProcStat& before, const ProcStat& now);

inline constexpr DurationNs kMinProbeNs = 50'000;

// The largest probe, in steps of its work: a clock too coarse to calibrate
// on must not make a probe of seconds.
inline constexpr uint64_t kMaxProbeSteps = uint64_t{1} << 30;

// Runs the probe's fixed work (`iterations` steps) on each of `cores` in
// turn, on a thread of its own pinned to each (the caller's affinity is
// left alone), after an untimed warm-up of a quarter of it; each core's
// wall seconds. A core the thread cannot be pinned to is left out.
std::map<int32_t, double> ProbeCores(const std::vector<int32_t>& cores, uint64_t iterations);
// The cores this process may run on (its main thread's mask), ascending.
std::vector<int32_t> AllowedCores();

class HostCpuSampler {
 public:
  // `root`: "/" in production, a fake tree in tests, "" for no /proc/stat.
  // `probe_budget_ns` 0: no speed probe.
  HostCpuSampler(std::string root, DurationNs probe_budget_ns);
  HostCpu Sample();
  uint64_t probe_iterations() const { return iterations_; }

 private:
  void Calibrate();

  std::string root_;
  DurationNs probe_budget_ns_;
  std::optional<ProcStat> previous_;
  double ns_per_step_ = 0;            // the work's speed, from the first probing Sample()
  uint64_t iterations_ = 0;           // steps per probe, from the cores allowed now
  int32_t last_probed_ = -1;          // the next round starts after it
  std::map<int32_t, double> latest_;  // each allowed core's latest probe, seconds
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_HOST_CPU_H_
