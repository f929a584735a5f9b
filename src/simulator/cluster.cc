#include "simulator/cluster.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "simulator/rng.h"
#include "simulator/step_logs.h"

namespace laggard::sim {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int kMaxGpusPerNode = 16;
constexpr int kMaxRanks = 1 << 20;

struct KindInfo {
  FaultKind kind;
  const char* name;
  CauseClass cause_class;
  double default_severity;
};

constexpr KindInfo kKinds[] = {
    {FaultKind::kNone, "none", CauseClass::kNone, 0},
    {FaultKind::kThermal, "thermal", CauseClass::kComputeSlow, 0.25},
    {FaultKind::kPowerCap, "power_cap", CauseClass::kComputeSlow, 0.2},
    {FaultKind::kClocksLocked, "clocks_locked", CauseClass::kComputeSlow, 0.2},
    {FaultKind::kPcieDowngrade, "pcie_downgrade", CauseClass::kCommunication, 0.5},
    {FaultKind::kNvlinkDown, "nvlink_down", CauseClass::kCommunication, 1.0},
    {FaultKind::kSlowKernel, "slow_kernel", CauseClass::kComputeSlow, 0.2},
    {FaultKind::kNicDegraded, "nic_degraded", CauseClass::kCommunication, 0.5},
    {FaultKind::kIbPortDown, "ib_port_down", CauseClass::kCommunication, 1.0},
    {FaultKind::kSocketFallback, "socket_fallback", CauseClass::kCommunication, 1.0},
    {FaultKind::kSharedSwitchCongestion, "shared_switch_congestion", CauseClass::kExternal, 0.5},
    {FaultKind::kHostCpuContention, "host_cpu_contention", CauseClass::kHostStall, 0.2},
    {FaultKind::kDataLoaderStall, "data_loader_stall", CauseClass::kHostStall, 0.2},
    {FaultKind::kPeriodicInterference, "periodic_interference", CauseClass::kHostStall, 1.0},
    {FaultKind::kPipelineStageImbalance, "pipeline_stage_imbalance", CauseClass::kImbalance, 0.2},
    {FaultKind::kSequenceLengthImbalance, "sequence_length_imbalance", CauseClass::kImbalance, 0.2},
};

const KindInfo& Info(FaultKind k) { return kKinds[static_cast<size_t>(k)]; }

bool IsGpuKind(FaultKind k) {
  return k == FaultKind::kThermal || k == FaultKind::kPowerCap || k == FaultKind::kClocksLocked ||
         k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown || k == FaultKind::kSlowKernel;
}
bool IsNicKind(FaultKind k) { return k == FaultKind::kNicDegraded || k == FaultKind::kIbPortDown; }

// Random streams: one per purpose and key, independent of each other.
enum StreamTag : uint64_t {
  kRankTag = 11, kJobTag = 12, kGpuTag = 13, kClockTag = 14, kFaultTag = 15, kTargetTag = 16,
};
uint64_t Seed(uint64_t seed, StreamTag tag, uint64_t a, uint64_t b = 0) {
  uint64_t h = Rng(seed ^ (tag * 0xd1b54a32d192ed03ull)).Next() ^ (a * 0x9e3779b97f4a7c15ull);
  h = Rng(h).Next() ^ (b * 0xc2b2ae3d27d4eb4full);
  return Rng(h).Next();
}

// Highest real InfiniBand rate (4X NDR 400, 2X NDR / 4X HDR 200, 1X NDR /
// 4X EDR 100, 1X HDR 50, 1X EDR 25) not above rate x (1 - severity), and
// at least one step below 400.
double DegradedIbRate(double severity) {
  constexpr double kRates[] = {200, 100, 50, 25};
  double want = kIbRateGbps * (1 - severity) + 1e-9;
  for (double r : kRates) {
    if (r <= want) return r;
  }
  return kRates[std::size(kRates) - 1];
}

// PCIe width after losing `severity` of the bandwidth: x16 halves per step.
int DowngradedWidth(double severity) {
  int halvings = std::clamp(static_cast<int>(std::lround(std::log2(1 / std::max(1e-9, 1 - severity)))), 1, 4);
  return 16 >> halvings;
}

double QuantizeClock(double mhz) {
  return std::max(kClockStepMhz, std::floor(mhz / kClockStepMhz + 1e-9) * kClockStepMhz);
}

// The cap (W, 5 W steps) that holds a busy GPU at 1/(1+s) of f_max.
double PowerCapFor(double severity) {
  double r = 1 / (1 + severity);
  double cap = kIdlePowerW + kDynamicPowerW * r * r * r;
  return std::max(kMinPowerLimitW, std::round(cap / 5) * 5);
}

double LockedClockFor(double severity) { return QuantizeClock(kMaxSmClockMhz / (1 + severity)); }

// Thermal resistance that settles a busy GPU where the thermal law holds
// it at 1/(1+s) of f_max.
double FaultyThermalResistance(double severity, double p_dyn) {
  double r = 1 / (1 + severity);
  double t_eq = std::min(kShutdownTempC - 0.5, kMaxOperatingTempC + (1 - r) / kThermalClockDropPerC);
  double p_eq = kIdlePowerW + p_dyn * r * r * r * 0.97;
  return (t_eq - kInletTempC) / p_eq;
}

double ThermalClockRatio(double temp_c) {
  if (temp_c <= kMaxOperatingTempC) return 1;
  return std::max(0.3, 1 - kThermalClockDropPerC * (temp_c - kMaxOperatingTempC));
}

std::string Uuid(int node, int gpu) {
  Rng r(0x5eedf00dULL ^ (static_cast<uint64_t>(node) << 20) ^ static_cast<uint64_t>(gpu));
  uint64_t a = r.Next(), b = r.Next();
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", static_cast<uint32_t>(a >> 32),
                     static_cast<uint32_t>((a >> 16) & 0xffff), static_cast<uint32_t>(a & 0xffff),
                     static_cast<uint32_t>(b >> 48), b & 0xffffffffffffull);
}

}  // namespace

std::string_view FaultKindName(FaultKind kind) { return Info(kind).name; }

std::optional<FaultKind> ParseFaultKind(std::string_view name) {
  for (const KindInfo& k : kKinds) {
    if (name == k.name) return k.kind;
  }
  if (name == "gc_pause" || name == "checkpoint_stall") return FaultKind::kPeriodicInterference;
  if (name == "data_loader") return FaultKind::kDataLoaderStall;
  return std::nullopt;
}

std::span<const FaultKind> AllFaultKinds() {
  static const std::vector<FaultKind> kAll = [] {
    std::vector<FaultKind> v;
    for (const KindInfo& k : kKinds) {
      if (k.kind != FaultKind::kNone) v.push_back(k.kind);
    }
    return v;
  }();
  return kAll;
}

std::string_view CauseClassName(CauseClass c) {
  switch (c) {
    case CauseClass::kNone: return "none";
    case CauseClass::kComputeSlow: return "compute_slow";
    case CauseClass::kCommunication: return "communication";
    case CauseClass::kHostStall: return "host_stall";
    case CauseClass::kExternal: return "external";
    case CauseClass::kImbalance: return "imbalance";
  }
  return "none";
}

CauseClass CauseClassOf(FaultKind kind) { return Info(kind).cause_class; }
double DefaultSeverity(FaultKind kind) { return Info(kind).default_severity; }

bool FaultActive(const Fault& f, int step) {
  if (f.kind == FaultKind::kNone || step < f.onset_step || (f.end_step && step > *f.end_step)) return false;
  if (!f.period_steps) return true;
  return (step - f.onset_step) % *f.period_steps < f.duration_steps;
}

