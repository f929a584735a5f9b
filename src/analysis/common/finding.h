// Findings: the product of the analysis stage. Every detector reports what it
// found as entries of one catalogue (code, default severity, title, category,
// default next step), with an entity, measured numbers and evidence pointing
// at the input. The verdict stage combines findings; the report stage prints
// them. Plain values, no shared state: safe to read from any thread.
//
// Serialized names (codes, categories, patterns, bands) are part of the JSON
// schema: append, never rename.

#ifndef LAGGARD_ANALYSIS_COMMON_FINDING_H_
#define LAGGARD_ANALYSIS_COMMON_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/run.h"

namespace laggard {

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view SeverityName(Severity s);

enum class FindingCode : uint16_t {
  kStepStraggler,         // one rank's steps are slower than its peers'
  kStepsSynchronised,     // step times are equal on all ranks: cannot name a culprit
  kJobSlowdown,           // the whole job slowed for a stretch of steps
  kPeriodicSlowdown,      // slowdowns recur with a period
  kJitter,                // rare slow steps on random ranks
  kNoPeers,               // nothing to compare with (one series, or no rank known)
  kTraceLateArrival,      // a rank arrives last at the collectives: the culprit
  kTraceComputeSlow,      // its kernels run slower than a healthy peer's
  kTraceHostStall,        // kernels normal, but it idles before launching them
  kTraceCommBound,        // transfers take much of every step
  kTraceClockOffsets,     // rank clocks disagree; offsets were removed
  kTraceNoMatch,          // traces present, but no collective could be matched
  kGpuThermal,            // hot GPU with its SM clock pulled down
  kGpuPowerCap,           // power limit lowered, or draw pinned at the cap with low clocks
  kGpuClocksLow,          // SM clock under load below same-model peers, no thermal/power reason
  kGpuPcieDowngrade,      // PCIe link below its capability or its peers (under load)
  kGpuNvlinkDown,         // fewer active NVLinks than same-model peers
  kGpuErrors,             // XID / ECC / retired pages / row remapping / dcgmi diag failure
  kGpuIdleWaiting,        // GPUs look idle because they wait: not evidence by itself
  kNetPortDown,           // IB port not Active, or Ethernet link not detected
  kNetLinkDegraded,       // IB rate/width or Ethernet speed below peers / capability
  kNetBandwidthLow,       // nccl-tests bus bandwidth of a host (pair) <= 0.7x comparable runs
  kNetTestErrors,         // nccl-tests #wrong > 0 or failures
  kNetSocketFallback,     // NCCL uses NET/Socket where peers use IB
  kNetNoGdr,              // NCCL without GPU Direct RDMA where peers have it
  kNetPoorPath,           // a GPU's nearest NIC is across the CPU interconnect (SYS/NODE)
  kNetSharedSwitch,       // slow hosts share a switch: interference from outside the job
  kStepStageImbalance,    // one pipeline stage uniformly slower: workload imbalance
  kNetNicShared,          // more GPUs behind one NIC than the host's NICs share out evenly
  kTraceLateGroup,        // several ranks (one host's, or a block) arrive late together
  kTraceVariableWork,     // per-step work differs between ranks, a different rank slowest each step
  kHostPause,             // one rank pauses at the job's isolated slow steps (pause_detector.h)
  kStepProfilerWindow,    // the profiled steps ran slower: the profiler's cost, not the job's
  kGpuPowerLimitChanged,  // the enforced power limit changed during the run: an event
  kPipelineStageImbalance,     // one stage slower on every DP replica: partitioning (what-if)
  kPipelineSlowWorker,         // one worker slower than the other replicas of its stage
  kPipelineWorkloadImbalance,  // the slowest replica moves from step to step: the data
  kPipelineSlowCommunication,  // one op group's transfers hold the step up
  kPipelineNoLayout,           // an op timeline without layout: the replay needs --layout
  kHangNotJoined,              // ranks never reached the collective the others wait in
  kHangDesync,                 // ranks at different collectives, or different ops at one number
  kHangStuckCollective,        // every member enqueued, none completed: GPU / network side
  kHangTransportError,         // a NIC / peer-level error (NET/IB, gloo, ncclRemoteError)
  kHangProcessMissing,         // a rank's process exited or was killed
  kHangInconclusive,           // a hang, but the evidence does not tell which rank
  kHangRankStalled,            // live: a rank stopped reporting steps behind the others
  kHangJobStalled,             // live: every rank stopped reporting steps at one step
  kHangHostStopped,    // a rank's host stopped issuing: its last enqueued is behind its group's
  kHostCpuContention,  // a rank's process waits for a CPU, its peers' do not (host_cpu_detector.h)
  kHostCpuSlow,      // a rank's CPU runs a fixed probe slower than its peers' (host_cpu_detector.h)
  kStepCpuTimeHigh,  // a rank's thread uses more CPU time per step on as fast a CPU: more work
  kGpuThrottleHistory,   // a GPU's driver counters: long throttled since it loaded (one snapshot)
  kToolStragglerReport,  // Megatron's StragglerDetector: its slowest rank over its reports
  kToolDataLoaderSlow,   // Megatron's StragglerDetector: a rank's get_batch is slow
  kGpuP2pBandwidthLow,   // p2pBandwidthLatencyTest: one GPU's links below its peers'
  kToolNvrxReport,       // NVRx straggler detection: its lowest-scoring rank over its reports
  kNetPairFabric,        // node pairs slow together though each node is fast elsewhere
  kNetPairSlow,          // a slow node pair the pair tests cannot pin on a node or the fabric
  kCount,
};

// Which kind of evidence a finding comes from: the prefix of its name.
enum class FindingCategory : uint8_t {
  kSteps,
  kTraces,
  kGpu,
  kNetwork,
  kHost,
  kPipeline,
  kHang,
  kTool,  // another tool's report, read from the job's logs
};
std::string_view FindingCategoryName(FindingCategory c);  // "steps", "traces", "gpu", ...

struct FindingInfo {
  std::string_view name;  // "step.straggler"
  Severity severity;
  std::string_view title;
  FindingCategory category;
  // What to do about the finding when nothing more specific is known, as a
  // fmt template with named arguments (DefaultNextStep() fills them in).
  // A detector writes its own from what it measured (Finding::next_steps);
  // a warning or critical finding without any gets this one when it names
  // no argument (AnalyzeRun). Empty only for an informational row, with
  // `no_next_step` saying why nothing is to be done.
  std::string_view next_step;
  std::string_view no_next_step;
};
const FindingInfo& Describe(FindingCode code);

// `code`'s default next step with its named arguments filled in, e.g.
// DefaultNextStep(FindingCode::kTraceLateArrival, fmt::arg("rank", 3)).
// Every argument the template names must be passed (tests/analysis/
// finding_test.cc formats each template with its callers' arguments); a
// template that does not format comes back unformatted rather than throwing.
std::string FormatNextStep(FindingCode code, fmt::format_args args);
template <typename... Args>
std::string DefaultNextStep(FindingCode code, const Args&... named_args) {
  return FormatNextStep(code, fmt::make_format_args(named_args...));
}

// How a slowdown shows over the steps, or which ranks a group finding holds.
// Serialized by PatternName(); append, never rename.
enum class Pattern : uint8_t {
  kPersistent,    // every step after the onset
  kPeriodic,      // slow steps recur with a period
  kIntermittent,  // some steps, no period
  kJobWide,       // the whole job, no rank standing out
  kJitter,        // rare slow steps on random ranks
  kHost,          // trace.late_group: one host's ranks
  kBlock,         // trace.late_group: a block of consecutive ranks
  kScattered,     // trace.late_group: ranks neither one host nor a block
  kSwitchGroup,   // net.shared_switch: hosts of one switch slow in nccl-tests
  kPortCounters,  // net.shared_switch: port counters show the switch's hosts waiting
  kOnsetAtEnd,    // gpu.thermal: the GPU began to throttle near the end of the data
};
std::string_view PatternName(Pattern p);  // "persistent", "job_wide", "port_counters", ...

// The article's bands for a rank's step-time excess over its peers.
// Serialized by SlowdownBandName(); append, never rename.
enum class SlowdownBand : uint8_t {
  kNormal,     // < 5%: normal variation between same-model GPUs
  kSuspect,    // 5-15%
  kStraggler,  // >= 15%: almost surely a straggler
};
std::string_view SlowdownBandName(SlowdownBand b);  // "normal", "suspect", "straggler"

// "16-23" for three or more consecutive ranks, else "3, 7, 12" (at most 8
// listed, then the count).
std::string RankListText(const std::vector<int32_t>& ranks);

// What a finding is about. Unknown parts are nullopt.
struct Entity {
  std::optional<int32_t> rank;
  std::optional<std::string> host;
  std::optional<int32_t> gpu;
  std::optional<std::string> nic;          // "mlx5_1 port 1", "eth0"
  std::optional<std::string> switch_name;  // from the host -> switch map
  // Place in a model-parallel layout (op timelines): a worker has all
  // three, a pipeline stage only pp_stage.
  std::optional<int32_t> dp_rank;
  std::optional<int32_t> pp_stage;
  std::optional<int32_t> tp_rank;
  bool job = false;  // the job as a whole
};

// One piece of support for a finding, located in the input when possible.
struct Evidence {
  std::string text;
  std::optional<SourceRef> source;
};

struct Finding {
  FindingCode code = FindingCode::kCount;
  Severity severity = Severity::kInfo;
  Entity entity;
  std::string message;    // one line with the measured numbers
  double confidence = 0;  // 0..1 that the finding is right
  std::vector<Evidence> evidence;
  std::vector<std::string> next_steps;

