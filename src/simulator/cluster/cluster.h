// The cluster simulator's physics: a synchronous data-parallel training job
// on `nodes` x `gpus_per_node` H100 GPUs (one rank per GPU), with faults
// injected, simulated step by step. `laggard simulate` (run_writer.h) turns
// the result into a run directory in the real tools' formats plus
// truth.json. Depends on base only: the truth it records never comes from
// laggard's detectors.
//
// One step of rank r (true clock, ns), the same structure the Kineto writer
// renders (kineto_traces.h, ScheduledStep):
//
//   start  S_r
//   host   unannotated host gap (GC, checkpoint) + data loader (+ stalls)
//   H2D    8 MiB input copy over the GPU's PCIe link
//   GPU    compute segment 0 (forward + first gradient bucket), then for
//          each bucket k: all-reduce k, compute segment k+1; the optimizer
//          after the last all-reduce; loss.item() copies 4 bytes back and
//          the next step starts.
//   all-reduce k arrives on r when its compute before it is done (a_rk),
//          and ends on every rank at max_r a_rk + transfer_k (+ <= 2 us of
//          per-rank skew): victims wait in NCCL, the culprit waits least,
//          and end-to-end step times are equal on all ranks.
//
// Laws and constants (docs/simulator.md lists them with their sources):
//   compute_r,s  = compute_ms x silicon_r x (f_max / f_r(t)) x work_r,s
//                  x (1 + jitter N(0,1)); work > 1 for slow_kernel and the
//                  imbalance faults.
//   SM clock     f = f_max x min(lock, power, thermal), reported (and used)
//                in 15 MHz steps; f_max = 1980 MHz.
//     power      P(f) = P_idle + P_dyn (f/f_max)^3 while computing
//                (90 W + 560 W at f_max); a cap below P(f_max) gives
//                f/f_max = ((cap - P_idle) / P_dyn)^(1/3).
//     thermal    dT/dt = (T_inlet + R_th P_avg - T) / tau, T_inlet = 30 C,
//                R_th = 0.058 C/W (healthy, ~68 C at full load), tau = 45 s;
//                above T_maxop = 87 C the clock falls 4% per C
//                (SW thermal slowdown), HW slowdown is reported above 89 C.
//   transfer_k   = latency + 2(n-1)/n x bytes_k / busbw(s) x (1 + jitter/2 N),
//                latency = 20 us + 2 us x log2(n);
//                busbw = min over nodes of min(intra, inter x congestion);
//                intra = 0.77 x active NVLinks x 26.562 GB/s (370 GB/s with
//                all 18), or half the GPU's PCIe bandwidth through host
//                memory when all its NVLinks are down; inter = G x the
//                slowest rail, a rail = min(NIC rate x 0.92 / 8, PCIe);
//                PCIe Gen5 x16 = 50 GB/s effective, halved per width halving.
//   host         data loader 300 us x jitter; H2D = 8 MiB / (PCIe / 2).
//   clocks       each host reads true time + an offset drawn uniformly from
//                +-max_clock_offset_ms.
//
// Deterministic for a seed: every rank draws its jitter from its own
// splitmix64 stream, faults from streams of their own, so a faulty run and
// its healthy control share every other random number.

#ifndef LAGGARD_SIMULATOR_CLUSTER_CLUSTER_H_
#define LAGGARD_SIMULATOR_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "formats/cause_class.h"
#include "simulator/writers/kineto_traces.h"