std::string DescribeTarget(const ClusterScenario& sc, const FaultTarget& t) {
  switch (t.kind) {
    case FaultTarget::Kind::kDefault: return "default";
    case FaultTarget::Kind::kJob: return "all";
    case FaultTarget::Kind::kRank: return fmt::format("rank{}", t.rank);
    case FaultTarget::Kind::kHost: return HostName(t.node);
    case FaultTarget::Kind::kGpu: return fmt::format("{}:{}", HostName(t.node), t.index);
    case FaultTarget::Kind::kNic: return fmt::format("{}:mlx5_{}", HostName(t.node), t.index);
    case FaultTarget::Kind::kStage: return fmt::format("stage{}", t.stage);
    case FaultTarget::Kind::kNodes: {
      std::vector<std::string> names;
      bool contiguous = true;
      for (size_t i = 0; i < t.nodes.size(); ++i) {
        names.push_back(HostName(t.nodes[i]));
        if (i > 0 && t.nodes[i] != t.nodes[i - 1] + 1) contiguous = false;
      }
      if (contiguous && t.nodes.size() > 2) return fmt::format("{}..{}", names.front(), names.back());
      return fmt::format("{}", fmt::join(names, "+"));
    }
  }
  (void)sc;
  return "";
}

Status ResolveScenario(ClusterScenario* scp) {
  ClusterScenario& sc = *scp;
  if (sc.nodes < 1 || sc.gpus_per_node < 1 || sc.gpus_per_node > kMaxGpusPerNode || sc.steps < 1) {
    return Status::Error(fmt::format("need nodes >= 1, 1 <= gpus per node <= {}, steps >= 1",
                                     kMaxGpusPerNode));
  }
  if (static_cast<int64_t>(sc.nodes) * sc.gpus_per_node > kMaxRanks) {
    return Status::Error(fmt::format("at most {} ranks", kMaxRanks));
  }
  if (static_cast<int64_t>(sc.ranks()) * (sc.steps + 1) > (int64_t{1} << 31)) {
    return Status::Error("ranks x steps must stay below 2^31");
  }
  if (!(sc.compute_ms > 0 && sc.compute_ms < 1e6) || !(sc.jitter >= 0 && sc.jitter < 0.5) ||
      !(sc.warmup_s >= 0 && sc.warmup_s < 1e4) || !(sc.max_clock_offset_ms >= 0 && sc.max_clock_offset_ms < 1e6)) {
    return Status::Error("compute_ms in (0, 1e6), jitter in [0, 0.5), warmup_s and clock offsets non-negative");
  }
  if (sc.collectives_per_step < 1 || sc.collectives_per_step > 64 || sc.bucket_bytes < 1 ||
      sc.kernels_per_step < sc.collectives_per_step + 2) {
    return Status::Error("1..64 collectives per step, positive bucket bytes, kernels per step >= collectives + 2");
  }
  bool pipeline_fault = std::any_of(sc.faults.begin(), sc.faults.end(),
                                    [](const Fault& f) { return f.kind == FaultKind::kPipelineStageImbalance; });
  if (sc.nodes_per_switch < 1 || sc.pipeline_stages < 1 || (pipeline_fault && sc.pipeline_stages > sc.ranks())) {
    return Status::Error("nodes per switch must be >= 1 and pipeline stages between 1 and the number of ranks");
  }
  sc.pipeline_stages = std::min(sc.pipeline_stages, sc.ranks());
  for (size_t i = 0; i < sc.faults.size(); ++i) {
    Fault& f = sc.faults[i];
    FaultTarget& t = f.target;
    std::string what = f.spec.empty() ? std::string(FaultKindName(f.kind)) : f.spec;
    auto fail = [&](std::string_view why) { return Status::Error(fmt::format("fault '{}': {}", what, why)); };
    if (f.kind == FaultKind::kNone) {
      if (t.kind != FaultTarget::Kind::kDefault && t.kind != FaultTarget::Kind::kJob) {
        return fail("'none' takes no target");
      }
      continue;
    }
    Rng pick(Seed(sc.seed, kTargetTag, i));
    auto rand_int = [&](int n) { return static_cast<int>(pick.Next() % static_cast<uint64_t>(n)); };
    // Default targets, drawn from the seed.
    if (t.kind == FaultTarget::Kind::kDefault) {
      if (IsGpuKind(f.kind)) {
        t.kind = FaultTarget::Kind::kGpu;
        t.node = rand_int(sc.nodes);
        t.index = rand_int(sc.gpus_per_node);
      } else if (IsNicKind(f.kind)) {
        t.kind = FaultTarget::Kind::kNic;
        t.node = rand_int(sc.nodes);
        t.index = rand_int(sc.gpus_per_node);
      } else if (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kHostCpuContention) {
        t.kind = FaultTarget::Kind::kHost;
        t.node = rand_int(sc.nodes);
      } else if (f.kind == FaultKind::kSharedSwitchCongestion) {
        int switches = (sc.nodes + sc.nodes_per_switch - 1) / sc.nodes_per_switch;
        int s = rand_int(switches);
        t.kind = FaultTarget::Kind::kNodes;
        for (int n = s * sc.nodes_per_switch; n < std::min(sc.nodes, (s + 1) * sc.nodes_per_switch); ++n) {
          t.nodes.push_back(n);
        }
      } else if (f.kind == FaultKind::kDataLoaderStall || f.kind == FaultKind::kPeriodicInterference) {
        t.kind = FaultTarget::Kind::kRank;
        t.rank = rand_int(sc.ranks());
      } else if (f.kind == FaultKind::kPipelineStageImbalance) {
        t.kind = FaultTarget::Kind::kStage;
        t.stage = rand_int(sc.pipeline_stages);
      } else {
        t.kind = FaultTarget::Kind::kJob;
      }
    }
    // Range checks and conversions between target kinds.
    if (t.kind == FaultTarget::Kind::kRank && (t.rank < 0 || t.rank >= sc.ranks())) {
      return fail(fmt::format("rank {} is not in 0..{}", t.rank, sc.ranks() - 1));
    }
    if ((t.kind == FaultTarget::Kind::kHost || t.kind == FaultTarget::Kind::kGpu || t.kind == FaultTarget::Kind::kNic) &&
        (t.node < 0 || t.node >= sc.nodes)) {
      return fail(fmt::format("node {} is not in 0..{}", t.node, sc.nodes - 1));
    }
    if ((t.kind == FaultTarget::Kind::kGpu || t.kind == FaultTarget::Kind::kNic) &&
        (t.index < 0 || t.index >= sc.gpus_per_node)) {
      return fail(fmt::format("index {} is not in 0..{}", t.index, sc.gpus_per_node - 1));
    }
    for (int n : t.nodes) {
      if (n < 0 || n >= sc.nodes) return fail(fmt::format("node {} is not in 0..{}", n, sc.nodes - 1));
    }
    if (t.kind == FaultTarget::Kind::kStage && (t.stage < 0 || t.stage >= sc.pipeline_stages)) {
      return fail(fmt::format("stage {} is not in 0..{}", t.stage, sc.pipeline_stages - 1));
    }
    if (t.kind == FaultTarget::Kind::kRank && (IsGpuKind(f.kind) || IsNicKind(f.kind))) {
      t.kind = IsGpuKind(f.kind) ? FaultTarget::Kind::kGpu : FaultTarget::Kind::kNic;
      t.node = t.rank / sc.gpus_per_node;
      t.index = t.rank % sc.gpus_per_node;
    }
    if (t.kind == FaultTarget::Kind::kGpu && IsNicKind(f.kind)) t.kind = FaultTarget::Kind::kNic;
    if (t.kind == FaultTarget::Kind::kNic && IsGpuKind(f.kind)) t.kind = FaultTarget::Kind::kGpu;
    if ((t.kind == FaultTarget::Kind::kRank || t.kind == FaultTarget::Kind::kGpu || t.kind == FaultTarget::Kind::kNic) &&
        (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kHostCpuContention)) {
      if (t.kind == FaultTarget::Kind::kRank) t.node = t.rank / sc.gpus_per_node;
      t.kind = FaultTarget::Kind::kHost;
    }
    if (t.kind == FaultTarget::Kind::kHost && f.kind == FaultKind::kSharedSwitchCongestion) {
      t.kind = FaultTarget::Kind::kNodes;
      t.nodes = {t.node};
    }
    if (t.kind == FaultTarget::Kind::kGpu &&
        (f.kind == FaultKind::kDataLoaderStall || f.kind == FaultKind::kPeriodicInterference ||
         f.kind == FaultKind::kSequenceLengthImbalance || f.kind == FaultKind::kPipelineStageImbalance)) {
      t.kind = FaultTarget::Kind::kRank;
      t.rank = t.node * sc.gpus_per_node + t.index;
    }
    // What each kind accepts.
    using K = FaultTarget::Kind;
    auto allowed = [&](std::initializer_list<K> kinds) {
      return std::find(kinds.begin(), kinds.end(), t.kind) != kinds.end();
    };
    bool ok = true;
    if (IsGpuKind(f.kind)) ok = allowed({K::kGpu, K::kHost, K::kJob});
    else if (f.kind == FaultKind::kNicDegraded) ok = allowed({K::kNic, K::kHost});
    else if (f.kind == FaultKind::kIbPortDown) ok = allowed({K::kNic});
    else if (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kHostCpuContention) ok = allowed({K::kHost});
    else if (f.kind == FaultKind::kSharedSwitchCongestion) ok = allowed({K::kNodes});
    else if (f.kind == FaultKind::kPipelineStageImbalance) ok = allowed({K::kStage, K::kRank});
    else ok = allowed({K::kRank, K::kHost, K::kJob});
    if (!ok) return fail(fmt::format("{} cannot target {}", FaultKindName(f.kind), DescribeTarget(sc, t)));
    if (f.kind == FaultKind::kIbPortDown && sc.gpus_per_node < 2) {
      return fail("ib_port_down needs a second NIC on the node to fall back to");
    }
    if (f.kind == FaultKind::kSharedSwitchCongestion) {
      std::sort(t.nodes.begin(), t.nodes.end());
      t.nodes.erase(std::unique(t.nodes.begin(), t.nodes.end()), t.nodes.end());
      if (t.nodes.empty()) return fail("needs at least one node");
    }
    // Severity.
    double s = f.severity.value_or(DefaultSeverity(f.kind));
    if (!(s > 0) || !std::isfinite(s)) return fail("severity must be positive");
    switch (f.kind) {
      case FaultKind::kThermal:
      case FaultKind::kClocksLocked:
        if (s > 1) return fail("severity (compute slowdown) must be at most 1.0 (half the clock)");
        break;
      case FaultKind::kPowerCap:
        if (PowerCapFor(s) <= kMinPowerLimitW && s > 0.75) {
          return fail("severity needs a power limit below the 200 W minimum; at most 0.75");
        }
        break;
      case FaultKind::kPcieDowngrade:
      case FaultKind::kNicDegraded:
      case FaultKind::kSharedSwitchCongestion:
        if (s >= 1) return fail("severity (share of bandwidth lost) must be below 1");
        break;
      case FaultKind::kNvlinkDown:
        if (s > 1) return fail("severity (share of NVLinks down) must be at most 1");
        break;
      default:
        if (s > 100) return fail("severity must be at most 100");
        break;
    }
    f.severity = s;
    // Timing.
    if (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kIbPortDown || f.kind == FaultKind::kNvlinkDown) {
      f.onset_step = 0;  // chosen when NCCL initialises; a link lost mid-run would abort the job
      f.end_step.reset();
      f.period_steps.reset();
    }
    if (f.onset_step < 0 || (f.end_step && *f.end_step < f.onset_step)) return fail("onset must be >= 0 and <= end");
    if (f.onset_step >= sc.steps) {
      return fail(fmt::format("onset step {} is after the last step ({})", f.onset_step, sc.steps - 1));
    }
    if (f.kind == FaultKind::kPeriodicInterference && !f.period_steps) f.period_steps = 50;
    if (f.kind == FaultKind::kSharedSwitchCongestion && !f.period_steps) {
      f.period_steps = 40;
      if (f.duration_steps <= 1) f.duration_steps = 10;
    }
    if (f.period_steps && (*f.period_steps < 1 || f.duration_steps < 1 || f.duration_steps > *f.period_steps)) {
      return fail("period must be >= 1 and 1 <= duration <= period");
    }
    if (f.kind == FaultKind::kPeriodicInterference && f.cause.empty()) {
      f.cause = t.kind == FaultTarget::Kind::kJob ? "checkpoint" : "gc";
    }
    if (f.kind == FaultKind::kPeriodicInterference && f.cause != "gc" && f.cause != "checkpoint") {
      return fail("cause must be gc or checkpoint");
    }
  }
  // Nodes in two congestion groups cannot share one switch each.
  std::vector<int> group_of(static_cast<size_t>(sc.nodes), -1);
  for (size_t i = 0; i < sc.faults.size(); ++i) {
    if (sc.faults[i].kind != FaultKind::kSharedSwitchCongestion) continue;
    for (int n : sc.faults[i].target.nodes) {
      int& g = group_of[static_cast<size_t>(n)];
      if (g >= 0 && sc.faults[static_cast<size_t>(g)].target.nodes != sc.faults[i].target.nodes) {
        return Status::Error(fmt::format("fault '{}': {} is already on another congested switch",
                                         sc.faults[i].spec, HostName(n)));
      }
      g = static_cast<int>(i);
    }
  }
  return Status::Ok();
}

