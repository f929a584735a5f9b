// Scenario resolution: the catalogue of fault kinds, target descriptions and
// ResolveScenario() (cluster.h), which checks a scenario, draws the targets
// left to the seed and fills every default, before the simulation starts.

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "simulator/cluster/cluster.h"
#include "simulator/cluster/sim_internal.h"
#include "simulator/writers/step_logs.h"

namespace laggard::sim {
namespace {

using internal::IsGpuKind;
using internal::IsNicKind;

constexpr int kMaxGpusPerNode = 16;
constexpr int kMaxRanks = 1 << 20;

struct KindInfo {
  FaultKind kind;
  const char* name;
  std::optional<CauseClass> cause_class;  // nullopt: no fault
  double default_severity;
};

constexpr KindInfo kKinds[] = {
    {FaultKind::kNone, "none", std::nullopt, 0},
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

// "fault '<spec>': <why>", naming the fault as the user wrote it.
Status FaultError(const Fault& f, std::string_view why) {
  std::string what = f.spec.empty() ? std::string(FaultKindName(f.kind)) : f.spec;
  return Status::Error(fmt::format("fault '{}': {}", what, why));
}

// Ranges of the job's size and shape; clamps the pipeline to the ranks.
Status ResolveShape(ClusterScenario& sc) {
  if (sc.nodes < 1 || sc.gpus_per_node < 1 || sc.gpus_per_node > kMaxGpusPerNode || sc.steps < 1) {
    return Status::Error(
        fmt::format("need nodes >= 1, 1 <= gpus per node <= {}, steps >= 1", kMaxGpusPerNode));
  }
  if (static_cast<int64_t>(sc.nodes) * sc.gpus_per_node > kMaxRanks) {
    return Status::Error(fmt::format("at most {} ranks", kMaxRanks));
  }
  if (static_cast<int64_t>(sc.ranks()) * (sc.steps + 1) > (int64_t{1} << 31)) {
    return Status::Error("ranks x steps must stay below 2^31");
  }
  if (!(sc.compute_ms > 0 && sc.compute_ms < 1e6) || !(sc.jitter >= 0 && sc.jitter < 0.5) ||
      !(sc.warmup_s >= 0 && sc.warmup_s < 1e4) ||
      !(sc.max_clock_offset_ms >= 0 && sc.max_clock_offset_ms < 1e6)) {
    return Status::Error(
        "compute_ms in (0, 1e6), jitter in [0, 0.5), warmup_s and clock offsets non-negative");
  }
  if (sc.collectives_per_step < 1 || sc.collectives_per_step > 64 || sc.bucket_bytes < 1 ||
      sc.kernels_per_step < sc.collectives_per_step + 2) {
    return Status::Error(
        "1..64 collectives per step, positive bucket bytes, kernels per step >= collectives + 2");
  }
  bool pipeline_fault = std::any_of(sc.faults.begin(), sc.faults.end(), [](const Fault& f) {
    return f.kind == FaultKind::kPipelineStageImbalance;
  });
  if (sc.nodes_per_switch < 1 || sc.pipeline_stages < 1 ||
      (pipeline_fault && sc.pipeline_stages > sc.ranks())) {
    return Status::Error(
        "nodes per switch must be >= 1 and pipeline stages between 1 and the number of ranks");
  }
  sc.pipeline_stages = std::min(sc.pipeline_stages, sc.ranks());
  return Status::Ok();
}

// A default target drawn from the seed's stream for fault `index`: a GPU,
// a NIC, a host, a leaf switch's nodes, a rank, a stage or the whole job.
void DrawDefaultTarget(const ClusterScenario& sc, size_t index, Fault& f) {
  FaultTarget& t = f.target;
  Rng pick(internal::Seed(sc.seed, internal::kTargetTag, index));
  auto rand_int = [&](int n) { return static_cast<int>(pick.Next() % static_cast<uint64_t>(n)); };
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
    for (int n = s * sc.nodes_per_switch; n < std::min(sc.nodes, (s + 1) * sc.nodes_per_switch);
         ++n) {
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

// Every rank, node, index and stage the target names exists.
Status CheckTargetRange(const ClusterScenario& sc, const Fault& f) {
  const FaultTarget& t = f.target;
  if (t.kind == FaultTarget::Kind::kRank && (t.rank < 0 || t.rank >= sc.ranks())) {
    return FaultError(f, fmt::format("rank {} is not in 0..{}", t.rank, sc.ranks() - 1));
  }
  if ((t.kind == FaultTarget::Kind::kHost || t.kind == FaultTarget::Kind::kGpu ||
       t.kind == FaultTarget::Kind::kNic) &&
      (t.node < 0 || t.node >= sc.nodes)) {
    return FaultError(f, fmt::format("node {} is not in 0..{}", t.node, sc.nodes - 1));
  }
  if ((t.kind == FaultTarget::Kind::kGpu || t.kind == FaultTarget::Kind::kNic) &&
      (t.index < 0 || t.index >= sc.gpus_per_node)) {
    return FaultError(f, fmt::format("index {} is not in 0..{}", t.index, sc.gpus_per_node - 1));
  }
  for (int n : t.nodes) {
    if (n < 0 || n >= sc.nodes)
      return FaultError(f, fmt::format("node {} is not in 0..{}", n, sc.nodes - 1));
  }
  if (t.kind == FaultTarget::Kind::kStage && (t.stage < 0 || t.stage >= sc.pipeline_stages)) {
    return FaultError(f, fmt::format("stage {} is not in 0..{}", t.stage, sc.pipeline_stages - 1));
  }
  return Status::Ok();
}

// Converts a target to the kind the fault acts on: a rank to its GPU or
// NIC, a GPU to the NIC of its rail (and back), a rank or device to its
// host, a host to a switch group of one, a GPU to its rank.
void ConvertTarget(const ClusterScenario& sc, Fault& f) {
  FaultTarget& t = f.target;
  if (t.kind == FaultTarget::Kind::kRank && (IsGpuKind(f.kind) || IsNicKind(f.kind))) {
    t.kind = IsGpuKind(f.kind) ? FaultTarget::Kind::kGpu : FaultTarget::Kind::kNic;
    t.node = t.rank / sc.gpus_per_node;
    t.index = t.rank % sc.gpus_per_node;
  }
  if (t.kind == FaultTarget::Kind::kGpu && IsNicKind(f.kind)) t.kind = FaultTarget::Kind::kNic;
  if (t.kind == FaultTarget::Kind::kNic && IsGpuKind(f.kind)) t.kind = FaultTarget::Kind::kGpu;
  if ((t.kind == FaultTarget::Kind::kRank || t.kind == FaultTarget::Kind::kGpu ||
       t.kind == FaultTarget::Kind::kNic) &&
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
       f.kind == FaultKind::kSequenceLengthImbalance ||
       f.kind == FaultKind::kPipelineStageImbalance)) {
    t.kind = FaultTarget::Kind::kRank;
    t.rank = t.node * sc.gpus_per_node + t.index;
  }
}

// What each kind accepts as a target; a switch group's nodes sorted, once each.
Status CheckTargetKind(const ClusterScenario& sc, Fault& f) {
  FaultTarget& t = f.target;
  using K = FaultTarget::Kind;
  auto allowed = [&](std::initializer_list<K> kinds) {
    return std::find(kinds.begin(), kinds.end(), t.kind) != kinds.end();
  };
  bool ok = true;
  if (IsGpuKind(f.kind)) ok = allowed({K::kGpu, K::kHost, K::kJob});
  else if (f.kind == FaultKind::kNicDegraded) ok = allowed({K::kNic, K::kHost});
  else if (f.kind == FaultKind::kIbPortDown) ok = allowed({K::kNic});
  else if (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kHostCpuContention)
    ok = allowed({K::kHost});
  else if (f.kind == FaultKind::kSharedSwitchCongestion) ok = allowed({K::kNodes});
  else if (f.kind == FaultKind::kPipelineStageImbalance) ok = allowed({K::kStage, K::kRank});
  else ok = allowed({K::kRank, K::kHost, K::kJob});
  if (!ok)
    return FaultError(
        f, fmt::format("{} cannot target {}", FaultKindName(f.kind), DescribeTarget(sc, t)));
  if (f.kind == FaultKind::kIbPortDown && sc.gpus_per_node < 2) {
    return FaultError(f, "ib_port_down needs a second NIC on the node to fall back to");
  }
  if (f.kind == FaultKind::kSharedSwitchCongestion) {
    std::sort(t.nodes.begin(), t.nodes.end());
    t.nodes.erase(std::unique(t.nodes.begin(), t.nodes.end()), t.nodes.end());
    if (t.nodes.empty()) return FaultError(f, "needs at least one node");
  }
  return Status::Ok();
}

// The severity, defaulted and within what the kind's law can produce.
Status ResolveSeverity(Fault& f) {
  double s = f.severity.value_or(DefaultSeverity(f.kind));
  if (!(s > 0) || !std::isfinite(s)) return FaultError(f, "severity must be positive");
  switch (f.kind) {
    case FaultKind::kThermal:
    case FaultKind::kClocksLocked:
      if (s > 1)
        return FaultError(f, "severity (compute slowdown) must be at most 1.0 (half the clock)");
      break;
    case FaultKind::kPowerCap:
      if (internal::PowerCapFor(s) <= kMinPowerLimitW && s > 0.75) {
        return FaultError(f, "severity needs a power limit below the 200 W minimum; at most 0.75");
      }
      break;
    case FaultKind::kPcieDowngrade:
    case FaultKind::kNicDegraded:
    case FaultKind::kSharedSwitchCongestion:
      if (s >= 1) return FaultError(f, "severity (share of bandwidth lost) must be below 1");
      break;
    case FaultKind::kNvlinkDown:
      if (s > 1) return FaultError(f, "severity (share of NVLinks down) must be at most 1");
      break;
    default:
      if (s > 100) return FaultError(f, "severity must be at most 100");
      break;
  }
  f.severity = s;
  return Status::Ok();
}

// Onset, end and period; faults fixed when NCCL initialises start at step 0,
// periodic kinds get their default period (and a gc or checkpoint cause).
Status ResolveTiming(const ClusterScenario& sc, Fault& f) {
  if (f.kind == FaultKind::kSocketFallback || f.kind == FaultKind::kIbPortDown ||
      f.kind == FaultKind::kNvlinkDown) {
    f.onset_step = 0;  // chosen when NCCL initialises; a link lost mid-run would abort the job
    f.end_step.reset();
    f.period_steps.reset();
  }
  if (f.onset_step < 0 || (f.end_step && *f.end_step < f.onset_step)) {
    return FaultError(f, "onset must be >= 0 and <= end");
  }
  if (f.onset_step >= sc.steps) {
    return FaultError(
        f, fmt::format("onset step {} is after the last step ({})", f.onset_step, sc.steps - 1));
  }
  if (f.kind == FaultKind::kPeriodicInterference && !f.period_steps) f.period_steps = 50;
  if (f.kind == FaultKind::kSharedSwitchCongestion && !f.period_steps) {
    f.period_steps = 40;
    if (f.duration_steps <= 1) f.duration_steps = 10;
  }
  if (f.period_steps &&
      (*f.period_steps < 1 || f.duration_steps < 1 || f.duration_steps > *f.period_steps)) {
    return FaultError(f, "period must be >= 1 and 1 <= duration <= period");
  }
  if (f.kind == FaultKind::kPeriodicInterference && f.cause.empty()) {
    f.cause = f.target.kind == FaultTarget::Kind::kJob ? "checkpoint" : "gc";
  }
  if (f.kind == FaultKind::kPeriodicInterference && f.cause != "gc" && f.cause != "checkpoint") {
    return FaultError(f, "cause must be gc or checkpoint");
  }
  return Status::Ok();
}

// Fault `index` of the scenario, resolved in place.
Status ResolveFault(const ClusterScenario& sc, size_t index, Fault& f) {
  if (f.kind == FaultKind::kNone) {
    if (f.target.kind != FaultTarget::Kind::kDefault && f.target.kind != FaultTarget::Kind::kJob) {
      return FaultError(f, "'none' takes no target");
    }
    return Status::Ok();
  }
  if (f.target.kind == FaultTarget::Kind::kDefault) DrawDefaultTarget(sc, index, f);
  if (Status st = CheckTargetRange(sc, f); !st.ok()) return st;
  ConvertTarget(sc, f);
  if (Status st = CheckTargetKind(sc, f); !st.ok()) return st;
  if (Status st = ResolveSeverity(f); !st.ok()) return st;
  return ResolveTiming(sc, f);
}

// Nodes in two congestion groups cannot share one switch each.
Status CheckCongestionGroups(const ClusterScenario& sc) {
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

std::optional<CauseClass> CauseClassOf(FaultKind kind) { return Info(kind).cause_class; }

std::string_view CauseClassWord(FaultKind kind) {
  std::optional<CauseClass> c = CauseClassOf(kind);
  return c ? CauseClassName(*c) : "none";
}
double DefaultSeverity(FaultKind kind) { return Info(kind).default_severity; }

bool FaultActive(const Fault& f, int step) {
  if (f.kind == FaultKind::kNone || step < f.onset_step || (f.end_step && step > *f.end_step))
    return false;
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
      if (contiguous && t.nodes.size() > 2)
        return fmt::format("{}..{}", names.front(), names.back());
      return fmt::format("{}", fmt::join(names, "+"));
    }
  }
  (void)sc;
  return "";
}

Status ResolveScenario(ClusterScenario* scp) {
  ClusterScenario& sc = *scp;
  if (Status st = ResolveShape(sc); !st.ok()) return st;
  for (size_t i = 0; i < sc.faults.size(); ++i) {
    if (Status st = ResolveFault(sc, i, sc.faults[i]); !st.ok()) return st;
  }
  return CheckCongestionGroups(sc);
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
    case FaultTarget::Kind::kJob: e.job_wide = f.kind != FaultKind::kNone; break;
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

}  // namespace laggard::sim