namespace laggard::sim {

enum class FaultKind : uint8_t {
  kNone,
  kThermal,                  // cooling fails: the GPU heats above 87 C and throttles
  kPowerCap,                 // `nvidia-smi -pl`: a power limit below the busy draw
  kClocksLocked,             // `nvidia-smi -lgc`: SM clock locked below f_max
  kPcieDowngrade,            // the GPU's PCIe link trained at a lower width
  kNvlinkDown,               // some or all of the GPU's NVLinks inactive
  kSlowKernel,               // software: more GPU work per step, clocks normal
  kNicDegraded,              // an IB port trained at a lower rate (400 -> 200 Gb/s)
  kIbPortDown,               // an IB port down: its rail shares a neighbour's NIC
  kSocketFallback,           // a host's NCCL uses NET/Socket over eth0
  kSharedSwitchCongestion,   // another job's traffic on a leaf switch, periodic
  kHostCpuContention,        // a host's CPUs are oversubscribed: slow data loading
  kDataLoaderStall,          // a rank's data loader stalls every step
  kPeriodicInterference,     // GC pause / checkpoint every `period` steps
  kPipelineStageImbalance,   // one pipeline stage has more layers
  kSequenceLengthImbalance,  // batches of unequal sequence length
};

std::string_view FaultKindName(FaultKind kind);  // "thermal", "nic_degraded", ...
std::optional<FaultKind> ParseFaultKind(std::string_view name);
std::span<const FaultKind> AllFaultKinds();  // every kind but kNone
// The class of cause a fault is (formats/cause_class.h); nullopt for kNone.
std::optional<CauseClass> CauseClassOf(FaultKind kind);
// Its truth.json word: CauseClassName(), "none" for kNone.
std::string_view CauseClassWord(FaultKind kind);
// The severity a fault gets when none is given, and what it means.
double DefaultSeverity(FaultKind kind);

// What a fault acts on. Node and rank numbers are 0-based.
struct FaultTarget {
  enum class Kind : uint8_t {
    kDefault,  // none given: drawn from the seed (a GPU, a host, a NIC, ...)
    kJob,      // every rank ("all")
    kRank,
    kHost,   // every GPU / rank / NIC of one node
    kGpu,    // node + index
    kNic,    // node + index (mlx5_<index>, the rail of GPU <index>)
    kNodes,  // a group of nodes (shared_switch_congestion)
    kStage,  // a pipeline stage
  };
  Kind kind = Kind::kDefault;
  int rank = -1;
  int node = -1;
  int index = -1;
  std::vector<int> nodes;
  int stage = -1;
};

struct Fault {
  FaultKind kind = FaultKind::kNone;
  FaultTarget target;
  std::optional<double> severity;   // nullopt: DefaultSeverity(kind)
  int onset_step = 0;               // first step the cause is present
  std::optional<int> end_step;      // last step it is present (recovered after)
  std::optional<int> period_steps;  // present `duration_steps` steps out of every `period_steps`
  int duration_steps = 1;
  std::string cause;  // periodic_interference: "gc" (default) or "checkpoint"
  std::string spec;   // as the user wrote it, for messages
};

struct ClusterScenario {
  int nodes = 8;
  int gpus_per_node = 8;
  int steps = 200;
  uint64_t seed = 1;
  double compute_ms = 750;           // GPU compute per step at f_max
  double jitter = 0.015;             // relative standard deviation of compute per rank-step
  int collectives_per_step = 4;      // DDP gradient buckets, one all-reduce each
  int64_t bucket_bytes = 4LL << 30;  // bf16 gradients per bucket (the first is 1 MiB, as in DDP)
  int kernels_per_step = 48;         // compute kernels per step in the traces
  double warmup_s = 2;               // extra host time of step 0 (NCCL init, compilation)
  double max_clock_offset_ms = 5;
  int64_t start_time_s = 1'764'000'000;  // 2025-11-24T16:00:00Z, true clock
  int nodes_per_switch = 4;              // leaf switch size in switch-map.csv
  int pipeline_stages = 4;               // pipeline_stage_imbalance: ranks in contiguous stages
  std::vector<Fault> faults;

