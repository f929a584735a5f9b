#include "analysis/common/finding.h"

#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace laggard {
namespace {

using enum FindingCategory;

// Columns: name, severity, title, category, default next step (a template
// for DefaultNextStep()) or, for an informational row, "" and why none.
constexpr FindingInfo kCatalogue[] = {
    {"step.straggler", Severity::kCritical, "rank slower than its peers", kSteps,
     "profile 2 steps on the slow rank and on a healthy rank (torch.profiler / Kineto trace, or "
     "nsys) and compare kernel times with idle gaps; on both nodes at the same time: `nvidia-smi "
     "dmon -s pucvmt -d 1` (temperature, clocks, power, PCIe)"},
    {"step.synchronised", Severity::kWarning,
     "step times are synchronised across ranks: they cannot name the culprit", kSteps,
     "add profiler traces of 2 steps from every rank (or at least a suspect and a healthy rank): "
     "the culprit arrives last at each collective and waits least; or log compute-only step time "
     "(before the gradient all-reduce) on every rank"},
    {"step.job_slowdown", Severity::kWarning, "the whole job slowed down", kSteps,
     "all ranks slowed together: look for a job-wide cause at that time (shared storage or the "
     "data loader, the network of every host, a cluster event); profile one slow step on every "
     "rank to see who arrives last at the collective"},
    {"step.periodic_slowdown", Severity::kWarning, "slowdowns recur periodically", kSteps,
     "profile the next expected slow step on every rank: step {step} (torch.profiler schedule "
     "covering steps {first}-{last}) to see which rank or host stalls"},
    {"step.jitter", Severity::kInfo, "rare slow steps on random ranks", kSteps, "",
     "informational: rare slow steps on random ranks are normal on shared clusters; it says so, so "
     "that nobody chases them"},
    {"step.no_peers", Severity::kWarning, "no peers to compare with", kSteps,
     "log step times on every rank, each line with its rank, step and seconds (e.g. rank 3, step "
     "120, time 0.8123s), or name each file's rank with --rank-from"},
    {"trace.late_arrival", Severity::kCritical, "rank arrives last at the collectives", kTraces,
     "compare rank {rank}'s trace with a healthy rank's around the late collectives: longer "
     "kernels mean the GPU is slow, idle gaps mean it waits for the host"},
    {"trace.compute_slow", Severity::kCritical, "rank's kernels run slower than a healthy peer's",
     kTraces,
     "check the slow rank's GPU against a healthy one at the same time: `nvidia-smi dmon -s pucvmt "
     "-d 1` (temperature, SM clock, power, PCIe; `rocm-smi` on AMD) and throttle reasons in "
     "`nvidia-smi -q -d PERFORMANCE`; on a CPU-only rank, its cores' load, frequency and pinning"},
    {"trace.host_stall", Severity::kCritical,
     "kernels are normal but the rank idles before launching them", kTraces,
     "look at the stalled rank's host: CPU contention (`top -H`, `pidstat -u 1`), data loader "
     "workers and I/O (num_workers, pin_memory, storage throughput), Python GC; compare its CPU "
     "trace with a healthy rank's around the GPU's idle gaps"},
    {"trace.comm_bound", Severity::kWarning, "collective transfers take much of every step",
     kTraces,
     "measure the network: nccl-tests all_reduce_perf between nodes (iperf3 between hosts for gloo "
     "/ MPI over TCP), `ibstat` / `ethtool -S` on every NIC for rate and errors; compare the bus "
     "bandwidth with the fabric's rating"},
    {"trace.clock_offsets", Severity::kInfo, "rank clocks disagree; offsets were removed", kTraces,
     "",
     "informational: the ranks' clock offsets were estimated from collective ends and removed "
     "before matching; nothing to do"},
    {"trace.no_match", Severity::kWarning, "no collective could be matched across ranks", kTraces,
     "profile the same steps on every rank (torch.profiler schedule with the same "
     "wait/warmup/active on all ranks) so collectives can be matched"},
    {"gpu.thermal", Severity::kCritical, "GPU runs hot and its SM clock is pulled down", kGpu,
     "check the GPU's cooling: fans, airflow, blocked intake and room temperature; watch it under "
     "load with `nvidia-smi dmon -s pucvmt -d 1` (`rocm-smi` on AMD) and read the thermal throttle "
     "reasons in `nvidia-smi -q -d PERFORMANCE`"},
    {"gpu.power_cap", Severity::kCritical,
     "GPU power limit is lowered, or draw is pinned at the cap with low clocks", kGpu,
     "compare the GPU's enforced power limit with its default (`nvidia-smi -q -d POWER`; `rocm-smi "
     "--showpower --showmaxpower` on AMD); find what lowered it (`dcgmi config --get`, a job "
     "prolog running `nvidia-smi -pl`, the BMC's power budget) and restore it"},
    {"gpu.clocks_low", Severity::kWarning,
     "GPU's SM clock under load is below its same-model peers'", kGpu,
     "check why the GPU's clocks are low: `nvidia-smi -q -d CLOCK,PERFORMANCE` (locked application "
     "clocks, throttle reasons); unless they were locked on purpose, reset them as root with "
     "`nvidia-smi -rac` and `nvidia-smi -rgc` (`rocm-smi --resetclocks` on AMD); with the node "
     "drained, `dcgmi diag -r 2`"},
    {"gpu.pcie_downgrade", Severity::kWarning,
     "GPU's PCIe link runs below its capability or its peers'", kGpu,
     "compare the GPU's PCIe link under load with its capability: `nvidia-smi -q -d PCI` and "
     "`lspci -vv -s BUS` (LnkSta vs LnkCap); if it stays below, reseat the GPU or replace its "
     "riser / check the slot"},
    {"gpu.nvlink_down", Severity::kWarning, "GPU has fewer active NVLinks than its peers", kGpu,
     "check the GPU's NVLinks against a healthy GPU of the same model: `nvidia-smi nvlink "
     "--status` and `nvidia-smi nvlink -e` (error counters), `nvidia-smi topo -m`; run `dcgmi diag "
     "-r 2`; drain the node if a link stays down"},
    {"gpu.errors", Severity::kWarning, "GPU reports XID / ECC / memory-remapping / diag errors",
     kGpu,
     "check `dmesg | grep -i xid` and `nvidia-smi -q -d ECC,ROW_REMAPPER` (retired pages, "
     "remapped rows) on the host; drain the node and run `dcgmi diag -r 2` (or -r 3, longer); "
     "keep it drained if errors persist"},
    {"gpu.idle_waiting", Severity::kInfo,
     "GPUs look idle because they wait for the culprit: low utilisation is not evidence", kGpu, "",
     "informational: healthy ranks' GPUs idle because they wait for the culprit; low utilisation "
     "is not evidence, and the culprit's own findings carry the next steps"},
    {"net.port_down", Severity::kCritical, "network port is down or its link not detected",
     kNetwork,
     "check the port's cable and switch port: `ibstat` (State, Physical state) and `mlxlink -d "
     "DEVICE -m` on InfiniBand, `ethtool IFACE` and `ip link show IFACE` on Ethernet; reseat or "
     "replace the cable / transceiver"},
    {"net.link_degraded", Severity::kCritical,
     "network link runs below its peers' rate / width / speed", kNetwork,
     "check the link's negotiated rate and width against its peers': `ibstat` (Rate) and `mlxlink "
     "-d DEVICE -m -c` for speed and error counters on InfiniBand, `ethtool IFACE` (Speed) on "
     "Ethernet; "
     "reseat or replace the cable / transceiver"},
    {"net.bandwidth_low", Severity::kCritical, "nccl-tests bus bandwidth far below comparable runs",
     kNetwork,
     "find which hosts the low run used (its command line or launcher log), then check their NICs: "
     "`ibstat` and `ethtool` on each; rerun nccl-tests "
     "(all_reduce_perf -b 1G -e 8G -f 2 -g 1) between one of them and a healthy host to tell the "
     "node from the fabric"},
    {"net.test_errors", Severity::kWarning, "nccl-tests reported wrong results or failures",
     kNetwork,
     "rerun the test with NCCL_DEBUG=INFO and check the hosts' GPUs with `dcgmi diag -r 2`"},
    {"net.socket_fallback", Severity::kCritical,
     "NCCL fell back to TCP sockets where peers use InfiniBand", kNetwork,
     "on the host: check `ibstat` (ports Active?), that the IB verbs libraries are installed, and "
     "NCCL_IB_HCA / NCCL_SOCKET_IFNAME; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"},
    {"net.no_gdr", Severity::kWarning, "NCCL runs without GPU Direct RDMA where peers have it",
     kNetwork,
     "on the host: check that the nvidia-peermem (nv_peer_mem) module is loaded (`lsmod | grep "
     "peermem`) and the PCIe ACS settings; NCCL_DEBUG=INFO shows whether each connection uses "
     "GDRDMA"},
    {"net.poor_path", Severity::kWarning,
     "GPU's nearest NIC is across the CPU interconnect while peers' are on their PCIe switch",
     kNetwork,
     "check `nvidia-smi topo -m` and NCCL's NIC choice (NCCL_DEBUG=INFO, NCCL_IB_HCA); pin the "
     "rank to the GPU next to its NIC"},
    {"net.shared_switch", Severity::kWarning,
     "slow hosts share a switch: likely interference from outside the job", kNetwork,
     "check the switch's other tenants and its port counters (congestion, pause frames, "
     "PortXmitWait with `perfquery`); ask the network team whether another job shares it; rerun "
     "nccl-tests between a slow host and one on another switch"},
    {"step.stage_imbalance", Severity::kWarning,
     "one pipeline stage is uniformly slower than the others: workload imbalance", kSteps,
     "rebalance the pipeline: move layers off the slowest stage (e.g. the output layer / loss of "
     "the last stage, the embedding of the first), or use uneven layer splits"},
    {"net.nic_shared", Severity::kWarning,
     "several GPUs reach the network through one NIC while the host has NICs to spare", kNetwork,
     "check `nvidia-smi topo -m` and which NIC each rank uses (NCCL_DEBUG=INFO \"NET/IB : "
     "Using\"); set NCCL_IB_HCA or fix the PCIe placement so each GPU has its own rail"},
    {"trace.late_group", Severity::kCritical,
     "several ranks arrive late together: one host's ranks, or a block of ranks", kTraces,
     "look at the late ranks' hosts: CPU contention (`top`, `pidstat -u 1`), data loader workers "
     "and I/O, CPU / NUMA affinity; check their GPUs against a healthy one (`nvidia-smi dmon -s "
     "pucvmt -d 1`); ranks of one pipeline stage point at its layer split"},
    {"trace.variable_work", Severity::kWarning,
     "per-step work differs between ranks: a different rank is slowest each step", kTraces,
     "balance the work per rank: bucket or pack sequences by length, pad to fixed shapes, or use a "
     "token-count-balanced sampler; log tokens per rank per step to confirm"},
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
     kSteps, "",
     "informational: the profiled steps ran slower because of the profiler's own cost, which is "
     "left out of the job's slowdowns; nothing to do"},
    {"gpu.power_limit_changed", Severity::kInfo,
     "GPU's enforced power limit changed during the run (nvidia-smi -pl, a power-capping "
     "daemon): an event on the timeline",
     kGpu,
     "find what changes the GPU's power limit at run time: a power-capping daemon, a DCGM policy "
     "(`dcgmi config --get`), a job prolog running `nvidia-smi -pl`, the BMC's power budget (its "
     "event log); harmless while the GPU keeps its peers' clocks"},
    {"pipeline.stage_imbalance", Severity::kWarning,
     "one pipeline stage is slower on every data-parallel replica: the layers are not "
     "partitioned evenly, no worker is faulty",
     kPipeline,
     "rebalance the layers of the slow stage: fewer transformer layers there (an uneven split, "
     "e.g. Megatron's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, or "
     "count the embedding and loss as layers)"},
    {"pipeline.slow_worker", Severity::kCritical,
     "one worker is slower than the other replicas of its pipeline stage", kPipeline,
     "check the slow worker's GPU and host: clocks, temperature and power limit (`nvidia-smi -q -d "
     "PERFORMANCE,CLOCK,TEMPERATURE,POWER`), the PCIe link, other processes on its host"},
    {"pipeline.workload_imbalance", Severity::kWarning,
     "the slowest data-parallel replica changes from step to step: uneven work (sequence "
     "lengths), not a faulty worker",
     kPipeline,
     "balance the work per microbatch: pack sequences to a fixed token count, or sample by length "
     "buckets so that every replica gets similar sequence lengths"},
    {"pipeline.slow_communication", Severity::kWarning,
     "one communication group's transfers hold the step up", kPipeline,
     "run nccl-tests over the ranks of the slow communication group and check their NICs and links "
     "(`ibstat`, `ethtool -S`, NCCL_DEBUG=INFO)"},
    {"pipeline.no_layout", Severity::kWarning,
     "an op timeline without its parallel layout: the what-if replay cannot run", kPipeline,
     "give the layout: --layout dp=D,pp=P,tp=T (ranks in Megatron order, tp fastest)"},
    {"hang.not_joined", Severity::kCritical,
     "ranks never reached the collective the other ranks of their group wait in", kHang,
     "see where the missing rank is: `py-spy dump --pid PID` on its host (every python process of "
     "it); check its GPU (`dmesg | grep -i xid`, `nvidia-smi -q`) and host (CPU, memory, a stalled "
     "data loader or checkpoint write)"},
    {"hang.desync", Severity::kCritical,
     "the ranks of a group are at different collectives, or run different ops under one "
     "sequence number",
     kHang,
     "compare the code paths of the ranks at this collective: a collective under a condition only "
     "some ranks take, or tensors of rank-dependent shape; TORCH_DISTRIBUTED_DEBUG=DETAIL catches "
     "the mismatch at its call"},
    {"hang.stuck_collective", Severity::kCritical,
     "every rank of a group enqueued the collective and none completed it: the GPU or the "
     "network side (NCCL, a link, a GPU error), no rank is missing",
     kHang,
     "on the hosts of ranks {ranks}: `nvidia-smi -q -d ECC,ROW_REMAPPER` and `dmesg | grep -i xid` "
     "for a "
     "GPU error; ibstat and port counters for the links between them; while it hangs, "
     "`ncclras` (NCCL >= 2.24) for the communicator's state"},
    {"hang.transport_error", Severity::kCritical,
     "a network transport error between ranks (NET/IB completion error, gloo connection "
     "closed, ncclRemoteError)",
     kHang,
     "on the host that reported it: `ibv_devinfo` and `ibstat` for the HCA, `dmesg | grep -i "
     "mlx5`, the port counters of the link towards the peer (`perfquery`); rerun with "
     "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"},
    {"hang.process_missing", Severity::kCritical, "a rank's process exited or was killed", kHang,
     "read the exited rank's stderr for the error before it exited (a traceback, an exit code); "
     "exit -9 is a kill (the OOM killer: `dmesg | grep -i oom`), a negative code -N is signal N; "
     "the ranks that timed out only waited for it"},
    {"hang.inconclusive", Severity::kWarning,
     "the job hung, and the evidence given does not tell which rank", kHang,
     "collect Flight Recorder dumps from every rank (TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
     "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_), the "
     "full stderr of every rank, and an `ncclras` snapshot while it hangs (NCCL >= 2.24)"},
    {"hang.rank_stalled", Severity::kCritical,
     "a rank stopped reporting steps while the other ranks, a step ahead, wait for it", kHang,
     "look at the stalled rank while it hangs: `py-spy dump --pid PID` on its host shows where it "
     "stopped; check its GPU (`dmesg | grep -i xid`) and host (`free -g`, `dmesg | grep -i oom`)"},
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
     "synchronize points at its GPU instead: `nvidia-smi -q -d ECC,ROW_REMAPPER`, `dmesg | grep -i "
     "xid`"},
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
     kGpu,
     "watch the GPU under load: two `nvidia-smi -q -d PERFORMANCE` a minute apart give the share "
     "of that minute throttled; for heat check its fans and airflow, for power `nvidia-smi -q -d "
     "POWER` and the supply"},
    {"tool.straggler_report", Severity::kInfo,
     "Megatron's StragglerDetector names a rank slowest (or none) over its reports", kTool,
     "check the rank the report names with evidence of its own: log per-rank step times (rank, "
     "step, time) on every rank, or profile 2 steps of it and of a healthy rank (torch.profiler); "
     "watch its GPU with `nvidia-smi dmon -s pucvmt -d 1`"},
    {"tool.data_loader_slow", Severity::kInfo,
     "Megatron's StragglerDetector shows one rank's get_batch far slower than its peers'", kTool,
     "check the rank's data path: its dataset shard's storage throughput, the DataLoader's "
     "num_workers / prefetch_factor / pin_memory and the workers' CPU cores (`top -H`); `py-spy "
     "dump` a loader worker during a slow get_batch"},
    {"gpu.p2p_bandwidth_low", Severity::kWarning,
     "p2pBandwidthLatencyTest shows one GPU's links slower than its peers' (a test, not the run)",
     kGpu,
     "check the GPU's links against a healthy node of the same model: `nvidia-smi nvlink --status` "
     "(a link down or slower), `nvidia-smi topo -m` (the box's wiring) and `nvidia-smi -q -d ECC`; "
     "rerun p2pBandwidthLatencyTest to confirm"},
    {"tool.nvrx_report", Severity::kInfo,
     "NVRx straggler detection's GPU scores name a rank (or node) slowest, or none", kTool,
     "NVRx scores GPU kernels only: check the named rank's GPU against a peer under load "
     "(`nvidia-smi dmon -s pucvmt -d 1`: clocks, temperature, power) and log per-rank step times "
     "so host, data-loading and network time are compared too"},
    {"net.pair_fabric", Severity::kWarning,
     "node-pair bandwidth tests: pairs slow together though each of their nodes is fast with "
     "another partner (the fabric, not a node)",
     kNetwork,
     "trace the slow pairs' routes (`ibtracert` between their LIDs) and compare the switches they "
     "cross with the fast pairs'; read those switches' port counters (`perfquery` on the switch "
     "ports) for errors and congestion"},
    {"net.pair_slow", Severity::kWarning,
     "node-pair bandwidth tests: a slow pair whose nodes were not tested with others (either "
     "node or the path)",
     kNetwork,
     "test each node of the slow pair with a node that is fast elsewhere (nccl-tests "
     "all_reduce_perf -b 1G -e 8G -f 2 -g 1): a node slow with every partner is the culprit, else "
     "the path between them (`ibtracert`, `perfquery`)"},
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

void AddDefaultNextStep(Finding& f) {
  if (!f.next_steps.empty() || f.severity == Severity::kInfo || f.code >= FindingCode::kCount)
    return;
  std::string_view step = Describe(f.code).next_step;
  if (step.empty() || step.find('{') != std::string_view::npos) return;
  f.next_steps.emplace_back(step);
}

Finding MakeFinding(FindingCode code, Entity entity) {
  Finding f;
  f.code = code;
  f.severity = Describe(code).severity;
  f.entity = std::move(entity);
  return f;
}

}  // namespace laggard