FaultEntities EntitiesOf(const ClusterScenario& sc, const Fault& f) {
  FaultEntities e;
  const FaultTarget& t = f.target;
  int g = sc.gpus_per_node;
  auto add_node = [&](int n) {
    if (std::find(e.nodes.begin(), e.nodes.end(), n) == e.nodes.end()) e.nodes.push_back(n);
  };
  switch (t.kind) {
    case FaultTarget::Kind::kDefault:
    case FaultTarget::Kind::kJob:
      e.job_wide = f.kind != FaultKind::kNone;
      break;
    case FaultTarget::Kind::kRank:
      e.ranks.push_back(t.rank);
      add_node(t.rank / g);
      e.gpus.emplace_back(t.rank / g, t.rank % g);
      break;
    case FaultTarget::Kind::kGpu:
      e.ranks.push_back(t.node * g + t.index);
      add_node(t.node);
      e.gpus.emplace_back(t.node, t.index);
      break;
    case FaultTarget::Kind::kNic:
      add_node(t.node);
      e.nics.emplace_back(t.node, t.index);
      break;
    case FaultTarget::Kind::kHost:
      add_node(t.node);
      if (IsNicKind(f.kind)) {
        for (int i = 0; i < g; ++i) e.nics.emplace_back(t.node, i);
      } else if (f.kind != FaultKind::kSocketFallback) {
        for (int i = 0; i < g; ++i) {
          e.ranks.push_back(t.node * g + i);
          if (IsGpuKind(f.kind)) e.gpus.emplace_back(t.node, i);
        }
      }
      break;
    case FaultTarget::Kind::kNodes:
      for (int n : t.nodes) add_node(n);
      break;
    case FaultTarget::Kind::kStage: {
      int64_t r0 = static_cast<int64_t>(t.stage) * sc.ranks() / sc.pipeline_stages;
      int64_t r1 = static_cast<int64_t>(t.stage + 1) * sc.ranks() / sc.pipeline_stages;
      for (int64_t r = r0; r < r1; ++r) {
        e.ranks.push_back(static_cast<int>(r));
        add_node(static_cast<int>(r) / g);
      }
      break;
    }
  }
  return e;
}

// ---- the simulation ----

