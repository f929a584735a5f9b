// The cluster simulator's driver (simulator.h): per-GPU constants, faults
// and leaf switches prepared from the scenario, the passes run (the control
// runs on threads of their own), the node states at the end and what each
// fault did, measured against its healthy control.

#include "simulator/cluster/cluster.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "simulator/cluster/sim_internal.h"
#include "simulator/cluster/simulator.h"
#include "simulator/rng.h"

namespace laggard::sim {
namespace {

using internal::kMs;
using internal::kSec;
using internal::LockedClockFor;
using internal::PowerCapFor;
using internal::Seed;

std::string Uuid(int node, int gpu) {
  Rng r(0x5eedf00dULL ^ (static_cast<uint64_t>(node) << 20) ^ static_cast<uint64_t>(gpu));
  uint64_t a = r.Next(), b = r.Next();
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", static_cast<uint32_t>(a >> 32),
                     static_cast<uint32_t>((a >> 16) & 0xffff), static_cast<uint32_t>(a & 0xffff),
                     static_cast<uint32_t>(b >> 48), b & 0xffffffffffffull);
}

}  // namespace

void Simulator::Prepare() {
  ranks_ = sc_.ranks();
  g_ = sc_.gpus_per_node;
  gpus_.resize(static_cast<size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    Rng rng(Seed(sc_.seed, internal::kGpuTag, static_cast<uint64_t>(r)));
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
  Rng clock(Seed(sc_.seed, internal::kClockTag, 0));
  run_.clock_offsets_ns_.resize(static_cast<size_t>(sc_.nodes));
  for (int64_t& o : run_.clock_offsets_ns_) {
    o = std::llround((2 * clock.Uniform() - 1) * sc_.max_clock_offset_ms * kMs);
  }
  for (int n = 0; n < sc_.nodes; ++n) {
    for (int i = 0; i < g_; ++i) run_.uuids_.push_back(Uuid(n, i));
  }
  PrepareSwitches();
}

// Leaf switches: congested groups first, then the rest in blocks.
void Simulator::PrepareSwitches() {
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
          return a.f->kind == FaultKind::kSharedSwitchCongestion &&
                 a.f->target.nodes == switches.back();
        })) {
      switches.emplace_back();
    }
    sw[static_cast<size_t>(n)] = static_cast<int>(switches.size()) - 1;
    switches.back().push_back(n);
  }
  std::stable_sort(
      switches.begin(), switches.end(),
      [](const std::vector<int>& a, const std::vector<int>& b) { return a.front() < b.front(); });
  run_.switches_ = switches;
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
      if (a.f->kind == FaultKind::kPowerCap)
        st.power_limit_w[static_cast<size_t>(i)] = PowerCapFor(a.severity);
      if (a.f->kind == FaultKind::kClocksLocked)
        st.locked_clock_mhz[static_cast<size_t>(i)] = LockedClockFor(a.severity);
    }
  }
}

void Simulator::MeasureEffects(const Pass& all, const Pass& healthy,
                               const std::vector<Pass>& alone) {
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
  run_.step_s_ = all.step_s;
  run_.healthy_step_s_ = healthy.step_s;
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
      step_sum +=
          faulty.step_s[static_cast<size_t>(s)] / healthy.step_s[static_cast<size_t>(s)] - 1;
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
        double c = faulty.culprit_compute[i][static_cast<size_t>(s)] /
                       healthy.culprit_compute[i][static_cast<size_t>(s)] -
                   1;
        double h = faulty.culprit_host[i][static_cast<size_t>(s)] -
                   healthy.culprit_host[i][static_cast<size_t>(s)];
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
    e.temp_c = e.sm_clock_mhz = e.power_limit_w = e.nic_rate_gbps =
        std::numeric_limits<double>::quiet_NaN();
    if (!a.ent.gpus.empty() && run_.has_gpus()) {
      auto [n, gi] = a.ent.gpus.front();
      const GpuSample& gs = run_.gpu_sample(n, gi, steps - 1);
      e.temp_c = gs.temp_c;
      e.sm_clock_mhz = gs.sm_clock_mhz;
      e.power_limit_w = gs.power_limit_w;
      e.pcie_width = gs.pcie_width;
      e.nvlinks_active =
          run_.node_states_.empty()
              ? -1
              : run_.node_states_[static_cast<size_t>(n)].nvlinks_active[static_cast<size_t>(gi)];
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
    if (opt_.trace_steps < 1 || *opt_.trace_first_step < 0 ||
        *opt_.trace_first_step + opt_.trace_steps > sc_.steps) {
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
    std::vector<Pass> alone(std::make_move_iterator(extra.begin() + 1),
                            std::make_move_iterator(extra.end()));
    MeasureEffects(faulty, extra.front(), alone);
  } else {
    MeasureEffects(faulty, faulty, {});
  }
  return std::move(run_);
}

StatusOr<ClusterRun> SimulateCluster(const ClusterScenario& scenario,
                                     const SimulateOptions& options) {
  ClusterScenario sc = scenario;
  if (Status st = ResolveScenario(&sc); !st.ok()) return st;
  Simulator sim(sc, options);
  return sim.Run();
}

}  // namespace laggard::sim
