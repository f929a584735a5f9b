// Internal to the cluster simulator: the laws behind each fault (cluster.h
// lists them), the random streams and the units that scenario resolution
// (scenario.cc) and the step simulation (simulator.h) share. Nothing outside
// src/simulator/cluster/cluster.cc, scenario.cc, network_model.cc and
// simulate_pass.cc includes it.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_SIMULATOR_CLUSTER_SIM_INTERNAL_H_
#define LAGGARD_SIMULATOR_CLUSTER_SIM_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "simulator/cluster/cluster.h"
#include "simulator/rng.h"

namespace laggard::sim::internal {

inline constexpr int64_t kUs = 1'000;
inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kSec = 1'000'000'000;

inline bool IsGpuKind(FaultKind k) {
  return k == FaultKind::kThermal || k == FaultKind::kPowerCap || k == FaultKind::kClocksLocked ||
         k == FaultKind::kPcieDowngrade || k == FaultKind::kNvlinkDown ||
         k == FaultKind::kSlowKernel;
}
inline bool IsNicKind(FaultKind k) {
  return k == FaultKind::kNicDegraded || k == FaultKind::kIbPortDown;
}

// Random streams: one per purpose and key, independent of each other.
enum StreamTag : uint64_t {
  kRankTag = 11,
  kJobTag = 12,
  kGpuTag = 13,
  kClockTag = 14,
  kFaultTag = 15,
  kTargetTag = 16,
};
inline uint64_t Seed(uint64_t seed, StreamTag tag, uint64_t a, uint64_t b = 0) {
  uint64_t h = Rng(seed ^ (tag * 0xd1b54a32d192ed03ull)).Next() ^ (a * 0x9e3779b97f4a7c15ull);
  h = Rng(h).Next() ^ (b * 0xc2b2ae3d27d4eb4full);
  return Rng(h).Next();
}

// Highest real InfiniBand rate (4X NDR 400, 2X NDR / 4X HDR 200, 1X NDR /
// 4X EDR 100, 1X HDR 50, 1X EDR 25) not above rate x (1 - severity), and
// at least one step below 400.
inline double DegradedIbRate(double severity) {
  constexpr double kRates[] = {200, 100, 50, 25};
  double want = kIbRateGbps * (1 - severity) + 1e-9;
  for (double r : kRates) {
    if (r <= want) return r;
  }
  return kRates[std::size(kRates) - 1];
}

// PCIe width after losing `severity` of the bandwidth: x16 halves per step.
inline int DowngradedWidth(double severity) {
  int halvings =
      std::clamp(static_cast<int>(std::lround(std::log2(1 / std::max(1e-9, 1 - severity)))), 1, 4);
  return 16 >> halvings;
}

inline double QuantizeClock(double mhz) {
  return std::max(kClockStepMhz, std::floor(mhz / kClockStepMhz + 1e-9) * kClockStepMhz);
}

// The cap (W, 5 W steps) that holds a busy GPU at 1/(1+s) of f_max.
inline double PowerCapFor(double severity) {
  double r = 1 / (1 + severity);
  double cap = kIdlePowerW + kDynamicPowerW * r * r * r;
  return std::max(kMinPowerLimitW, std::round(cap / 5) * 5);
}

inline double LockedClockFor(double severity) {
  return QuantizeClock(kMaxSmClockMhz / (1 + severity));
}

// Thermal resistance that settles a busy GPU where the thermal law holds
// it at 1/(1+s) of f_max.
inline double FaultyThermalResistance(double severity, double p_dyn) {
  double r = 1 / (1 + severity);
  double t_eq =
      std::min(kShutdownTempC - 0.5, kMaxOperatingTempC + (1 - r) / kThermalClockDropPerC);
  double p_eq = kIdlePowerW + p_dyn * r * r * r * 0.97;
  return (t_eq - kInletTempC) / p_eq;
}

inline double ThermalClockRatio(double temp_c) {
  if (temp_c <= kMaxOperatingTempC) return 1;
  return std::max(0.3, 1 - kThermalClockDropPerC * (temp_c - kMaxOperatingTempC));
}

}  // namespace laggard::sim::internal

#endif  // LAGGARD_SIMULATOR_CLUSTER_SIM_INTERNAL_H_
