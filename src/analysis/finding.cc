#include "analysis/finding.h"

#include <iterator>

#include <fmt/format.h>

namespace laggard {
namespace {

constexpr FindingInfo kCatalogue[] = {
    {"step.straggler", Severity::kCritical, "rank slower than its peers"},
    {"step.synchronised", Severity::kWarning,
     "step times are synchronised across ranks: they cannot name the culprit"},
    {"step.job_slowdown", Severity::kWarning, "the whole job slowed down"},
    {"step.periodic_slowdown", Severity::kWarning, "slowdowns recur periodically"},
    {"step.jitter", Severity::kInfo, "rare slow steps on random ranks"},
    {"step.no_peers", Severity::kWarning, "no peers to compare with"},
    {"trace.late_arrival", Severity::kCritical, "rank arrives last at the collectives"},
    {"trace.compute_slow", Severity::kCritical, "rank's kernels run slower than a healthy peer's"},
    {"trace.host_stall", Severity::kCritical,
     "kernels are normal but the rank idles before launching them"},
    {"trace.comm_bound", Severity::kWarning,
     "no late rank; collective transfers take much of every step"},
    {"trace.clock_offsets", Severity::kInfo, "rank clocks disagree; offsets were removed"},
    {"trace.no_match", Severity::kWarning, "no collective could be matched across ranks"},
    {"gpu.thermal", Severity::kCritical, "GPU runs hot and its SM clock is pulled down"},
    {"gpu.power_cap", Severity::kCritical,
     "GPU power limit is lowered, or draw is pinned at the cap with low clocks"},
    {"gpu.clocks_low", Severity::kWarning,
     "GPU's SM clock under load is below its same-model peers'"},
    {"gpu.pcie_downgrade", Severity::kWarning,
     "GPU's PCIe link runs below its capability or its peers'"},
    {"gpu.nvlink_down", Severity::kWarning, "GPU has fewer active NVLinks than its peers"},
    {"gpu.errors", Severity::kWarning, "GPU reports XID / ECC / memory-remapping / diag errors"},
    {"gpu.idle_waiting", Severity::kInfo,
     "GPUs look idle because they wait for the culprit: low utilisation is not evidence"},
    {"net.port_down", Severity::kCritical, "network port is down or its link not detected"},
    {"net.link_degraded", Severity::kCritical,
     "network link runs below its peers' rate / width / speed"},
    {"net.bandwidth_low", Severity::kCritical,
     "nccl-tests bus bandwidth far below comparable runs"},
    {"net.test_errors", Severity::kWarning, "nccl-tests reported wrong results or failures"},
    {"net.socket_fallback", Severity::kCritical,
     "NCCL fell back to TCP sockets where peers use InfiniBand"},
    {"net.no_gdr", Severity::kWarning, "NCCL runs without GPU Direct RDMA where peers have it"},
    {"net.poor_path", Severity::kWarning,
     "GPU's nearest NIC is across the CPU interconnect while peers' are on their PCIe switch"},
    {"net.shared_switch", Severity::kWarning,
     "slow hosts share a switch: likely interference from outside the job"},
    {"step.stage_imbalance", Severity::kWarning,
     "one pipeline stage is uniformly slower than the others: workload imbalance"},
    {"net.nic_shared", Severity::kWarning,
     "several GPUs reach the network through one NIC while the host has NICs to spare"},
    {"trace.late_group", Severity::kCritical,
     "several ranks arrive late together: one host's ranks, or a block of ranks"},
    {"trace.variable_work", Severity::kWarning,
     "per-step work differs between ranks: a different rank is slowest each step"},
};
static_assert(std::size(kCatalogue) == static_cast<size_t>(FindingCode::kCount));

}  // namespace

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

const FindingInfo& Describe(FindingCode code) { return kCatalogue[static_cast<size_t>(code)]; }

std::string RankListText(const std::vector<int32_t>& ranks) {
  bool consecutive = ranks.size() >= 3;
  for (size_t i = 1; i < ranks.size() && consecutive; ++i) consecutive = ranks[i] == ranks[i - 1] + 1;
  if (consecutive) return fmt::format("{}-{}", ranks.front(), ranks.back());
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) s += fmt::format("{}{}", i ? ", " : "", ranks[i]);
  if (ranks.size() > 8) s += fmt::format(", ... ({} ranks)", ranks.size());
  return s;
}

}  // namespace laggard
