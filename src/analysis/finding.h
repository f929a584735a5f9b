// Findings: the product of the analysis stage. Every detector reports what it
// found as entries of one catalogue (code, default severity, title, what to do
// next), with an entity, measured numbers and evidence pointing at the input.
// The verdict stage ranks findings; the report stage prints them.
//
// Serialized names are part of the JSON schema: append, never rename.

#ifndef LAGGARD_ANALYSIS_FINDING_H_
#define LAGGARD_ANALYSIS_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/run.h"

namespace laggard {

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view SeverityName(Severity s);

enum class FindingCode : uint16_t {
  kStepStraggler,       // one rank's steps are slower than its peers'
  kStepsSynchronised,   // step times are equal on all ranks: cannot name a culprit
  kJobSlowdown,         // the whole job slowed for a stretch of steps
  kPeriodicSlowdown,    // slowdowns recur with a period
  kJitter,              // rare slow steps on random ranks
  kNoPeers,             // nothing to compare with (one series, or no rank known)
  kTraceLateArrival,    // a rank arrives last at the collectives: the culprit
  kTraceComputeSlow,    // its kernels run slower than a healthy peer's
  kTraceHostStall,      // kernels normal, but it idles before launching them
  kTraceCommBound,      // no late rank; transfers take much of every step
  kTraceClockOffsets,   // rank clocks disagree; offsets were removed
  kTraceNoMatch,        // traces present, but no collective could be matched
  kGpuThermal,          // hot GPU with its SM clock pulled down
  kGpuPowerCap,         // power limit lowered, or draw pinned at the cap with low clocks
  kGpuClocksLow,        // SM clock under load below same-model peers, no thermal/power reason
  kGpuPcieDowngrade,    // PCIe link below its capability or its peers (under load)
  kGpuNvlinkDown,       // fewer active NVLinks than same-model peers
  kGpuErrors,           // XID / ECC / retired pages / row remapping / dcgmi diag failure
  kGpuIdleWaiting,      // GPUs look idle because they wait: not evidence by itself
  kNetPortDown,         // IB port not Active, or Ethernet link not detected
  kNetLinkDegraded,     // IB rate/width or Ethernet speed below peers / capability
  kNetBandwidthLow,     // nccl-tests bus bandwidth of a host (pair) <= 0.7x comparable runs
  kNetTestErrors,       // nccl-tests #wrong > 0 or failures
  kNetSocketFallback,   // NCCL uses NET/Socket where peers use IB
  kNetNoGdr,            // NCCL without GPU Direct RDMA where peers have it
  kNetPoorPath,         // a GPU's nearest NIC is across the CPU interconnect (SYS/NODE)
  kNetSharedSwitch,     // slow hosts share a switch: interference from outside the job
  kStepStageImbalance,  // one pipeline stage uniformly slower: workload imbalance
  kNetNicShared,        // more GPUs behind one NIC than the host's NICs share out evenly
  kTraceLateGroup,      // several ranks (one host's, or a block) arrive late together
  kTraceVariableWork,   // per-step work differs between ranks, a different rank slowest each step
  kCount,
};

struct FindingInfo {
  std::string_view name;  // "step.straggler"
  Severity severity;
  std::string_view title;
};
const FindingInfo& Describe(FindingCode code);

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
  std::string message;     // one line with the measured numbers
  double confidence = 0;   // 0..1 that the finding is right
  std::vector<Evidence> evidence;
  std::vector<std::string> next_steps;

  // Numbers the verdict and reports use; nullopt when not applicable.
  std::optional<double> slowdown;        // mean relative excess over peers (0.21 = +21%)
  std::optional<double> spike;           // excess on the slow steps of a periodic /
                                         // intermittent pattern
  std::optional<int64_t> onset_step;
  std::optional<TimeNs> onset_time;
  std::optional<int64_t> end_step;       // last slow step when it recovered / episode end
  std::optional<std::string> pattern;    // persistent | periodic | intermittent | job_wide | jitter
  std::optional<double> period_steps;
  std::optional<double> period_s;
  std::optional<std::string> band;       // normal | suspect | straggler (article's bands)
  // Hardware / network findings: the specific cause (thermal, power_cap,
  // clocks, pcie_downgrade, nvlink_down, gpu_errors, nic_degraded,
  // port_down, socket_fallback, no_gdr, poor_path, shared_switch) and
  // whether the anomaly overlaps the slow steps of its rank in time
  // (nullopt: times could not be compared).
  std::optional<std::string> cause;
  std::optional<bool> overlaps_slow_steps;
  std::vector<int32_t> ranks;  // ranks behind a host / NIC finding
};

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_FINDING_H_