class Simulator {
 public:
  Simulator(const ClusterScenario& sc, const SimulateOptions& opt) : sc_(sc), opt_(opt), run_(sc) {}

  StatusOr<ClusterRun> Run();

 private:
  // Per-GPU constants drawn from the seed: no two GPUs are identical.
  struct GpuConst {
    double silicon = 1;    // compute time factor (~0.3% spread)
    double r_th = kThermalResistanceCPerW;
    double p_dyn = kDynamicPowerW;
  };

  // One fault, prepared for the step loop.
  struct ActiveFault {
    const Fault* f = nullptr;
    size_t index = 0;  // in the scenario's faults
    size_t slot = 0;   // in faults_
    double severity = 0;
    FaultEntities ent;
    std::vector<int> ranks;  // ranks whose own GPU, work or host time it changes
  };

  struct Pass {
    std::vector<char> enabled;  // per faults_ slot: whether the fault acts in this pass
    bool record = false;
    std::vector<double> step_s;        // rank 0 step time per step
    std::vector<double> transfer_ns;   // sum of transfer times per step
    std::vector<std::vector<double>> culprit_compute;  // per fault: compute ns of its first rank
    std::vector<std::vector<double>> culprit_host;     // per fault: host ns of its first rank
  };

  using Mask = std::vector<char>;  // per faults_ slot
  // Whether fault `a` acts at `step` in a pass with mask `on`.
  static bool Active(const ActiveFault& a, int step, const Mask& on) { return on[a.slot] && FaultActive(*a.f, step); }
  void Prepare();
  void SimulatePass(Pass& pass);
  // Network: bandwidths of each node given the faults active at `step`.
  void NodeBandwidths(int step, const Mask& on, std::vector<double>& intra, std::vector<double>& inter,
                      std::vector<NodeState>* states) const;
  double JobBusBw(const std::vector<double>& intra, const std::vector<double>& inter, int step, const Mask& on) const;
  double CongestionFactor(int node, int step, const Mask& on) const;
  int PcieWidth(int node, int gpu, int step, const Mask& on) const;
  void FillNodeStates();
  // `alone[i]`: a pass with only fault slot i (empty when there is one fault).
  void MeasureEffects(const Pass& faulty, const Pass& healthy, const std::vector<Pass>& alone);

  const ClusterScenario& sc_;
  const SimulateOptions& opt_;
  ClusterRun run_;
  int ranks_ = 0;
  int g_ = 0;
  std::vector<GpuConst> gpus_;  // [rank]
  std::vector<ActiveFault> faults_;
  std::vector<double> shares_;
  std::vector<int64_t> bytes_;
  std::vector<int> tracked_;     // ranks whose GPU clock and temperature are simulated
  std::vector<int> track_slot_;  // rank -> index in tracked_, or -1
};

