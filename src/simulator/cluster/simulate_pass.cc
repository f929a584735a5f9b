// One pass of the cluster simulator (simulator.h): every step of every rank,
// in the order cluster.h describes (host, H2D, compute and all-reduces,
// optimizer, loss.item()), with the GPUs' clocks, power and temperature.
//
// The random draws of a step, in order: the job stream once per collective
// (DrawTransfers), fault streams of their own (ApplyRankFaults), then each
// rank's stream: a normal and three uniforms (RunHostAndFirstCompute) and
// one uniform per collective (RunCollectives). Changing that order changes
// every simulated run.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "simulator/cluster/cluster.h"
#include "simulator/cluster/sim_internal.h"
#include "simulator/cluster/simulator.h"
#include "simulator/rng.h"

namespace laggard::sim {

using internal::kMs;
using internal::kSec;
using internal::kUs;
using internal::Seed;

struct Simulator::PassState {
  const Mask* on = nullptr;  // the pass's enabled faults
  bool record = false;       // the recorded pass: writes run_
  bool any_fault = false;    // some fault is enabled in this pass
  bool in_window = false;    // this step is in the trace window
  std::vector<Rng> rngs;     // per rank
  Rng job{0};
  // Per rank: the step's start, the arrival at the next collective (then
  // the optimizer's end), host time, the loss.item() copy, time in NCCL.
  std::vector<int64_t> start, arrival, host_ns, d2h, wait;
  // Per rank: compute time this step, work and host time the faults add,
  // the SM clock as a share of f_max.
  std::vector<double> compute, work, host_extra, gap_extra, clock_ratio;
  std::vector<double> temp_c;        // per tracked GPU
  std::vector<double> intra, inter;  // per node, GB/s
  std::vector<char> last_net_active;
  double busbw_gbps = 0;
  std::vector<int64_t> transfer_ns;  // per collective, this step
  double n_ranks = 0;
  double ring = 0;  // 2(n-1)/n
  double latency_ns = 0;
  double compute_ns = 0;   // compute per step at f_max
  double total_bytes = 0;  // of every collective of a step
};

ScheduledStep& Simulator::Scheduled(int s, size_t rank) {
  return run_
      .schedule_[static_cast<size_t>(s - *opt_.trace_first_step) * static_cast<size_t>(ranks_) +
                 rank];
}

Simulator::PassState Simulator::StartPass(Pass& pass) {
  const int steps = sc_.steps;
  const size_t R = static_cast<size_t>(ranks_);
  PassState st;
  st.on = &pass.enabled;
  st.record = pass.record;
  st.any_fault =
      std::any_of(pass.enabled.begin(), pass.enabled.end(), [](char c) { return c != 0; });
  if (st.record && opt_.record_steps) {
    run_.starts_.assign(static_cast<size_t>(steps + 1) * R, 0);
    if (opt_.record_compute) run_.compute_.assign(static_cast<size_t>(steps) * R, 0);
  }
  if (st.record && opt_.record_gpus)
    run_.gpu_samples_.assign(R * static_cast<size_t>(steps), GpuSample());
  if (st.record && opt_.trace_first_step) {
    run_.trace_first_ = opt_.trace_first_step;
    run_.trace_steps_ = opt_.trace_steps;
    run_.schedule_.assign(static_cast<size_t>(opt_.trace_steps) * R, ScheduledStep());
  }
  pass.step_s.assign(static_cast<size_t>(steps), 0);
  pass.transfer_ns.assign(static_cast<size_t>(steps), 0);
  pass.culprit_compute.assign(faults_.size(), std::vector<double>(static_cast<size_t>(steps), 0));
  pass.culprit_host.assign(faults_.size(), std::vector<double>(static_cast<size_t>(steps), 0));

  st.rngs.reserve(R);
  for (int r = 0; r < ranks_; ++r)
    st.rngs.emplace_back(Seed(sc_.seed, internal::kRankTag, static_cast<uint64_t>(r)));
  st.job = Rng(Seed(sc_.seed, internal::kJobTag, 0));
  for (auto* v : {&st.start, &st.arrival, &st.host_ns, &st.d2h, &st.wait}) v->assign(R, 0);
  for (auto* v : {&st.compute, &st.work, &st.host_extra, &st.gap_extra}) v->assign(R, 0.0);
  st.clock_ratio.assign(R, 1.0);
  for (int r = 0; r < ranks_; ++r) {
    Rng first(Seed(sc_.seed, internal::kRankTag, static_cast<uint64_t>(r), 1));
    st.start[static_cast<size_t>(r)] =
        sc_.start_time_s * kSec + static_cast<int64_t>(50 * kUs * first.Uniform());
  }
  // GPU thermal state of the tracked GPUs: idle temperature at the start.
  st.temp_c.resize(tracked_.size());
  for (size_t i = 0; i < tracked_.size(); ++i) {
    st.temp_c[i] = kInletTempC + gpus_[static_cast<size_t>(tracked_[i])].r_th * kIdlePowerW * 0.9;
  }
  st.transfer_ns.assign(static_cast<size_t>(sc_.collectives_per_step), 0);
  st.n_ranks = ranks_;
  st.ring = st.n_ranks > 1 ? 2.0 * (st.n_ranks - 1) / st.n_ranks : 0;
  st.latency_ns = st.n_ranks > 1 ? 20 * kUs + 2 * kUs * std::log2(st.n_ranks) : 0;
  st.compute_ns = sc_.compute_ms * kMs;
  for (int64_t b : bytes_) st.total_bytes += static_cast<double>(b);
  return st;
}

void Simulator::SimulatePass(Pass& pass) {
  PassState st = StartPass(pass);
  const std::optional<int> win = opt_.trace_first_step;
  for (int s = 0; s < sc_.steps; ++s) {
    st.in_window = win && s >= *win && s < *win + opt_.trace_steps;
    UpdateNetwork(st, s);
    DrawTransfers(pass, st, s);
    ApplyRankFaults(st, s);
    SetGpuClocks(st, s);
    RunHostAndFirstCompute(st, s);
    RunCollectives(st, s);
    FinishStep(pass, st, s);
  }
  if (st.record && opt_.record_steps) {
    const size_t R = static_cast<size_t>(ranks_);
    for (size_t r = 0; r < R; ++r)
      run_.starts_[static_cast<size_t>(sc_.steps) * R + r] = st.start[r];
  }
}

void Simulator::UpdateNetwork(PassState& st, int s) const {
  std::vector<char> net_active;
  for (const ActiveFault& a : faults_) {
    FaultKind k = a.f->kind;
    bool net = k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown ||
               k == FaultKind::kNicDegraded || k == FaultKind::kIbPortDown ||
               k == FaultKind::kSocketFallback || k == FaultKind::kSharedSwitchCongestion;
    if (net) net_active.push_back(Active(a, s, *st.on));
  }
  if (s == 0 || net_active != st.last_net_active) {
    NodeBandwidths(s, *st.on, st.intra, st.inter, nullptr);
    st.busbw_gbps = JobBusBw(st.intra, st.inter, s, *st.on);
    st.last_net_active = net_active;
  }
}

void Simulator::DrawTransfers(Pass& pass, PassState& st, int s) const {
  double transfer_total = 0;
  for (int k = 0; k < sc_.collectives_per_step; ++k) {
    double jit = std::max(0.5, 1 + 0.5 * sc_.jitter * st.job.Normal());
    double wire =
        st.n_ranks > 1 && std::isfinite(st.busbw_gbps)
            ? st.ring * static_cast<double>(bytes_[static_cast<size_t>(k)]) / st.busbw_gbps
            : 0;
    st.transfer_ns[static_cast<size_t>(k)] = std::llround((st.latency_ns + wire) * jit);
    transfer_total += static_cast<double>(st.transfer_ns[static_cast<size_t>(k)]);
  }
  pass.transfer_ns[static_cast<size_t>(s)] = transfer_total;
}

void Simulator::ApplyRankFaults(PassState& st, int s) const {
  std::fill(st.work.begin(), st.work.end(), 1.0);
  std::fill(st.host_extra.begin(), st.host_extra.end(), 0.0);
  std::fill(st.gap_extra.begin(), st.gap_extra.end(), 0.0);
  if (!st.any_fault) return;
  const double compute_ns = st.compute_ns;
  for (const ActiveFault& a : faults_) {
    if (!Active(a, s, *st.on)) continue;
    double sev = a.severity;
    // The fault's own stream for (step, rank).
    auto fault_rng = [&](int r) {
      return Rng(Seed(sc_.seed, internal::kFaultTag, a.index * 0x10000 + static_cast<uint64_t>(s),
                      static_cast<uint64_t>(r)));
    };
    switch (a.f->kind) {
      case FaultKind::kSlowKernel:
      case FaultKind::kPipelineStageImbalance:
        for (int r : a.ranks) st.work[static_cast<size_t>(r)] *= 1 + sev;
        break;
      case FaultKind::kSequenceLengthImbalance:
        for (int r : a.ranks) {
          Rng fr = fault_rng(r);
          if (a.ent.job_wide) {
            st.work[static_cast<size_t>(r)] *= std::exp(sev * fr.Normal() - sev * sev / 2);
          } else {
            st.work[static_cast<size_t>(r)] *= (1 + sev) * std::exp(0.05 * fr.Normal() - 0.00125);
          }
        }
        break;
      case FaultKind::kHostCpuContention:
        for (int r : a.ranks) {
          Rng fr = fault_rng(r);
          st.host_extra[static_cast<size_t>(r)] += sev * compute_ns * (0.5 + fr.Uniform());
        }
        break;
      case FaultKind::kDataLoaderStall:
        for (int r : a.ranks) {
          Rng fr = fault_rng(r);
          st.host_extra[static_cast<size_t>(r)] +=
              sev * compute_ns * std::max(0.5, 1 + 0.1 * fr.Normal());
        }
        break;
      case FaultKind::kPeriodicInterference:
        for (int r : a.ranks) st.gap_extra[static_cast<size_t>(r)] += sev * compute_ns;
        break;
      default: break;
    }
  }
}

void Simulator::SetGpuClocks(PassState& st, int s) {
  const bool record_gpus = st.record && opt_.record_gpus;
  for (size_t i = 0; i < tracked_.size(); ++i) {
    int r = tracked_[i];
    double cap = kDefaultPowerLimitW, lock = 1;
    if (st.any_fault) {
      for (const ActiveFault& a : faults_) {
        FaultKind k = a.f->kind;
        if ((k != FaultKind::kPowerCap && k != FaultKind::kClocksLocked) || !Active(a, s, *st.on) ||
            std::find(a.ranks.begin(), a.ranks.end(), r) == a.ranks.end()) {
          continue;
        }
        if (k == FaultKind::kPowerCap) cap = std::min(cap, internal::PowerCapFor(a.severity));
        if (k == FaultKind::kClocksLocked)
          lock = std::min(lock, internal::LockedClockFor(a.severity) / kMaxSmClockMhz);
      }
    }
    const GpuConst& gc = gpus_[static_cast<size_t>(r)];
    double power_ratio = cap < kIdlePowerW + gc.p_dyn
                             ? std::cbrt(std::max(0.01, (cap - kIdlePowerW) / gc.p_dyn))
                             : 1;
    double thermal_ratio = internal::ThermalClockRatio(st.temp_c[i]);
    double mhz =
        internal::QuantizeClock(kMaxSmClockMhz * std::min({1.0, lock, power_ratio, thermal_ratio}));
    st.clock_ratio[static_cast<size_t>(r)] = mhz / kMaxSmClockMhz;
    if (!record_gpus) continue;
    GpuSample& gs = run_.gpu_samples_[static_cast<size_t>(r) * static_cast<size_t>(sc_.steps) +
                                      static_cast<size_t>(s)];
    gs.temp_c = static_cast<float>(st.temp_c[i]);
    gs.sm_clock_mhz = static_cast<float>(mhz);
    gs.power_limit_w = static_cast<float>(cap);
    uint16_t reasons = 0;
    if (lock < 1) reasons |= kReasonApplicationsClocks;
    if (power_ratio < 1 && power_ratio <= thermal_ratio) reasons |= kReasonSwPowerCap;
    if (st.temp_c[i] > kMaxOperatingTempC) reasons |= kReasonSwThermal;
    if (st.temp_c[i] > kHwSlowdownTempC) reasons |= kReasonHwThermal | kReasonHwSlowdown;
    gs.reasons = reasons;
    gs.pcie_width = static_cast<uint8_t>(PcieWidth(r / g_, r % g_, s, *st.on));
  }
}

void Simulator::RunHostAndFirstCompute(PassState& st, int s) {
  const size_t R = static_cast<size_t>(ranks_);
  const int K = sc_.collectives_per_step;
  for (size_t r = 0; r < R; ++r) {
    Rng& rng = st.rngs[r];
    double jitter = std::max(0.5, 1 + sc_.jitter * rng.Normal());
    double u_dl = rng.Uniform(), u_h2d = rng.Uniform(), u_d2h = rng.Uniform();
    double c = st.compute_ns * gpus_[r].silicon / st.clock_ratio[r] * st.work[r] * jitter;
    st.compute[r] = c;
    int node = static_cast<int>(r) / g_, gpu = static_cast<int>(r) % g_;
    double pcie = kPcieGen5x16GBps * PcieWidth(node, gpu, s, *st.on) / 16.0;
    int64_t dl =
        std::llround(300 * kUs * (1 + 1.7 * sc_.jitter * (2 * u_dl - 1)) + st.host_extra[r]);
    if (s == 0) dl += std::llround(sc_.warmup_s * kSec);
    int64_t gap = std::llround(st.gap_extra[r]);
    int64_t h2d = std::llround(static_cast<double>(kInputBytes) / (pcie / 2) * (1 + 0.02 * u_h2d));
    st.d2h[r] = std::llround(1800 * (1 + 0.2 * u_d2h));
    st.host_ns[r] = gap + dl;
    st.arrival[r] = st.start[r] + gap + dl + kHostToCopyNs + h2d + std::llround(c * shares_[0]) +
                    kComputeToNcclNs;
    st.wait[r] = 0;
    if (st.record && st.in_window) {
      ScheduledStep& sched = Scheduled(s, r);
      sched.start_ns = st.start[r];
      sched.host_gap_ns = gap;
      sched.dataloader_ns = dl;
      sched.h2d_ns = h2d;
      sched.d2h_ns = st.d2h[r];
      sched.arrival_ns.assign(static_cast<size_t>(K), 0);
      sched.end_ns.assign(static_cast<size_t>(K), 0);
    }
  }
}

void Simulator::RunCollectives(PassState& st, int s) {
  const size_t R = static_cast<size_t>(ranks_);
  const int K = sc_.collectives_per_step;
  for (int k = 0; k < K; ++k) {
    int64_t last = std::numeric_limits<int64_t>::min();
    for (size_t r = 0; r < R; ++r) last = std::max(last, st.arrival[r]);
    int64_t end = last + st.transfer_ns[static_cast<size_t>(k)];
    for (size_t r = 0; r < R; ++r) {
      int64_t my_end = end + static_cast<int64_t>(2 * kUs * st.rngs[r].Uniform());
      st.wait[r] += my_end - st.arrival[r];
      if (st.record && st.in_window) {
        ScheduledStep& sched = Scheduled(s, r);
        sched.arrival_ns[static_cast<size_t>(k)] = st.arrival[r];
        sched.end_ns[static_cast<size_t>(k)] = my_end;
      }
      int64_t next_compute = std::llround(st.compute[r] * shares_[static_cast<size_t>(k) + 1]);
      st.arrival[r] = my_end + next_compute + (k + 1 < K ? kComputeToNcclNs : 0);
    }
  }
}

void Simulator::AdvanceGpu(PassState& st, int s, size_t r, int64_t dur) {
  const GpuConst& gc = gpus_[r];
  double ratio = st.clock_ratio[r];
  double p_busy = kIdlePowerW + gc.p_dyn * ratio * ratio * ratio;
  double p_wait = kIdlePowerW + 0.15 * gc.p_dyn * ratio * ratio * ratio;
  double p_host = 0.9 * kIdlePowerW;
  double d = static_cast<double>(dur);
  double c = std::min(st.compute[r], d);
  double w = std::min(static_cast<double>(st.wait[r]), d - c);
  double p_avg = (c * p_busy + w * p_wait + (d - c - w) * p_host) / d;
  double r_th = gc.r_th;
  if (st.any_fault) {
    for (const ActiveFault& a : faults_) {
      if (a.f->kind == FaultKind::kThermal && Active(a, s, *st.on) &&
          std::find(a.ranks.begin(), a.ranks.end(), static_cast<int>(r)) != a.ranks.end()) {
        r_th = std::max(r_th, internal::FaultyThermalResistance(a.severity, gc.p_dyn));
      }
    }
  }
  double t_ss = kInletTempC + r_th * p_avg;
  double& t = st.temp_c[static_cast<size_t>(track_slot_[r])];
  if (st.record && opt_.record_gpus) {
    GpuSample& gs = run_.gpu_samples_[r * static_cast<size_t>(sc_.steps) + static_cast<size_t>(s)];
    gs.start_ns = st.start[r];
    gs.power_w = static_cast<float>(p_avg);
    gs.util_pct = static_cast<float>(100 * (c + w) / d);
    gs.sm_active_pct = static_cast<float>(100 * c / d);
    double inter_bytes = sc_.nodes > 1 ? st.ring * st.total_bytes / g_ : 0;
    gs.pcie_rx_mbps =
        static_cast<float>((static_cast<double>(kInputBytes) + inter_bytes) / d * 1e3);
    gs.pcie_tx_mbps = static_cast<float>(inter_bytes / d * 1e3);
  }
  t = t_ss + (t - t_ss) * std::exp(-d / (kThermalTauS * kSec));
}

void Simulator::FinishStep(Pass& pass, PassState& st, int s) {
  const size_t R = static_cast<size_t>(ranks_);
  for (size_t r = 0; r < R; ++r) {
    int64_t opt_end = st.arrival[r];
    int64_t next = opt_end + kComputeToNcclNs + st.d2h[r] + kCopyToNextStepNs;
    int64_t dur = next - st.start[r];
    if (st.record && st.in_window) {
      ScheduledStep& sched = Scheduled(s, r);
      sched.optimizer_end_ns = opt_end;
      sched.next_start_ns = next;
    }
    if (st.record && opt_.record_steps) {
      run_.starts_[static_cast<size_t>(s) * R + r] = st.start[r];
      if (opt_.record_compute) run_.compute_[static_cast<size_t>(s) * R + r] = dur - st.wait[r];
    }
    if (track_slot_[r] >= 0) AdvanceGpu(st, s, r, dur);
    for (size_t i = 0; i < faults_.size(); ++i) {
      const ActiveFault& a = faults_[i];
      if (a.ranks.empty()) continue;
      size_t cr = static_cast<size_t>(a.ranks.front());
      if (cr == r) {
        pass.culprit_compute[i][static_cast<size_t>(s)] = st.compute[r];
        pass.culprit_host[i][static_cast<size_t>(s)] = static_cast<double>(st.host_ns[r]);
      }
    }
    if (r == 0) pass.step_s[static_cast<size_t>(s)] = static_cast<double>(dur) / kSec;
    st.start[r] = next;
  }
}

}  // namespace laggard::sim
