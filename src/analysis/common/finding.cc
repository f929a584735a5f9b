#include "analysis/common/finding.h"

#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace laggard {
namespace {

using enum FindingCategory;

// Columns: name, severity, title, category, default next step (a template
// for DefaultNextStep(); empty where the detector writes its own).
constexpr FindingInfo kCatalogue[] = {
    {"step.straggler", Severity::kCritical, "rank slower than its peers", kSteps},
    {"step.synchronised", Severity::kWarning,
     "step times are synchronised across ranks: they cannot name the culprit", kSteps},
    {"step.job_slowdown", Severity::kWarning, "the whole job slowed down", kSteps},
    {"step.periodic_slowdown", Severity::kWarning, "slowdowns recur periodically", kSteps,
     "profile the next expected slow step on every rank: step {step} (torch.profiler schedule "
     "covering steps {first}-{last}) to see which rank or host stalls"},
    {"step.jitter", Severity::kInfo, "rare slow steps on random ranks", kSteps},
    {"step.no_peers", Severity::kWarning, "no peers to compare with", kSteps},
    {"trace.late_arrival", Severity::kCritical, "rank arrives last at the collectives", kTraces,
     "compare rank {rank}'s trace with a healthy rank's around the late collectives: longer "
     "kernels mean the GPU is slow, idle gaps mean it waits for the host"},
    {"trace.compute_slow", Severity::kCritical, "rank's kernels run slower than a healthy peer's",
     kTraces},
    {"trace.host_stall", Severity::kCritical,
     "kernels are normal but the rank idles before launching them", kTraces},
    {"trace.comm_bound", Severity::kWarning,
     "no late rank; collective transfers take much of every step", kTraces},
    {"trace.clock_offsets", Severity::kInfo, "rank clocks disagree; offsets were removed", kTraces},
    {"trace.no_match", Severity::kWarning, "no collective could be matched across ranks", kTraces},
    {"gpu.thermal", Severity::kCritical, "GPU runs hot and its SM clock is pulled down", kGpu},
    {"gpu.power_cap", Severity::kCritical,
     "GPU power limit is lowered, or draw is pinned at the cap with low clocks", kGpu},
    {"gpu.clocks_low", Severity::kWarning,
     "GPU's SM clock under load is below its same-model peers'", kGpu},
    {"gpu.pcie_downgrade", Severity::kWarning,
     "GPU's PCIe link runs below its capability or its peers'", kGpu},
    {"gpu.nvlink_down", Severity::kWarning, "GPU has fewer active NVLinks than its peers", kGpu},
    {"gpu.errors", Severity::kWarning, "GPU reports XID / ECC / memory-remapping / diag errors",
     kGpu},
    {"gpu.idle_waiting", Severity::kInfo,
     "GPUs look idle because they wait for the culprit: low utilisation is not evidence", kGpu},
    {"net.port_down", Severity::kCritical, "network port is down or its link not detected",
     kNetwork},
    {"net.link_degraded", Severity::kCritical,
     "network link runs below its peers' rate / width / speed", kNetwork},
    {"net.bandwidth_low", Severity::kCritical, "nccl-tests bus bandwidth far below comparable runs",
     kNetwork},
    {"net.test_errors", Severity::kWarning, "nccl-tests reported wrong results or failures",
     kNetwork},
    {"net.socket_fallback", Severity::kCritical,
     "NCCL fell back to TCP sockets where peers use InfiniBand", kNetwork},
    {"net.no_gdr", Severity::kWarning, "NCCL runs without GPU Direct RDMA where peers have it",
     kNetwork},
    {"net.poor_path", Severity::kWarning,
     "GPU's nearest NIC is across the CPU interconnect while peers' are on their PCIe switch",
     kNetwork},
    {"net.shared_switch", Severity::kWarning,
     "slow hosts share a switch: likely interference from outside the job", kNetwork},
    {"step.stage_imbalance", Severity::kWarning,
     "one pipeline stage is uniformly slower than the others: workload imbalance", kSteps},
    {"net.nic_shared", Severity::kWarning,
     "several GPUs reach the network through one NIC while the host has NICs to spare", kNetwork},
    {"trace.late_group", Severity::kCritical,
     "several ranks arrive late together: one host's ranks, or a block of ranks", kTraces},
    {"trace.variable_work", Severity::kWarning,
     "per-step work differs between ranks: a different rank is slowest each step", kTraces},
    {"host.pause", Severity::kWarning,
     "one rank pauses at the job's isolated slow steps: its GPU alone goes idle while the "
     "others wait",
     kHost,
     "find what pauses {who}'s process at the slow steps: Python GC (gc.freeze() after "
     "start-up, or gc.disable() with gc.collect() between steps), checkpoint writes on the "
     "training thread, data loader workers restarting; `py-spy dump --pid PID` on {host} during "
     "a slow step, or profile a window of steps that includes one"},
    {"step.profiler_window", Severity::kInfo,
     "the steps the profiler recorded ran slower than the rest: the profiler's own cost, not a "
     "slowdown of the job",
     kSteps},
    {"gpu.power_limit_changed", Severity::kInfo,
     "GPU's enforced power limit changed during the run (nvidia-smi -pl, a power-capping "
     "daemon): an event on the timeline",
     kGpu},
    {"pipeline.stage_imbalance", Severity::kWarning,
     "one pipeline stage is slower on every data-parallel replica: the layers are not "
     "partitioned evenly, no worker is faulty",
     kPipeline},
    {"pipeline.slow_worker", Severity::kCritical,
     "one worker is slower than the other replicas of its pipeline stage", kPipeline},
    {"pipeline.workload_imbalance", Severity::kWarning,
     "the slowest data-parallel replica changes from step to step: uneven work (sequence "
     "lengths), not a faulty worker",
     kPipeline},
    {"pipeline.slow_communication", Severity::kWarning,
     "one communication group's transfers hold the step up", kPipeline},
    {"pipeline.no_layout", Severity::kWarning,
     "an op timeline without its parallel layout: the what-if replay cannot run", kPipeline,
     "give the layout: --layout dp=D,pp=P,tp=T (ranks in Megatron order, tp fastest)"},
    {"hang.not_joined", Severity::kCritical,
     "ranks never reached the collective the other ranks of their group wait in", kHang},
    {"hang.desync", Severity::kCritical,
     "the ranks of a group are at different collectives, or run different ops under one "
     "sequence number",
     kHang},
    {"hang.stuck_collective", Severity::kCritical,
     "every rank of a group enqueued the collective and none completed it: the GPU or the "
     "network side (NCCL, a link, a GPU error), no rank is missing",
     kHang,
     "on the hosts of ranks {ranks}: `nvidia-smi -q -d ERRORS` and `dmesg | grep -i xid` for a "
     "GPU error; ibstat and port counters for the links between them; while it hangs, "
     "`ncclras` (NCCL >= 2.24) for the communicator's state"},
    {"hang.transport_error", Severity::kCritical,
     "a network transport error between ranks (NET/IB completion error, gloo connection "
     "closed, ncclRemoteError)",
     kHang},
    {"hang.process_missing", Severity::kCritical, "a rank's process exited or was killed", kHang},
    {"hang.inconclusive", Severity::kWarning,
     "the job hung, and the evidence given does not tell which rank", kHang,
     "collect Flight Recorder dumps from every rank (TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
     "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_), the "
     "full stderr of every rank, and an `ncclras` snapshot while it hangs (NCCL >= 2.24)"},
    {"hang.rank_stalled", Severity::kCritical,
     "a rank stopped reporting steps while the other ranks, a step ahead, wait for it", kHang},
    {"hang.job_stalled", Severity::kWarning,
     "every rank stopped reporting steps at the same step: a hang, or the end of the job", kHang,
     "while it hangs: py-spy dump --pid <pid> on every rank (the one not inside a collective is "
     "the one the others wait for), and an `ncclras` snapshot (NCCL >= 2.24); for the next "
     "time, Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
     "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_)"},
    {"hang.host_stopped", Severity::kCritical,
     "a rank's host stopped issuing collectives: its last enqueued collective (Flight Recorder "
     "pg_status) is behind its group's, and nothing it enqueued is left unfinished; host side "
     "(the GIL, Python, a data loader, a deadlock, a CPU hang)",
     kHang,
     "see where rank {rank} is: `py-spy dump --pid PID` on its host (every python process of "
     "it); a stack outside torch.distributed is where its host stopped; a stack in a CUDA "
     "synchronize points at its GPU instead: `nvidia-smi -q -d ERRORS`, `dmesg | grep -i xid`"},
    {"host.cpu_contention", Severity::kWarning,
     "a rank's process waits for a CPU while its peers' do not: other work shares its cores "
     "(host contention)",
     kHost,
     "find what shares {who}'s CPUs on {host}: `top -H` or `pidstat -u -t 1` there, and the "
     "rank's affinity (`taskset -cp PID`); move that work off the rank's cores, or pin the rank "
     "to cores of its own (numactl / taskset)"},
    {"host.cpu_slow", Severity::kWarning,
     "a rank's CPU runs a fixed piece of work slower than its peers': a slower core, or one shared "
     "with work the guest cannot see",
     kHost,
     "compare the cores of {who} on {host} with its peers' under load (`perf stat`, a pinned "
     "busy loop per core; `mpstat -P ALL 1` for steal); move the rank to another core or host, or "
     "ask the provider about noisy neighbours"},
    {"step.cpu_time_high", Severity::kWarning,
     "a rank's training thread uses more CPU time per step than its peers' on CPUs as fast: it "
     "does more work each step",
     kSteps,
     "compare what {who} computes with a peer's: batch and sequence sizes, padding, the data "
     "shard, extra work on that rank (logging, evaluation); profile a few steps of both"},
    {"gpu.throttle_history", Severity::kWarning,
     "a GPU's clock-event counters show long throttling since its driver loaded, far more than "
     "its same-model peers' (one snapshot: a history, not the run)",
     kGpu},
    {"tool.straggler_report", Severity::kInfo,
     "Megatron's StragglerDetector names a rank slowest (or none) over its reports", kTool},
    {"tool.data_loader_slow", Severity::kInfo,
     "Megatron's StragglerDetector shows one rank's get_batch far slower than its peers'", kTool},
    {"gpu.p2p_bandwidth_low", Severity::kWarning,
     "p2pBandwidthLatencyTest shows one GPU's links slower than its peers' (a test, not the run)",
     kGpu},
    {"tool.nvrx_report", Severity::kInfo,
     "NVRx straggler detection's GPU scores name a rank (or node) slowest, or none", kTool},
    {"net.pair_fabric", Severity::kWarning,
     "node-pair bandwidth tests: pairs slow together though each of their nodes is fast with "
     "another partner (the fabric, not a node)",
     kNetwork},
    {"net.pair_slow", Severity::kWarning,
     "node-pair bandwidth tests: a slow pair whose nodes were not tested with others (either "
     "node or the path)",
     kNetwork},
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

std::string_view FindingCategoryName(FindingCategory c) {
  switch (c) {
    case kSteps: return "steps";
    case kTraces: return "traces";
    case kGpu: return "gpu";
    case kNetwork: return "network";
    case kHost: return "host";
    case kPipeline: return "pipeline";
    case kHang: return "hang";
    case kTool: return "tool";
  }
  return "steps";
}

const FindingInfo& Describe(FindingCode code) { return kCatalogue[static_cast<size_t>(code)]; }

std::string FormatNextStep(FindingCode code, fmt::format_args args) {
  std::string_view text = Describe(code).next_step;
  try {
    return fmt::vformat(text, args);
  } catch (const fmt::format_error&) {
    return std::string(text);
  }
}

std::string_view PatternName(Pattern p) {
  switch (p) {
    case Pattern::kPersistent: return "persistent";
    case Pattern::kPeriodic: return "periodic";
    case Pattern::kIntermittent: return "intermittent";
    case Pattern::kJobWide: return "job_wide";
    case Pattern::kJitter: return "jitter";
    case Pattern::kHost: return "host";
    case Pattern::kBlock: return "block";
    case Pattern::kScattered: return "scattered";
    case Pattern::kSwitchGroup: return "switch_group";
    case Pattern::kPortCounters: return "port_counters";
    case Pattern::kOnsetAtEnd: return "onset_at_end";
  }
  return "persistent";
}

std::string_view SlowdownBandName(SlowdownBand b) {
  switch (b) {
    case SlowdownBand::kNormal: return "normal";
    case SlowdownBand::kSuspect: return "suspect";
    case SlowdownBand::kStraggler: return "straggler";
  }
  return "normal";
}

std::string RankListText(const std::vector<int32_t>& ranks) {
  bool consecutive = ranks.size() >= 3;
  for (size_t i = 1; i < ranks.size() && consecutive; ++i)
    consecutive = ranks[i] == ranks[i - 1] + 1;
  if (consecutive) return fmt::format("{}-{}", ranks.front(), ranks.back());
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i)
    s += fmt::format("{}{}", i ? ", " : "", ranks[i]);
  if (ranks.size() > 8) s += fmt::format(", ... ({} ranks)", ranks.size());
  return s;
}

Finding MakeFinding(FindingCode code, Entity entity) {
  Finding f;
  f.code = code;
  f.severity = Describe(code).severity;
  f.entity = std::move(entity);
  return f;
}

}  // namespace laggard