void Simulator::Prepare() {
  ranks_ = sc_.ranks();
  g_ = sc_.gpus_per_node;
  gpus_.resize(static_cast<size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    Rng rng(Seed(sc_.seed, kGpuTag, static_cast<uint64_t>(r)));
    GpuConst& c = gpus_[static_cast<size_t>(r)];
    c.silicon = 1 + 0.003 * std::clamp(rng.Normal(), -3.0, 3.0);
    c.r_th = kThermalResistanceCPerW * (1 + 0.04 * std::clamp(rng.Normal(), -3.0, 3.0));
    c.p_dyn = kDynamicPowerW * (1 + 0.02 * std::clamp(rng.Normal(), -3.0, 3.0));
  }
  for (size_t i = 0; i < sc_.faults.size(); ++i) {
    const Fault& f = sc_.faults[i];
    if (f.kind == FaultKind::kNone) continue;
    ActiveFault a;
    a.f = &f;
    a.index = i;
    a.slot = faults_.size();
    a.severity = f.severity.value_or(DefaultSeverity(f.kind));
    a.ent = EntitiesOf(sc_, f);
    a.ranks = a.ent.ranks;
    if (a.ent.job_wide) {
      a.ranks.resize(static_cast<size_t>(ranks_));
      for (int r = 0; r < ranks_; ++r) a.ranks[static_cast<size_t>(r)] = r;
    }
    faults_.push_back(std::move(a));
  }
  TraceScenario ts;
  ts.collectives_per_step = sc_.collectives_per_step;
  ts.kernels_per_step = sc_.kernels_per_step;
  ts.bucket_bytes = sc_.bucket_bytes;
  shares_ = ComputeSegmentShares(ts);
  for (int k = 0; k < sc_.collectives_per_step; ++k) bytes_.push_back(CollectiveBytes(ts, k));
  run_.shares_ = shares_;

  track_slot_.assign(static_cast<size_t>(ranks_), -1);
  auto track = [&](int r) {
    if (track_slot_[static_cast<size_t>(r)] >= 0) return;
    track_slot_[static_cast<size_t>(r)] = static_cast<int>(tracked_.size());
    tracked_.push_back(r);
  };
  if (opt_.record_gpus) {
    for (int r = 0; r < ranks_; ++r) track(r);
  } else {
    for (const ActiveFault& a : faults_) {
      if (a.f->kind == FaultKind::kThermal || a.f->kind == FaultKind::kPowerCap ||
          a.f->kind == FaultKind::kClocksLocked) {
        for (int r : a.ranks) track(r);
      }
    }
  }

  // Clock offsets per node.
  Rng clock(Seed(sc_.seed, kClockTag, 0));
  run_.clock_offsets_ns_.resize(static_cast<size_t>(sc_.nodes));
  for (int64_t& o : run_.clock_offsets_ns_) {
    o = std::llround((2 * clock.Uniform() - 1) * sc_.max_clock_offset_ms * kMs);
  }
  for (int n = 0; n < sc_.nodes; ++n) {
    for (int i = 0; i < g_; ++i) run_.uuids_.push_back(Uuid(n, i));
  }

  // Leaf switches: congested groups first, then the rest in blocks.
  std::vector<int> sw(static_cast<size_t>(sc_.nodes), -1);
  std::vector<std::vector<int>> switches;
  for (const ActiveFault& a : faults_) {
    if (a.f->kind != FaultKind::kSharedSwitchCongestion) continue;
    if (sw[static_cast<size_t>(a.f->target.nodes.front())] >= 0) continue;
    for (int n : a.f->target.nodes) sw[static_cast<size_t>(n)] = static_cast<int>(switches.size());
    switches.push_back(a.f->target.nodes);
  }
  for (int n = 0; n < sc_.nodes; ++n) {
    if (sw[static_cast<size_t>(n)] >= 0) continue;
    if (switches.empty() || switches.back().size() >= static_cast<size_t>(sc_.nodes_per_switch) ||
        std::any_of(faults_.begin(), faults_.end(), [&](const ActiveFault& a) {
          return a.f->kind == FaultKind::kSharedSwitchCongestion && a.f->target.nodes == switches.back();
        })) {
      switches.emplace_back();
    }
    sw[static_cast<size_t>(n)] = static_cast<int>(switches.size()) - 1;
    switches.back().push_back(n);
  }
  std::stable_sort(switches.begin(), switches.end(),
                   [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
  run_.switches_ = switches;
}

int Simulator::PcieWidth(int node, int gpu, int step, const Mask& on) const {
  int width = 16;
  for (const ActiveFault& a : faults_) {
    if (a.f->kind != FaultKind::kPcieDowngrade || !Active(a, step, on)) continue;
    for (auto [n, i] : a.ent.gpus) {
      if (n == node && i == gpu) width = std::min(width, DowngradedWidth(a.severity));
    }
  }
  return width;
}

double Simulator::CongestionFactor(int node, int step, const Mask& on) const {
  double f = 1;
  for (const ActiveFault& a : faults_) {
    if (a.f->kind != FaultKind::kSharedSwitchCongestion || !Active(a, step, on)) continue;
    if (std::find(a.ent.nodes.begin(), a.ent.nodes.end(), node) != a.ent.nodes.end()) f *= 1 - a.severity;
  }
  return f;
}

void Simulator::NodeBandwidths(int step, const Mask& on, std::vector<double>& intra, std::vector<double>& inter,
                               std::vector<NodeState>* states) const {
  int nodes = sc_.nodes;
  intra.assign(static_cast<size_t>(nodes), std::numeric_limits<double>::infinity());
  inter.assign(static_cast<size_t>(nodes), std::numeric_limits<double>::infinity());
  // Only nodes with a network fault differ from the healthy value.
  std::vector<char> touched(static_cast<size_t>(nodes), 0);
  {
    for (const ActiveFault& a : faults_) {
      FaultKind k = a.f->kind;
      if ((k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown || k == FaultKind::kNicDegraded ||
           k == FaultKind::kIbPortDown || k == FaultKind::kSocketFallback) && Active(a, step, on)) {
        for (int n : a.ent.nodes) touched[static_cast<size_t>(n)] = 1;
      }
    }
  }
  auto compute_node = [&](int n, NodeState* st) {
    std::vector<double> rate(static_cast<size_t>(g_), kIbRateGbps);
    std::vector<char> up(static_cast<size_t>(g_), 1);
    std::vector<int> links(static_cast<size_t>(g_), kNvlinksPerGpu);
    std::vector<int> width(static_cast<size_t>(g_), 16);
    bool socket = false;
    if (touched[static_cast<size_t>(n)]) {
      for (const ActiveFault& a : faults_) {
        if (!Active(a, step, on)) continue;
        switch (a.f->kind) {
          case FaultKind::kNicDegraded:
            for (auto [nn, i] : a.ent.nics) {
              if (nn == n) rate[static_cast<size_t>(i)] = std::min(rate[static_cast<size_t>(i)], DegradedIbRate(a.severity));
            }
            break;
          case FaultKind::kIbPortDown:
            for (auto [nn, i] : a.ent.nics) {
              if (nn == n) up[static_cast<size_t>(i)] = 0;
            }
            break;
          case FaultKind::kNvlinkDown:
            for (auto [nn, i] : a.ent.gpus) {
              if (nn == n) {
                int down = std::clamp(static_cast<int>(std::lround(a.severity * kNvlinksPerGpu)), 1, kNvlinksPerGpu);
                links[static_cast<size_t>(i)] = std::min(links[static_cast<size_t>(i)], kNvlinksPerGpu - down);
              }
            }
            break;
          case FaultKind::kPcieDowngrade:
            for (auto [nn, i] : a.ent.gpus) {
              if (nn == n) width[static_cast<size_t>(i)] = std::min(width[static_cast<size_t>(i)], DowngradedWidth(a.severity));
            }
            break;
          case FaultKind::kSocketFallback:
            if (a.f->target.node == n) socket = true;
            break;
          default:
            break;
        }
      }
    }
    // Inside the node: the slowest GPU's NVLink share, or PCIe through host memory.
    double in = std::numeric_limits<double>::infinity();
    if (g_ > 1) {
      for (int i = 0; i < g_; ++i) {
        double pcie = kPcieGen5x16GBps * width[static_cast<size_t>(i)] / 16.0;
        double bw = links[static_cast<size_t>(i)] > 0
                        ? kNvlinkBusEfficiency * links[static_cast<size_t>(i)] * kNvlinkGBps
                        : 0.5 * pcie;
        in = std::min(in, bw);
      }
    }
    // Through the NICs: G rails, each as fast as its NIC and its GPU's PCIe
    // link; a rail whose port is down shares the neighbouring NIC.
    double out;
    std::vector<int> load(static_cast<size_t>(g_), 0);
    if (st) st->rail_nic.clear();
    bool any_up = false;
    for (int i = 0; i < g_; ++i) any_up = any_up || up[static_cast<size_t>(i)];
    if (socket || !any_up) {
      out = kEthRateGbps * kSocketEfficiency / 8;
    } else {
      for (int i = 0; i < g_; ++i) {
        int nic = i;
        for (int d = 0; d < g_ && !up[static_cast<size_t>(nic)]; ++d) nic = (i ^ 1) < g_ && d == 0 ? (i ^ 1) : (i + d + 1) % g_;
        ++load[static_cast<size_t>(nic)];
        if (st) st->rail_nic.push_back(nic);
      }
      double slowest = std::numeric_limits<double>::infinity();
      for (int i = 0; i < g_; ++i) {
        if (load[static_cast<size_t>(i)] == 0) continue;
        double pcie = kPcieGen5x16GBps * width[static_cast<size_t>(i)] / 16.0;
        double rail = std::min(rate[static_cast<size_t>(i)] * kIbEfficiency / 8, pcie);
        slowest = std::min(slowest, rail / load[static_cast<size_t>(i)]);
      }
      out = g_ * slowest;
    }
    intra[static_cast<size_t>(n)] = in;
    inter[static_cast<size_t>(n)] = out;
    if (st) {
      st->nics.resize(static_cast<size_t>(g_));
      for (int i = 0; i < g_; ++i) {
        st->nics[static_cast<size_t>(i)].rate_gbps = rate[static_cast<size_t>(i)];
        st->nics[static_cast<size_t>(i)].up = up[static_cast<size_t>(i)];
      }
      st->nvlinks_active = links;
      st->pcie_width = width;
      st->socket_fallback = socket;
      st->intra_busbw_gbps = in;
      st->inter_busbw_gbps = out;
    }
  };
  // Healthy nodes share one value.
  double healthy_in = 0, healthy_out = 0;
  bool have_healthy = false;
  for (int n = 0; n < nodes; ++n) {
    NodeState* st = states ? &(*states)[static_cast<size_t>(n)] : nullptr;
    if (!touched[static_cast<size_t>(n)] && have_healthy && !st) {
      intra[static_cast<size_t>(n)] = healthy_in;
      inter[static_cast<size_t>(n)] = healthy_out;
      continue;
    }
    compute_node(n, st);
    if (!touched[static_cast<size_t>(n)]) {
      healthy_in = intra[static_cast<size_t>(n)];
      healthy_out = inter[static_cast<size_t>(n)];
      have_healthy = true;
    }
  }
}

double Simulator::JobBusBw(const std::vector<double>& intra, const std::vector<double>& inter, int step,
                           const Mask& on) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int n = 0; n < sc_.nodes; ++n) {
    double b = intra[static_cast<size_t>(n)];
    if (sc_.nodes > 1) b = std::min(b, inter[static_cast<size_t>(n)] * CongestionFactor(n, step, on));
    bw = std::min(bw, b);
  }
  return bw;
}

double ClusterRun::BusBandwidthGBps(std::span<const int> nodes, bool single_node) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int n : nodes) {
    const NodeState& st = node_states_[static_cast<size_t>(n)];
    bw = std::min(bw, st.intra_busbw_gbps);
    if (!single_node) {
      double cong = 1;
      for (const Fault& f : sc_.faults) {
        if (f.kind == FaultKind::kSharedSwitchCongestion && FaultActive(f, sc_.steps) &&
            std::find(f.target.nodes.begin(), f.target.nodes.end(), n) != f.target.nodes.end()) {
          cong *= 1 - f.severity.value_or(DefaultSeverity(f.kind));
        }
      }
      bw = std::min(bw, st.inter_busbw_gbps * cong);
    }
  }
  return std::isfinite(bw) ? bw : kNvlinkBusEfficiency * kNvlinksPerGpu * kNvlinkGBps;
}

