#include "model/hardware.h"

#include <algorithm>
#include <tuple>

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

const GpuRecord* HardwareData::Find(std::string_view host, int32_t index) const {
  for (const GpuRecord& g : gpus) {
    if (g.index == index && g.host && *g.host == host) return &g;
  }
  return nullptr;
}

}  // namespace laggard
