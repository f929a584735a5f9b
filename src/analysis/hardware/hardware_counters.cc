// The hardware detector's clock-event counters (analysis/hardware/hardware_detector.h):
// the driver's cumulative time throttled for heat and power, as a share of
// the time between samples, and as a history when there is one snapshot.

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "analysis/hardware/hardware_detector.h"

namespace laggard {
namespace {

// "3.4 h", "12 min", "45 s".
std::string HeldFor(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.0f} s", s);
}

}  // namespace

// The violation counters' share of the time between samples (none where
// the samples' times are guessed: no dates in the file), their latest
// values and the latest reasons (GpuStats).
void MeasureClockEventCounters(const GpuRecord& g, GpuStats& st) {
  auto thermal = [](const GpuSample& s) { return s.thermal_violation_ns; };
  auto power = [](const GpuSample& s) -> std::optional<int64_t> {
    if (!s.power_violation_ns && !s.power_brake_violation_ns) return std::nullopt;
    return s.power_violation_ns.value_or(0) + s.power_brake_violation_ns.value_or(0);
  };
  auto share = [&](auto get, DurationNs& span_ns) -> std::optional<double> {
    if (g.time_is_approximate) return std::nullopt;
    const GpuSample* prev = nullptr;
    double held = 0, span = 0;
    for (const GpuSample& s : g.samples) {
      std::optional<int64_t> c = get(s);
      if (!c) continue;
      if (prev != nullptr && s.time_ns > prev->time_ns && *c >= *get(*prev)) {
        held += static_cast<double>(*c - *get(*prev));
        span += static_cast<double>(s.time_ns - prev->time_ns);
      }
      prev = &s;
    }
    span_ns = static_cast<DurationNs>(span);
    return span > 0 ? std::optional<double>(std::min(1.0, held / span)) : std::nullopt;
  };
  st.thermal_counter_share = share(thermal, st.thermal_counter_span_ns);
  st.power_counter_share = share(power, st.power_counter_span_ns);
  for (auto it = g.samples.rbegin(); it != g.samples.rend(); ++it) {
    if (!st.thermal_history_s && it->thermal_violation_ns)
      st.thermal_history_s = static_cast<double>(*it->thermal_violation_ns) / 1e9;
    if (!st.power_history_s && power(*it))
      st.power_history_s = static_cast<double>(*power(*it)) / 1e9;
  }
  for (auto it = g.samples.rbegin(); it != g.samples.rend(); ++it) {
    if (!it->clock_events) continue;
    st.thermal_reason_now = ThermalReasonActive(*it);
    st.power_reason_now =
        (*it->clock_events & (clock_event::kSwPowerCap | clock_event::kHwPowerBrakeSlowdown)) != 0;
    break;
  }
}

// "; its clocks were held down for heat 34% of the 60 s between samples
// (the driver's counters), though no sample caught the reason active".
std::string ThrottledShareWords(double share, DurationNs span, std::string_view why,
                                double sampled_share) {
  std::string s = fmt::format(
      "; its clocks were held down for {} {:.0f}% of the {:.0f} s between samples (the driver's "
      "counters)",
      why, 100 * share, static_cast<double>(span) / 1e9);
  if (share > 0 && sampled_share == 0) s += ", though no sample caught the reason active";
  return s;
}

std::optional<Finding> ThrottleHistoryFinding(const GpuMetrics& gm,
                                              const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  if (st.thermal_counter_share || st.power_counter_share) return std::nullopt;  // the run says
  struct Kind {
    const char* why;
    std::optional<double> held, peers;
    bool now;
  };
  const Kind kinds[] = {
      {"heat", st.thermal_history_s, gm.peer_thermal_history_s, st.thermal_reason_now},
      {"power", st.power_history_s, gm.peer_power_history_s, st.power_reason_now}};
  const Kind* worst = nullptr;
  for (const Kind& k : kinds) {
    if (!k.held || *k.held < o.min_throttle_history_s) continue;
    if (k.peers ? *k.held < o.throttle_history_vs_peers * std::max(*k.peers, 60.0)
                : *k.held < o.lone_throttle_history_s)
      continue;
    if (worst == nullptr || *k.held > *worst->held) worst = &k;
  }
  if (worst == nullptr) return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuThrottleHistory;
  f.severity = worst->peers ? Severity::kWarning : Severity::kInfo;
  f.entity = GpuEntity(st);
  f.cause = worst->why == std::string_view("heat") ? "thermal" : "power_cap";
  f.message = fmt::format(
      "{}: its clocks were held down for {} {} in all since its driver loaded (the driver's "
      "clock-event counters){}; {}",
      GpuName(st), worst->why, HeldFor(*worst->held),
      worst->peers
          ? fmt::format(", against a median of {} on its same-model peers", HeldFor(*worst->peers))
          : std::string(),
      worst->now ? "the reason is active in this snapshot too"
                 : "the reason is not active in this snapshot: the counters keep what a "
                   "snapshot's flags miss");
  f.evidence.push_back(Evidence{
      fmt::format("clock-event counters: {} held for {}", worst->why, HeldFor(*worst->held)),
      gm.source});
  // A history since the driver loaded, not this run: a place to look.
  f.confidence =
      worst->peers ? o.confidence.throttle_history : o.confidence.throttle_history_no_peers;
  f.next_steps.push_back(fmt::format(
      "watch {} GPU {} under load: two `nvidia-smi -q -d PERFORMANCE` a minute apart give the "
      "share of that minute throttled; for heat check its fans and airflow, for power `nvidia-smi "
      "-q -d POWER` and the supply",
      st.host.value_or("the host"), st.gpu));
  return f;
}

}  // namespace laggard