  int ranks() const { return nodes * gpus_per_node; }
};

// Checks ranges, fills defaults, draws targets left to the seed and forces
// the onset of faults that can only exist from NCCL's initialisation
// (socket_fallback, ib_port_down, nvlink_down) to step 0. Idempotent.
Status ResolveScenario(ClusterScenario* scenario);

// Human-readable target ("node-01:5", "rank 13", "node-04..node-07").
std::string DescribeTarget(const ClusterScenario& sc, const FaultTarget& t);

// ---- physical constants (H100 SXM5 80GB, NDR InfiniBand) ----
inline constexpr double kMaxSmClockMhz = 1980;
inline constexpr double kMemClockMhz = 2619;
inline constexpr double kClockStepMhz = 15;
inline constexpr double kIdlePowerW = 90;
inline constexpr double kDynamicPowerW = 560;
inline constexpr double kDefaultPowerLimitW = 700;
inline constexpr double kMinPowerLimitW = 200;
inline constexpr double kInletTempC = 30;
inline constexpr double kThermalResistanceCPerW = 0.058;
inline constexpr double kThermalTauS = 45;
inline constexpr double kMaxOperatingTempC = 87;  // T.Limit 0: SW thermal slowdown above
inline constexpr double kHwSlowdownTempC = 89;    // T.Limit -2
inline constexpr double kShutdownTempC = 95;      // T.Limit -8
inline constexpr double kThermalClockDropPerC = 0.04;
inline constexpr int kNvlinksPerGpu = 18;
inline constexpr double kNvlinkGBps = 26.562;
inline constexpr double kNvlinkBusEfficiency = 0.77;
inline constexpr double kIbRateGbps = 400;
inline constexpr double kIbEfficiency = 0.92;
inline constexpr double kEthRateGbps = 100;
inline constexpr double kSocketEfficiency = 0.8;
inline constexpr double kPcieGen5x16GBps = 50;
inline constexpr int64_t kInputBytes = 8LL << 20;

// Clock event reason bits as in clocks_event_reasons.active (NVML).
inline constexpr uint16_t kReasonGpuIdle = 0x1;
inline constexpr uint16_t kReasonApplicationsClocks = 0x2;
inline constexpr uint16_t kReasonSwPowerCap = 0x4;
inline constexpr uint16_t kReasonHwSlowdown = 0x8;
inline constexpr uint16_t kReasonSwThermal = 0x20;
inline constexpr uint16_t kReasonHwThermal = 0x40;

// One GPU over one step of its rank: what nvidia-smi would sample then.
struct GpuSample {
  int64_t start_ns = 0;  // step start, true clock
  float temp_c = 0;
  float sm_clock_mhz = 0;
  float power_w = 0;
  float util_pct = 0;       // kernels (compute or NCCL) running
  float sm_active_pct = 0;  // compute kernels running
  float power_limit_w = 0;
  uint16_t reasons = 0;
  uint8_t pcie_gen = 5;
  uint8_t pcie_width = 16;
  float pcie_rx_mbps = 0;
  float pcie_tx_mbps = 0;
};

struct NicState {
  double rate_gbps = kIbRateGbps;
  bool up = true;
};

// A node's devices as they are at the end of the run (what -q, ibstat,
// topo and nccl-tests show).
struct NodeState {
  std::vector<NicState> nics;                           // mlx5_0 .. mlx5_<G-1>, rail i serves GPU i
  std::vector<int> nvlinks_active;                      // per GPU
  std::vector<int> pcie_width;                          // per GPU
  std::vector<double> power_limit_w;                    // per GPU
  std::vector<std::optional<double>> locked_clock_mhz;  // per GPU
  bool socket_fallback = false;
  // The NIC carrying rail i's traffic to other nodes (i itself, or a
  // neighbour when port i is down); empty when NCCL uses sockets or no port
  // is up.
  std::vector<int> rail_nic;
  double intra_busbw_gbps = 0;  // all-reduce bus bandwidth inside the node
  double inter_busbw_gbps = 0;  // all-reduce bus bandwidth through its NICs
};

// What each fault did, measured against the same seed without faults.
struct FaultEffect {
  std::optional<int> effect_onset_step;  // first step the rank(s) it hits were slowed
  double compute_slowdown = 0;           // culprit's compute time / healthy, -1, at the end
  double comm_slowdown = 0;              // collective transfer time / healthy, -1, while active
  double host_stall_s = 0;               // extra host time per affected step
  double step_time_increase = 0;         // job step time / healthy, -1, while active
  // Hardware state the fault produced, for truth.json (NaN: not applicable).
  double temp_c = 0;
  double sm_clock_mhz = 0;
  double power_limit_w = 0;
  double nic_rate_gbps = 0;
  int pcie_width = 0;
  int nvlinks_active = -1;
};

struct SimulateOptions {
  bool record_steps = true;             // step start times (and compute times) of every rank
  bool record_compute = false;          // compute-only step times (step timing "compute")
  bool record_gpus = true;              // GpuSample per GPU and step, node states
  std::optional<int> trace_first_step;  // record ScheduledSteps for this window
  int trace_steps = 0;
  bool measure_effects = true;  // simulate the healthy control too
  int threads = 1;              // the control runs go on threads of their own
};

class ClusterRun {
 public:
  const ClusterScenario& scenario() const { return sc_; }
  int ranks() const { return sc_.ranks(); }
  int steps() const { return sc_.steps; }