void Simulator::SimulatePass(Pass& pass) {
  const int steps = sc_.steps;
  const int K = sc_.collectives_per_step;
  const bool record = pass.record;
  const Mask& on = pass.enabled;
  const bool faults = std::any_of(on.begin(), on.end(), [](char c) { return c != 0; });
  const size_t R = static_cast<size_t>(ranks_);
  if (record && opt_.record_steps) {
    run_.starts_.assign(static_cast<size_t>(steps + 1) * R, 0);
    if (opt_.record_compute) run_.compute_.assign(static_cast<size_t>(steps) * R, 0);
  }
  const size_t tracked = tracked_.size();
  if (record && opt_.record_gpus) run_.gpu_samples_.assign(R * static_cast<size_t>(steps), GpuSample());
  std::optional<int> win = opt_.trace_first_step;
  if (record && win) {
    run_.trace_first_ = win;
    run_.trace_steps_ = opt_.trace_steps;
    run_.schedule_.assign(static_cast<size_t>(opt_.trace_steps) * R, ScheduledStep());
  }
  pass.step_s.assign(static_cast<size_t>(steps), 0);
  pass.transfer_ns.assign(static_cast<size_t>(steps), 0);
  pass.culprit_compute.assign(faults_.size(), std::vector<double>(static_cast<size_t>(steps), 0));
  pass.culprit_host.assign(faults_.size(), std::vector<double>(static_cast<size_t>(steps), 0));

  std::vector<Rng> rngs;
  rngs.reserve(R);
  for (int r = 0; r < ranks_; ++r) rngs.emplace_back(Seed(sc_.seed, kRankTag, static_cast<uint64_t>(r)));
  Rng job(Seed(sc_.seed, kJobTag, 0));

  std::vector<int64_t> start(R), arrival(R), host_ns(R), d2h(R);
  std::vector<double> compute(R), work(R), host_extra(R), gap_extra(R), clock_ratio(R, 1.0);
  std::vector<int64_t> wait(R);
  for (int r = 0; r < ranks_; ++r) {
    Rng first(Seed(sc_.seed, kRankTag, static_cast<uint64_t>(r), 1));
    start[static_cast<size_t>(r)] = sc_.start_time_s * kSec + static_cast<int64_t>(50 * kUs * first.Uniform());
  }
  // GPU thermal state of the tracked GPUs: idle temperature at the start.
  std::vector<double> temp(tracked);
  for (size_t i = 0; i < tracked; ++i) {
    temp[i] = kInletTempC + gpus_[static_cast<size_t>(tracked_[i])].r_th * kIdlePowerW * 0.9;
  }
  std::vector<double> intra, inter;
  std::vector<char> last_net_active;
  double busbw = 0;
  const double n_ranks = ranks_;
  const double ring = n_ranks > 1 ? 2.0 * (n_ranks - 1) / n_ranks : 0;
  const double latency_ns = n_ranks > 1 ? 20 * kUs + 2 * kUs * std::log2(n_ranks) : 0;
  const double compute_ns = sc_.compute_ms * kMs;
  double total_bytes = 0;
  for (int64_t b : bytes_) total_bytes += static_cast<double>(b);

  for (int s = 0; s < steps; ++s) {
    const bool in_window = win && s >= *win && s < *win + opt_.trace_steps;
    // Network bandwidth: recomputed when the set of active network faults changes.
    std::vector<char> net_active;
    for (const ActiveFault& a : faults_) {
      FaultKind k = a.f->kind;
      bool net = k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown || k == FaultKind::kNicDegraded ||
                 k == FaultKind::kIbPortDown || k == FaultKind::kSocketFallback || k == FaultKind::kSharedSwitchCongestion;
      if (net) net_active.push_back(Active(a, s, on));
    }
    if (s == 0 || net_active != last_net_active) {
      NodeBandwidths(s, on, intra, inter, nullptr);
      busbw = JobBusBw(intra, inter, s, on);
      last_net_active = net_active;
    }
    std::vector<int64_t> transfer(static_cast<size_t>(K));
    double transfer_total = 0;
    for (int k = 0; k < K; ++k) {
      double jit = std::max(0.5, 1 + 0.5 * sc_.jitter * job.Normal());
      double wire = n_ranks > 1 && std::isfinite(busbw) ? ring * static_cast<double>(bytes_[static_cast<size_t>(k)]) / busbw : 0;
      transfer[static_cast<size_t>(k)] = std::llround((latency_ns + wire) * jit);
      transfer_total += static_cast<double>(transfer[static_cast<size_t>(k)]);
    }
    pass.transfer_ns[static_cast<size_t>(s)] = transfer_total;

    // Per-rank fault effects on work and host time.
    std::fill(work.begin(), work.end(), 1.0);
    std::fill(host_extra.begin(), host_extra.end(), 0.0);
    std::fill(gap_extra.begin(), gap_extra.end(), 0.0);
    if (faults) {
      for (const ActiveFault& a : faults_) {
        if (!Active(a, s, on)) continue;
        double sev = a.severity;
        switch (a.f->kind) {
          case FaultKind::kSlowKernel:
          case FaultKind::kPipelineStageImbalance:
            for (int r : a.ranks) work[static_cast<size_t>(r)] *= 1 + sev;
            break;
          case FaultKind::kSequenceLengthImbalance:
            for (int r : a.ranks) {
              Rng fr(Seed(sc_.seed, kFaultTag, a.index * 0x10000 + static_cast<uint64_t>(s), static_cast<uint64_t>(r)));
              if (a.ent.job_wide) {
                work[static_cast<size_t>(r)] *= std::exp(sev * fr.Normal() - sev * sev / 2);
              } else {
                work[static_cast<size_t>(r)] *= (1 + sev) * std::exp(0.05 * fr.Normal() - 0.00125);
              }
            }
            break;
          case FaultKind::kHostCpuContention:
            for (int r : a.ranks) {
              Rng fr(Seed(sc_.seed, kFaultTag, a.index * 0x10000 + static_cast<uint64_t>(s), static_cast<uint64_t>(r)));
              host_extra[static_cast<size_t>(r)] += sev * compute_ns * (0.5 + fr.Uniform());
            }
            break;
          case FaultKind::kDataLoaderStall:
            for (int r : a.ranks) {
              Rng fr(Seed(sc_.seed, kFaultTag, a.index * 0x10000 + static_cast<uint64_t>(s), static_cast<uint64_t>(r)));
              host_extra[static_cast<size_t>(r)] += sev * compute_ns * std::max(0.5, 1 + 0.1 * fr.Normal());
            }
            break;
          case FaultKind::kPeriodicInterference:
            for (int r : a.ranks) gap_extra[static_cast<size_t>(r)] += sev * compute_ns;
            break;
          default:
            break;
        }
      }
    }

    // GPU clocks of the tracked GPUs at the start of the step.
    for (size_t i = 0; i < tracked; ++i) {
      int r = tracked_[i];
      double cap = kDefaultPowerLimitW, lock = 1;
      if (faults) {
        for (const ActiveFault& a : faults_) {
          FaultKind k = a.f->kind;
          if ((k != FaultKind::kPowerCap && k != FaultKind::kClocksLocked) || !Active(a, s, on) ||
              std::find(a.ranks.begin(), a.ranks.end(), r) == a.ranks.end()) {
            continue;
          }
          if (k == FaultKind::kPowerCap) cap = std::min(cap, PowerCapFor(a.severity));
          if (k == FaultKind::kClocksLocked) lock = std::min(lock, LockedClockFor(a.severity) / kMaxSmClockMhz);
        }
      }
      const GpuConst& gc = gpus_[static_cast<size_t>(r)];
      double power_ratio = cap < kIdlePowerW + gc.p_dyn ? std::cbrt(std::max(0.01, (cap - kIdlePowerW) / gc.p_dyn)) : 1;
      double thermal_ratio = ThermalClockRatio(temp[i]);
      double mhz = QuantizeClock(kMaxSmClockMhz * std::min({1.0, lock, power_ratio, thermal_ratio}));
      clock_ratio[static_cast<size_t>(r)] = mhz / kMaxSmClockMhz;
      if (record && opt_.record_gpus) {
        GpuSample& gs = run_.gpu_samples_[static_cast<size_t>(r) * static_cast<size_t>(steps) + static_cast<size_t>(s)];
        gs.temp_c = static_cast<float>(temp[i]);
        gs.sm_clock_mhz = static_cast<float>(mhz);
        gs.power_limit_w = static_cast<float>(cap);
        uint16_t reasons = 0;
        if (lock < 1) reasons |= kReasonApplicationsClocks;
        if (power_ratio < 1 && power_ratio <= thermal_ratio) reasons |= kReasonSwPowerCap;
        if (temp[i] > kMaxOperatingTempC) reasons |= kReasonSwThermal;
        if (temp[i] > kHwSlowdownTempC) reasons |= kReasonHwThermal | kReasonHwSlowdown;
        gs.reasons = reasons;
        gs.pcie_width = static_cast<uint8_t>(PcieWidth(r / g_, r % g_, s, on));
      }
    }

    // Phase 1: each rank's host part and compute up to the first collective.
    for (size_t r = 0; r < R; ++r) {
      Rng& rng = rngs[r];
      double jitter = std::max(0.5, 1 + sc_.jitter * rng.Normal());
      double u_dl = rng.Uniform(), u_h2d = rng.Uniform(), u_d2h = rng.Uniform();
      double c = compute_ns * gpus_[r].silicon / clock_ratio[r] * work[r] * jitter;
      compute[r] = c;
      int node = static_cast<int>(r) / g_, gpu = static_cast<int>(r) % g_;
      double pcie = kPcieGen5x16GBps * PcieWidth(node, gpu, s, on) / 16.0;
      int64_t dl = std::llround(300 * kUs * (1 + 1.7 * sc_.jitter * (2 * u_dl - 1)) + host_extra[r]);
      if (s == 0) dl += std::llround(sc_.warmup_s * kSec);
      int64_t gap = std::llround(gap_extra[r]);
      int64_t h2d = std::llround(static_cast<double>(kInputBytes) / (pcie / 2) * (1 + 0.02 * u_h2d));
      d2h[r] = std::llround(1800 * (1 + 0.2 * u_d2h));
      host_ns[r] = gap + dl;
      arrival[r] = start[r] + gap + dl + kHostToCopyNs + h2d + std::llround(c * shares_[0]) + kComputeToNcclNs;
      wait[r] = 0;
      if (record && in_window) {
        ScheduledStep& st = run_.schedule_[static_cast<size_t>(s - *win) * R + r];
        st.start_ns = start[r];
        st.host_gap_ns = gap;
        st.dataloader_ns = dl;
        st.h2d_ns = h2d;
        st.d2h_ns = d2h[r];
        st.arrival_ns.assign(static_cast<size_t>(K), 0);
        st.end_ns.assign(static_cast<size_t>(K), 0);
      }
    }
    // Phase 2: collectives.
    for (int k = 0; k < K; ++k) {
      int64_t last = std::numeric_limits<int64_t>::min();
      for (size_t r = 0; r < R; ++r) last = std::max(last, arrival[r]);
      int64_t end = last + transfer[static_cast<size_t>(k)];
      for (size_t r = 0; r < R; ++r) {
        int64_t my_end = end + static_cast<int64_t>(2 * kUs * rngs[r].Uniform());
        wait[r] += my_end - arrival[r];
        if (record && in_window) {
          ScheduledStep& st = run_.schedule_[static_cast<size_t>(s - *win) * R + r];
          st.arrival_ns[static_cast<size_t>(k)] = arrival[r];
          st.end_ns[static_cast<size_t>(k)] = my_end;
        }
        int64_t next_compute = std::llround(compute[r] * shares_[static_cast<size_t>(k) + 1]);
        arrival[r] = my_end + next_compute + (k + 1 < K ? kComputeToNcclNs : 0);
      }
    }
    // Phase 3: optimizer end, loss.item(), next step; GPU state.
    for (size_t r = 0; r < R; ++r) {
      int64_t opt_end = arrival[r];
      int64_t next = opt_end + kComputeToNcclNs + d2h[r] + kCopyToNextStepNs;
      int64_t dur = next - start[r];
      if (record && in_window) {
        ScheduledStep& st = run_.schedule_[static_cast<size_t>(s - *win) * R + r];
        st.optimizer_end_ns = opt_end;
        st.next_start_ns = next;
      }
      if (record && opt_.record_steps) {
        run_.starts_[static_cast<size_t>(s) * R + r] = start[r];
        if (opt_.record_compute) run_.compute_[static_cast<size_t>(s) * R + r] = dur - wait[r];
      }
      int slot = track_slot_[r];
      if (slot >= 0) {
        // Power and temperature over the step.
        const GpuConst& gc = gpus_[r];
        double ratio = clock_ratio[r];
        double p_busy = kIdlePowerW + gc.p_dyn * ratio * ratio * ratio;
        double p_wait = kIdlePowerW + 0.15 * gc.p_dyn * ratio * ratio * ratio;
        double p_host = 0.9 * kIdlePowerW;
        double d = static_cast<double>(dur);
        double c = std::min(compute[r], d);
        double w = std::min(static_cast<double>(wait[r]), d - c);
        double p_avg = (c * p_busy + w * p_wait + (d - c - w) * p_host) / d;
        double r_th = gc.r_th;
        if (faults) {
          for (const ActiveFault& a : faults_) {
            if (a.f->kind == FaultKind::kThermal && Active(a, s, on) &&
                std::find(a.ranks.begin(), a.ranks.end(), static_cast<int>(r)) != a.ranks.end()) {
              r_th = std::max(r_th, FaultyThermalResistance(a.severity, gc.p_dyn));
            }
          }
        }
        double t_ss = kInletTempC + r_th * p_avg;
        double& t = temp[static_cast<size_t>(slot)];
        if (record && opt_.record_gpus) {
          GpuSample& gs = run_.gpu_samples_[r * static_cast<size_t>(steps) + static_cast<size_t>(s)];
          gs.start_ns = start[r];
          gs.power_w = static_cast<float>(p_avg);
          gs.util_pct = static_cast<float>(100 * (c + w) / d);
          gs.sm_active_pct = static_cast<float>(100 * c / d);
          double inter_bytes = sc_.nodes > 1 ? ring * total_bytes / g_ : 0;
          gs.pcie_rx_mbps = static_cast<float>((static_cast<double>(kInputBytes) + inter_bytes) / d * 1e3);
          gs.pcie_tx_mbps = static_cast<float>(inter_bytes / d * 1e3);
        }
        t = t_ss + (t - t_ss) * std::exp(-d / (kThermalTauS * kSec));
      }
      for (size_t i = 0; i < faults_.size(); ++i) {
        const ActiveFault& a = faults_[i];
        if (a.ranks.empty()) continue;
        size_t cr = static_cast<size_t>(a.ranks.front());
        if (cr == r) {
          pass.culprit_compute[i][static_cast<size_t>(s)] = compute[r];
          pass.culprit_host[i][static_cast<size_t>(s)] = static_cast<double>(host_ns[r]);
        }
      }
      if (r == 0) pass.step_s[static_cast<size_t>(s)] = static_cast<double>(dur) / kSec;
      start[r] = next;
    }
  }
  if (record && opt_.record_steps) {
    for (size_t r = 0; r < R; ++r) run_.starts_[static_cast<size_t>(steps) * R + r] = start[r];
  }
}

