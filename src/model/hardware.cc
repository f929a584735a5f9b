#include "model/hardware.h"

#include "model/run.h"  // kMaxRank

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace laggard {

std::span<const ClockEventBit> ClockEventBits() {
  static constexpr ClockEventBit kNames[] = {
      {clock_event::kGpuIdle, "gpu_idle"},
      {clock_event::kApplicationsClocksSetting, "applications_clocks_setting"},
      {clock_event::kSwPowerCap, "sw_power_cap"},
      {clock_event::kHwSlowdown, "hw_slowdown"},
      {clock_event::kSyncBoost, "sync_boost"},
      {clock_event::kSwThermalSlowdown, "sw_thermal_slowdown"},
      {clock_event::kHwThermalSlowdown, "hw_thermal_slowdown"},
      {clock_event::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {clock_event::kDisplayClockSetting, "display_clock_setting"},
  };
  return kNames;
}

std::string ClockEventNames(uint64_t reasons) {
  std::string out;
  for (auto [bit, name] : ClockEventBits()) {
    if ((reasons & bit) == 0) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

std::string CoreReadingProblem(const CoreReading& c) {
  auto in = [](const std::optional<double>& v, double lo, double hi, bool open_lo) {
    return !v || (std::isfinite(*v) && *v >= lo && *v <= hi && !(open_lo && *v == lo));
  };
  if (c.cpu < 0 || c.cpu > kMaxCpuNumber) return fmt::format("cpu {} is not a CPU number", c.cpu);
  if (!in(c.busy, 0, 1, false) || !in(c.steal, 0, 1, false))
    return fmt::format("cpu {}: a share outside [0, 1]", c.cpu);
  if (!in(c.probe_s, 0, 3600, true))
    return fmt::format("cpu {}: a probe time not in (0, 1 h]", c.cpu);
  if (!in(c.speed, 0, 1 + 1e-9, true)) return fmt::format("cpu {}: a speed not in (0, 1]", c.cpu);
  return "";
}

std::string HostProcReadingProblem(const HostProcReading& p) {
  if (p.pid < 1 || p.pid > kMaxPid) return fmt::format("pid {} is not a pid", p.pid);
  if (!std::isfinite(p.cpu_share) || p.cpu_share < 0 || p.cpu_share > 1e5)
    return "\"cpu_share\" is not a share of a core >= 0";
  if (p.ppid && (*p.ppid < 0 || *p.ppid > kMaxPid)) return "\"ppid\" is not a pid";
  if (p.rank && (*p.rank < 0 || *p.rank > kMaxRank)) return "\"rank\" is not a rank";
  if (p.last_cpu && (*p.last_cpu < 0 || *p.last_cpu > kMaxCpuNumber))
    return "\"last_cpu\" is not a CPU number";
  if (!std::is_sorted(p.cpus_allowed.begin(), p.cpus_allowed.end()) ||
      (!p.cpus_allowed.empty() &&
       (p.cpus_allowed.front() < 0 || p.cpus_allowed.back() > kMaxCpuNumber)))
    return "\"cpus_allowed\" is not a CPU list";
  return "";
}

const GpuRecord* HardwareData::Find(std::string_view host, int32_t index) const {
  for (const GpuRecord& g : gpus) {
    if (g.index == index && g.host && *g.host == host) return &g;
  }
  return nullptr;
}

}  // namespace laggard