  // True-clock start of `step` on `rank`; step == steps() is the end of the
  // last step.
  int64_t step_start_ns(int rank, int step) const {
    return starts_[static_cast<size_t>(step) * static_cast<size_t>(ranks()) +
                   static_cast<size_t>(rank)];
  }
  int64_t step_ns(int rank, int step) const {
    return step_start_ns(rank, step + 1) - step_start_ns(rank, step);
  }
  // Step time without the time spent inside collectives (record_compute).
  int64_t compute_step_ns(int rank, int step) const {
    return compute_[static_cast<size_t>(step) * static_cast<size_t>(ranks()) +
                    static_cast<size_t>(rank)];
  }
  bool has_steps() const { return !starts_.empty(); }

  // Host clock = true clock + offset, per node.
  const std::vector<int64_t>& clock_offsets_ns() const { return clock_offsets_ns_; }

  // GPU samples: [node][gpu][step]; empty without record_gpus.
  const GpuSample& gpu_sample(int node, int gpu, int step) const {
    return gpu_samples_[(static_cast<size_t>(node) * static_cast<size_t>(sc_.gpus_per_node) +
                         static_cast<size_t>(gpu)) *
                            static_cast<size_t>(sc_.steps) +
                        static_cast<size_t>(step)];
  }
  bool has_gpus() const { return !gpu_samples_.empty(); }
  const std::vector<NodeState>& node_states() const { return node_states_; }
  const std::vector<std::string>& gpu_uuids() const { return uuids_; }  // [node * G + gpu]
  // Job bus bandwidth of one all-reduce between the given nodes at the end
  // of the run (nccl-tests), GB/s.
  double BusBandwidthGBps(std::span<const int> nodes, bool single_node) const;

  std::optional<int> trace_first_step() const { return trace_first_; }
  int trace_steps() const { return trace_steps_; }
  const ScheduledStep& scheduled(int rank, int window_step) const {
    return schedule_[static_cast<size_t>(window_step) * static_cast<size_t>(ranks()) +
                     static_cast<size_t>(rank)];
  }

  // Mean step time (rank 0, after step 0) with and without the faults.
  double mean_step_s() const { return mean_step_s_; }
  double healthy_mean_step_s() const { return healthy_mean_step_s_; }
  // Per step (rank 0), with the faults and without them; empty when effects
  // were not measured. What a fault cost over any steps is read from these.
  const std::vector<double>& step_s() const { return step_s_; }
  const std::vector<double>& healthy_step_s() const { return healthy_step_s_; }
  const std::vector<FaultEffect>& effects() const { return effects_; }  // per scenario fault
  // Nodes of each leaf switch, in switch-map.csv order ("leaf-00", ...).
  const std::vector<std::vector<int>>& switches() const { return switches_; }

 private:
  friend class Simulator;
  explicit ClusterRun(const ClusterScenario& sc) : sc_(sc) {}

  ClusterScenario sc_;
  std::vector<int64_t> starts_;
  std::vector<int64_t> compute_;
  std::vector<int64_t> clock_offsets_ns_;
  std::vector<GpuSample> gpu_samples_;
  std::vector<NodeState> node_states_;
  std::vector<std::string> uuids_;
  std::optional<int> trace_first_;
  int trace_steps_ = 0;
  std::vector<ScheduledStep> schedule_;
  double mean_step_s_ = 0;
  double healthy_mean_step_s_ = 0;
  std::vector<double> step_s_, healthy_step_s_;
  std::vector<FaultEffect> effects_;
  std::vector<std::vector<int>> switches_;
};

// Simulates a resolved scenario (ResolveScenario first).
StatusOr<ClusterRun> SimulateCluster(const ClusterScenario& scenario,
                                     const SimulateOptions& options);

// Whether fault `f` is present at `step`.
bool FaultActive(const Fault& f, int step);

// Ranks a fault slows directly (its culprits), hosts, GPUs and NICs.
struct FaultEntities {
  std::vector<int> ranks;
  std::vector<int> nodes;
  std::vector<std::pair<int, int>> gpus;  // (node, gpu)
  std::vector<std::pair<int, int>> nics;  // (node, nic)
  std::optional<int> switch_index;
  bool job_wide = false;
};
FaultEntities EntitiesOf(const ClusterScenario& sc, const Fault& f);

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_CLUSTER_CLUSTER_H_