void Simulator::FillNodeStates() {
  Mask all(faults_.size(), 1);
  run_.node_states_.assign(static_cast<size_t>(sc_.nodes), NodeState());
  std::vector<double> intra, inter;
  int last = sc_.steps - 1;
  NodeBandwidths(last, all, intra, inter, &run_.node_states_);
  for (int n = 0; n < sc_.nodes; ++n) {
    NodeState& st = run_.node_states_[static_cast<size_t>(n)];
    st.power_limit_w.assign(static_cast<size_t>(g_), kDefaultPowerLimitW);
    st.locked_clock_mhz.assign(static_cast<size_t>(g_), std::nullopt);
  }
  for (const ActiveFault& a : faults_) {
    if (!Active(a, last, all)) continue;
    for (auto [n, i] : a.ent.gpus) {
      NodeState& st = run_.node_states_[static_cast<size_t>(n)];
      if (a.f->kind == FaultKind::kPowerCap) st.power_limit_w[static_cast<size_t>(i)] = PowerCapFor(a.severity);
      if (a.f->kind == FaultKind::kClocksLocked) st.locked_clock_mhz[static_cast<size_t>(i)] = LockedClockFor(a.severity);
    }
  }
}

void Simulator::MeasureEffects(const Pass& all, const Pass& healthy, const std::vector<Pass>& alone) {
  int steps = sc_.steps;
  auto mean = [](const std::vector<double>& v, int from) {
    double sum = 0;
    int n = 0;
    for (size_t i = static_cast<size_t>(std::max(0, from)); i < v.size(); ++i, ++n) sum += v[i];
    return n ? sum / n : 0.0;
  };
  int from = steps > 1 ? 1 : 0;
  run_.mean_step_s_ = mean(all.step_s, from);
  run_.healthy_mean_step_s_ = mean(healthy.step_s, from);
  run_.effects_.assign(sc_.faults.size(), FaultEffect());
  for (size_t i = 0; i < faults_.size(); ++i) {
    const ActiveFault& a = faults_[i];
    FaultEffect& e = run_.effects_[a.index];
    // Each fault's effect is measured with it alone, so combined faults are
    // told apart; the hardware state below is the combined run's.
    const Pass& faulty = alone.empty() ? all : alone[i];
    std::vector<int> active;
    for (int s = from; s < steps; ++s) {
      if (FaultActive(*a.f, s)) active.push_back(s);
    }
    double step_sum = 0, comm_sum = 0;
    for (int s : active) {
      step_sum += faulty.step_s[static_cast<size_t>(s)] / healthy.step_s[static_cast<size_t>(s)] - 1;
      double h = healthy.transfer_ns[static_cast<size_t>(s)];
      comm_sum += h > 0 ? faulty.transfer_ns[static_cast<size_t>(s)] / h - 1 : 0;
    }
    if (!active.empty()) {
      e.step_time_increase = step_sum / static_cast<double>(active.size());
      e.comm_slowdown = comm_sum / static_cast<double>(active.size());
    }
    // The culprit's own compute and host time, at the end of its active steps
    // (thermal throttling takes tens of seconds to settle).
    if (!a.ranks.empty() && !active.empty()) {
      size_t tail = std::max<size_t>(1, std::min<size_t>(20, active.size() / 4 + 1));
      double c_sum = 0, h_sum = 0;
      for (size_t j = active.size() - tail; j < active.size(); ++j) {
        size_t s = static_cast<size_t>(active[j]);
        c_sum += faulty.culprit_compute[i][s] / healthy.culprit_compute[i][s] - 1;
        h_sum += (faulty.culprit_host[i][s] - healthy.culprit_host[i][s]) / kSec;
      }
      e.compute_slowdown = c_sum / static_cast<double>(tail);
      e.host_stall_s = h_sum / static_cast<double>(tail);
    }
    // When the fault first slowed what it hits by more than 1% (or 1 ms of host time).
    for (int s : active) {
      bool hit = false;
      if (!a.ranks.empty()) {
        double c = faulty.culprit_compute[i][static_cast<size_t>(s)] / healthy.culprit_compute[i][static_cast<size_t>(s)] - 1;
        double h = faulty.culprit_host[i][static_cast<size_t>(s)] - healthy.culprit_host[i][static_cast<size_t>(s)];
        hit = std::abs(c) > 0.01 || h > 1e6;
      }
      double ht = healthy.transfer_ns[static_cast<size_t>(s)];
      if (ht > 0 && faulty.transfer_ns[static_cast<size_t>(s)] / ht - 1 > 0.01) hit = true;
      if (hit) {
        e.effect_onset_step = s;
        break;
      }
    }
    if (!e.effect_onset_step && a.f->onset_step == 0 && !active.empty()) {
      // Active from the first step: step 0 has no healthy twin after warm-up.
      double ht = healthy.transfer_ns[0];
      if (ht > 0 && faulty.transfer_ns[0] / ht - 1 > 0.01) e.effect_onset_step = 0;
    }
    // Hardware state at the end.
    e.temp_c = e.sm_clock_mhz = e.power_limit_w = e.nic_rate_gbps = std::numeric_limits<double>::quiet_NaN();
    if (!a.ent.gpus.empty() && run_.has_gpus()) {
      auto [n, gi] = a.ent.gpus.front();
      const GpuSample& gs = run_.gpu_sample(n, gi, steps - 1);
      e.temp_c = gs.temp_c;
      e.sm_clock_mhz = gs.sm_clock_mhz;
      e.power_limit_w = gs.power_limit_w;
      e.pcie_width = gs.pcie_width;
      e.nvlinks_active = run_.node_states_.empty() ? -1 : run_.node_states_[static_cast<size_t>(n)].nvlinks_active[static_cast<size_t>(gi)];
    }
    if (!a.ent.nics.empty() && !run_.node_states_.empty()) {
      auto [n, ni] = a.ent.nics.front();
      const NicState& nic = run_.node_states_[static_cast<size_t>(n)].nics[static_cast<size_t>(ni)];
      e.nic_rate_gbps = nic.up ? nic.rate_gbps : 0;
    }
  }
}