  // Numbers the verdict and reports use; nullopt when not applicable.
  std::optional<double> slowdown;  // mean relative excess over peers (0.21 = +21%)
  std::optional<double> spike;     // excess on the slow steps of a periodic /
                                   // intermittent pattern
  // What-if (pipeline findings): the share of step time that removing the
  // culprit gives back, from the replay (analysis/pipelines/pipeline_replay.h).
  std::optional<double> recovered;
  std::optional<int64_t> onset_step;
  std::optional<TimeNs> onset_time;
  std::optional<int64_t> end_step;  // last slow step when it recovered / episode end
  std::optional<Pattern> pattern;
  std::optional<double> period_steps;
  std::optional<double> period_s;
  std::optional<SlowdownBand> band;
  // Hardware / network findings: the specific cause (thermal, power_cap,
  // clocks, pcie_downgrade, nvlink_down, gpu_errors, nic_degraded,
  // port_down, socket_fallback, no_gdr, poor_path, shared_switch) and
  // whether the anomaly overlaps the slow steps of its rank in time
  // (nullopt: times could not be compared).
  std::optional<std::string> cause;
  std::optional<bool> overlaps_slow_steps;
  std::vector<int32_t> ranks;  // ranks behind a host / NIC finding
};

// A warning or critical finding its detector gave no next step gets its
// catalogue row's default, when that names no argument; others are left.
void AddDefaultNextStep(Finding& f);

// A finding of `code` about `entity`, with the catalogue's severity
// (Describe(code).severity); the detector fills in the rest.
Finding MakeFinding(FindingCode code, Entity entity = {});

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_COMMON_FINDING_H_