StatusOr<ClusterRun> Simulator::Run() {
  Prepare();
  if (opt_.trace_first_step) {
    if (opt_.trace_steps < 1 || *opt_.trace_first_step < 0 || *opt_.trace_first_step + opt_.trace_steps > sc_.steps) {
      return Status::Error(fmt::format("trace window {}+{} is outside steps 0..{}",
                                       *opt_.trace_first_step, opt_.trace_steps, sc_.steps - 1));
    }
  }
  // The recorded run with every fault, its healthy control and, with
  // several faults, one run per fault alone: independent, so they run on
  // threads of their own.
  Pass faulty;
  faulty.record = true;
  faulty.enabled.assign(faults_.size(), 1);
  std::vector<Pass> extra;
  if (opt_.measure_effects) {
    extra.emplace_back();
    extra.back().enabled.assign(faults_.size(), 0);
    if (faults_.size() > 1) {
      for (size_t i = 0; i < faults_.size(); ++i) {
        extra.emplace_back();
        extra.back().enabled.assign(faults_.size(), 0);
        extra.back().enabled[i] = 1;
      }
    }
  }
  int threads = std::max(1, std::min<int>(opt_.threads, static_cast<int>(extra.size()) + 1));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < extra.size(); i = next++) SimulatePass(extra[i]);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  SimulatePass(faulty);
  work();
  for (std::thread& t : pool) t.join();
  FillNodeStates();
  if (opt_.measure_effects) {
    std::vector<Pass> alone(std::make_move_iterator(extra.begin() + 1), std::make_move_iterator(extra.end()));
    MeasureEffects(faulty, extra.front(), alone);
  } else {
    MeasureEffects(faulty, faulty, {});
  }
  return std::move(run_);
}

StatusOr<ClusterRun> SimulateCluster(const ClusterScenario& scenario, const SimulateOptions& options) {
  ClusterScenario sc = scenario;
  if (Status st = ResolveScenario(&sc); !st.ok()) return st;
  Simulator sim(sc, options);
  return sim.Run();
}

}  // namespace laggard::sim
