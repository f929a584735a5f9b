#include "analysis/hardware/hardware_detector.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "analysis/hardware/gpu_commands.h"
#include "base/stats/robust_stats.h"
#include "model/time.h"

namespace laggard {

std::string GpuName(const GpuStats& g) {
  std::string s = fmt::format("GPU {} of {}", g.gpu, g.host.value_or("unknown host"));
  if (g.rank) s += fmt::format(" (rank {})", *g.rank);
  return s;
}

Entity GpuEntity(const GpuStats& g) {
  Entity e;
  e.rank = g.rank;
  e.host = g.host;
  e.gpu = g.gpu;
  return e;
}

bool ThermalReasonActive(const GpuSample& s) {
  return s.clock_events &&
         (*s.clock_events & (clock_event::kHwThermalSlowdown | clock_event::kSwThermalSlowdown));
}

namespace {

bool Loaded(const GpuSample& s, const HardwareDetectorOptions& o) {
  return !s.util_pct || *s.util_pct >= o.load_util_pct;
}

// The trailing run of loaded samples with a thermal slowdown reason (idle
// samples, as after the job ended, are skipped: an idle GPU cools).
void MeasureThermalTail(const GpuRecord& g, const HardwareDetectorOptions& o, GpuStats& st) {
  std::vector<const GpuSample*> by_time;
  for (const GpuSample& s : g.samples) by_time.push_back(&s);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const GpuSample* a, const GpuSample* b) { return a->time_ns < b->time_ns; });
  std::vector<double> tail_clocks;
  for (auto it = by_time.rbegin(); it != by_time.rend(); ++it) {
    const GpuSample& s = **it;
    if (!Loaded(s, o)) continue;
    if (!ThermalReasonActive(s)) break;
    ++st.thermal_tail_samples;
    st.thermal_tail_from_ns = s.time_ns;
    if (s.sm_clock_mhz) tail_clocks.push_back(*s.sm_clock_mhz);
  }
  st.thermal_tail_sm_clock_mhz = Median(tail_clocks);
}

// Changes of the enforced limit between consecutive samples (by time) that
// print one; Run keeps each GPU's samples sorted by time.
std::vector<PowerLimitChange> LimitChanges(const GpuRecord& g, const HardwareDetectorOptions& o) {
  std::vector<PowerLimitChange> out;
  std::optional<double> prev;
  for (const GpuSample& s : g.samples) {
    if (!s.power_limit_w) continue;
    if (prev && std::abs(*s.power_limit_w - *prev) >= o.limit_change_w)
      out.push_back(PowerLimitChange{s.time_ns, *prev, *s.power_limit_w, s.src});
    prev = s.power_limit_w;
  }
  return out;
}

GpuStats Measure(const GpuRecord& g, const RankMap& ranks, const HardwareDetectorOptions& o) {
  GpuStats st;
  st.host = g.host;
  st.gpu = g.index;
  if (g.host) st.rank = ranks.RankOf(*g.host, g.index);
  st.model = g.facts.name;
  st.samples = g.samples.size();
  st.time_is_approximate = g.time_is_approximate;
  std::vector<double> clocks, temps, power, util;
  size_t hot = 0, thermal = 0, power_reason = 0, pinned = 0;
  std::optional<double> slowdown = g.facts.slowdown_temp_c;
  for (const GpuSample& s : g.samples) {
    bool loaded = Loaded(s, o);
    if (loaded) ++st.loaded_samples;
    if (loaded && s.sm_clock_mhz) clocks.push_back(*s.sm_clock_mhz);
    if (s.temp_c) {
      temps.push_back(*s.temp_c);
      if (*s.temp_c >= o.hot_temp_c || (slowdown && *s.temp_c >= *slowdown)) ++hot;
    }
    if (s.power_w) power.push_back(*s.power_w);
    if (s.util_pct) util.push_back(*s.util_pct);
    if (s.clock_events) {
      if (ThermalReasonActive(s)) ++thermal;
      if (loaded &&
          (*s.clock_events & (clock_event::kSwPowerCap | clock_event::kHwPowerBrakeSlowdown)))
        ++power_reason;
    }
    std::optional<double> limit =
        s.power_limit_w ? s.power_limit_w : g.facts.enforced_power_limit_w;
    if (loaded && s.power_w && limit && *limit > 0 && *s.power_w >= o.power_pinned * *limit)
      ++pinned;
  }
  st.sm_clock_mhz = Median(clocks);
  if (!temps.empty()) {
    st.temp_c_max = *std::max_element(temps.begin(), temps.end());
    st.temp_c_median = Median(temps);
  }
  st.power_w_median = Median(power);
  st.util_pct_median = Median(util);
  st.power_limit_w = g.facts.enforced_power_limit_w;
  if (!st.power_limit_w) {
    std::vector<double> limits;
    for (const GpuSample& s : g.samples) {
      if (s.power_limit_w) limits.push_back(*s.power_limit_w);
    }
    st.power_limit_w = Median(limits);
  }
  st.power_limit_changes = LimitChanges(g, o);
  if (!st.power_limit_changes.empty()) {
    double low = st.power_limit_changes.front().from_w;
    for (const PowerLimitChange& c : st.power_limit_changes) low = std::min(low, c.to_w);
    std::vector<double> capped;
    for (const GpuSample& s : g.samples) {
      if (s.power_limit_w && *s.power_limit_w < low + o.limit_change_w && s.sm_clock_mhz &&
          Loaded(s, o))
        capped.push_back(*s.sm_clock_mhz);
    }
    st.capped_sm_clock_mhz = Median(capped);
  }
  MeasureThermalTail(g, o, st);
  double n = static_cast<double>(std::max<size_t>(1, g.samples.size()));
  double nl = static_cast<double>(std::max<size_t>(1, st.loaded_samples));
  st.hot_share = static_cast<double>(hot) / n;
  st.thermal_reason_share = static_cast<double>(thermal) / n;
  st.power_reason_share = static_cast<double>(power_reason) / nl;
  st.pinned_share = static_cast<double>(pinned) / nl;
  MeasureClockEventCounters(g, st);
  return st;
}

// For every GPU, the median of `get` over the other GPUs of the same model;
// nullopt with < 2 of them. Each model's values are sorted once and a GPU's
// own value is left out by its index in them, the median of the rest taken
// as Median() takes it: the same numbers as collecting the others for each
// GPU, which was quadratic in the GPUs (cubic with the NVLink lookup: a
// 16,384-GPU diagnosis ran for minutes).
template <typename Get>
std::vector<std::optional<double>> PeerMedians(const std::vector<GpuStats>& all, Get get) {
  std::vector<std::optional<double>> own(all.size()), out(all.size());
  std::map<std::optional<std::string>, std::vector<double>> by_model;
  for (size_t i = 0; i < all.size(); ++i) {
    own[i] = get(all[i]);
    if (own[i]) by_model[all[i].model].push_back(*own[i]);
  }
  for (auto& [model, v] : by_model) std::sort(v.begin(), v.end());
  for (size_t i = 0; i < all.size(); ++i) {
    auto it = by_model.find(all[i].model);
    if (it == by_model.end()) continue;
    const std::vector<double>& sorted = it->second;
    size_t n = sorted.size(), skip = n;  // skip: the index left out (n: none)
    if (own[i]) {
      skip = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), *own[i]) -
                                 sorted.begin());
      --n;
    }
    if (n < 2) continue;
    auto at = [&](size_t k) { return k >= skip ? sorted[k + 1] : sorted[k]; };
    double upper = at(n / 2);
    out[i] = n % 2 == 1 ? upper : (at(n / 2 - 1) + upper) / 2;
  }
  return out;
}

// What MeasureAgainstPeers compares each GPU with (PeerMedians of each).
struct PeerValues {
  std::vector<std::optional<double>> sm_clock_mhz, power_limit_w, temp_c_max, nvlink_up,
      thermal_history_s, power_history_s;
};

// Does any anomalous sample of `g` fall into the slow steps of its rank?
std::optional<bool> Overlap(const GpuRecord& g, const GpuStats& st,
                            const std::vector<SuspectRank>& suspects,
                            const HardwareDetectorOptions& o,
                            const std::function<bool(const GpuSample&)>& anomalous) {
  if (!st.rank || g.time_is_approximate) return std::nullopt;
  for (const SuspectRank& s : suspects) {
    if (s.rank != *st.rank) continue;
    if (!s.slow_from_ns) return std::nullopt;
    TimeNs to = s.slow_to_ns.value_or(INT64_MAX - o.time_slack_ns);
    for (const GpuSample& x : g.samples) {
      if (x.time_ns >= *s.slow_from_ns - o.time_slack_ns && x.time_ns <= to + o.time_slack_ns &&
          anomalous(x)) {
        return true;
      }
    }
    return false;
  }
  return std::nullopt;
}

// The time of `g`'s first sample that `test` holds; nullopt without one, or
// when the samples' times are approximate.
std::optional<TimeNs> FirstSample(const GpuRecord& g,
                                  const std::function<bool(const GpuSample&)>& test) {
  if (g.time_is_approximate) return std::nullopt;
  for (const GpuSample& x : g.samples) {
    if (test(x)) return x.time_ns;
  }
  return std::nullopt;
}

bool IsSuspect(const std::vector<SuspectRank>& suspects, std::optional<int32_t> rank) {
  if (!rank) return false;
  return std::any_of(suspects.begin(), suspects.end(),
                     [&](const SuspectRank& s) { return s.rank == *rank; });
}

// PCIe: the capability, and the lowest generation under load / width seen.
void MeasurePcie(const GpuRecord& g, const HardwareDetectorOptions& o, GpuMetrics& gm) {
  gm.pcie_gen_max = g.facts.pcie_gen_max;
  if (gm.pcie_gen_max && g.facts.pcie_gen_host_max) {
    gm.pcie_gen_max = std::min(*gm.pcie_gen_max, *g.facts.pcie_gen_host_max);
  }
  gm.pcie_width_max = g.facts.pcie_width_max;
  std::optional<int32_t> gen_loaded, width_seen;
  for (const GpuSample& x : g.samples) {
    if (x.pcie_gen && Loaded(x, o) && x.util_pct) {
      gen_loaded = gen_loaded ? std::min(*gen_loaded, *x.pcie_gen) : *x.pcie_gen;
    }
    if (x.pcie_width)
      width_seen = width_seen ? std::min(*width_seen, *x.pcie_width) : *x.pcie_width;
  }
  if (!width_seen) width_seen = g.facts.pcie_width_current;
  bool busy_static = gm.stats.util_pct_median && *gm.stats.util_pct_median >= o.load_util_pct;
  if (!gen_loaded && busy_static) gen_loaded = g.facts.pcie_gen_current;
  gm.pcie_gen_loaded = gen_loaded;
  gm.pcie_width_seen = width_seen;
}

std::vector<std::string> ErrorsOf(const GpuFacts& fx) {
  std::vector<std::string> errs;
  if (fx.ecc_uncorrected_volatile.value_or(0) > 0)
    errs.push_back(
        fmt::format("{} uncorrectable ECC errors (volatile)", *fx.ecc_uncorrected_volatile));
  if (fx.retired_pages_pending.value_or(false)) errs.push_back("page retirement pending");
  if (fx.remapping_failure.value_or(false)) errs.push_back("row remapping failure");
  if (!fx.xids.empty()) {
    std::string list;
    for (size_t k = 0; k < fx.xids.size() && k < 5; ++k)
      list += (k ? "," : "") + std::to_string(fx.xids[k]);
    errs.push_back(fmt::format("XID {}", list));
  }
  if (fx.diag_failed.value_or(false)) {
    errs.push_back("dcgmi diag failed" +
                   (fx.diag_messages.empty() ? std::string() : ": " + fx.diag_messages.front()));
  }
  return errs;
}

// "at 2025-11-24T16:00:23.147Z", or how far into the file when sample
// times are approximate.
std::string When(const GpuStats& st, TimeNs t) {
  if (st.time_is_approximate)
    return fmt::format("~{:.0f} s into its samples (time approximate)",
                       static_cast<double>(t) / 1e9);
  return "at " + FormatTimestamp(t);
}

// The metrics of GPU i that compare it with its peers and with the slow
// steps of its rank.
void MeasureAgainstPeers(const std::vector<GpuRecord>& gpus, size_t i, const PeerValues& peers,
                         const std::vector<SuspectRank>& suspects, const HardwareDetectorOptions& o,
                         GpuMetrics& gm) {
  const GpuRecord& g = gpus[i];
  GpuStats& st = gm.stats;
  std::optional<double> peer_clock = peers.sm_clock_mhz[i];
  if (!peer_clock && g.facts.max_sm_clock_mhz)
    peer_clock = g.facts.max_sm_clock_mhz, gm.peer_is_max = true;
  st.peer_sm_clock_mhz = peer_clock;
  if (st.sm_clock_mhz && peer_clock && *peer_clock > 0)
    gm.clock_gap = 1 - *st.sm_clock_mhz / *peer_clock;
  gm.peer_power_limit_w = peers.power_limit_w[i];
  gm.peer_temp_c_max = peers.temp_c_max[i];
  gm.peer_thermal_history_s = peers.thermal_history_s[i];
  gm.peer_power_history_s = peers.power_history_s[i];
  gm.default_power_limit_w = g.facts.default_power_limit_w;
  gm.app_sm_clock_mhz = g.facts.app_sm_clock_mhz;
  gm.max_sm_clock_mhz = g.facts.max_sm_clock_mhz;
  gm.bus_id = g.bus_id;
  MeasurePcie(g, o, gm);
  gm.nvlink_up = g.facts.nvlink_up;
  if (g.facts.nvlink_up) {
    gm.nvlink_expected = peers.nvlink_up[i];
    if (!gm.nvlink_expected && g.facts.nvlink_total) {
      gm.nvlink_expected = static_cast<double>(*g.facts.nvlink_total);
    }
  }
  gm.errors = ErrorsOf(g.facts);
  if (g.facts.src) gm.source = g.facts.src;
  else if (!g.samples.empty()) gm.source = g.samples.front().src;
  double gap_threshold = gm.peer_is_max ? o.clock_gap_vs_max : o.clock_gap;
  auto hot = [&](const GpuSample& x) {
    return (x.temp_c && *x.temp_c >= o.hot_temp_c) || ThermalReasonActive(x);
  };
  auto pinned = [&](const GpuSample& x) {
    std::optional<double> lim = x.power_limit_w ? x.power_limit_w : st.power_limit_w;
    return (x.power_w && lim && *x.power_w >= o.power_pinned * *lim) ||
           (x.clock_events && (*x.clock_events & clock_event::kSwPowerCap));
  };
  auto slow_clock = [&](const GpuSample& x) {
    return x.sm_clock_mhz && peer_clock && Loaded(x, o) &&
           *x.sm_clock_mhz < (1 - gap_threshold) * *peer_clock;
  };
  gm.thermal_overlap = Overlap(g, st, suspects, o, hot);
  gm.power_overlap = Overlap(g, st, suspects, o, pinned);
  gm.clock_overlap = Overlap(g, st, suspects, o, slow_clock);
  gm.thermal_from_ns = FirstSample(g, hot);
  gm.power_from_ns = FirstSample(g, pinned);
  gm.clock_from_ns = FirstSample(g, slow_clock);
  gm.any_overlap = Overlap(g, st, suspects, o, [](const GpuSample&) { return true; });
}

Evidence SourceOf(const GpuMetrics& gm, std::string text) {
  return Evidence{std::move(text), gm.source};
}

// Fills severity, confidence and wording from the rank / time relation.
void Relate(Finding& f, const GpuStats& st, const std::vector<SuspectRank>& suspects,
            double confidence, const HardwareDetectorOptions& o) {
  f.confidence = confidence;
  f.severity = Describe(f.code).severity;
  if (!IsSuspect(suspects, st.rank)) {
    if (!suspects.empty()) {
      f.severity = Severity::kWarning;
      f.message += st.rank ? fmt::format("; rank {} is not slow, so it is not blamed", *st.rank)
                           : "; no rank is known to run on it, so it is not blamed";
    }
    return;
  }
  if (f.overlaps_slow_steps == true) {
    f.message += fmt::format("; during rank {}'s slow steps", *st.rank);
  } else if (f.overlaps_slow_steps == false) {
    f.message += fmt::format("; but not during rank {}'s slow steps", *st.rank);
    f.confidence = std::min(f.confidence, o.confidence.not_during_slow_steps_max);
  }
}

// What the clock rule reads of one GPU.
struct ClockState {
  bool low = false;  // clock_gap at or above its threshold
  std::string text;  // the clock comparison in words
};

ClockState ClockOf(const GpuMetrics& gm, const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  double gap_threshold = gm.peer_is_max ? o.clock_gap_vs_max : o.clock_gap;
  ClockState c;
  c.low = gm.clock_gap && *gm.clock_gap >= gap_threshold;
  c.text = gm.clock_gap
               ? fmt::format("SM clock {:.0f} MHz under load vs {:.0f} MHz on its {} ({:+.0f}%)",
                             *st.sm_clock_mhz, *st.peer_sm_clock_mhz,
                             gm.peer_is_max ? "max" : "same-model peers", -100 * *gm.clock_gap)
               : std::string("SM clock not recorded");
  return c;
}

std::optional<Finding> ThermalFinding(const GpuMetrics& gm, const ClockState& clock,
                                      const std::vector<SuspectRank>& suspects,
                                      const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  // The reasons sampled, or the driver's counters between samples.
  const double reason = std::max(st.thermal_reason_share, st.thermal_counter_share.value_or(0));
  if (!((st.hot_share >= o.min_share || reason >= o.min_share) &&
        (clock.low || reason >= o.min_share))) {
    return std::nullopt;
  }
  Finding f;
  f.code = FindingCode::kGpuThermal;
  f.onset_time = gm.thermal_from_ns;
  f.entity = GpuEntity(st);
  f.cause = "thermal";
  // Beside its peers' peak, so that "91 °C" reads against what the others
  // reached at the same time, not against a number the reader must know.
  f.message =
      fmt::format("{} reached {:.0f} °C (its median {:.0f} °C){}; {}", GpuName(st),
                  st.temp_c_max.value_or(0), st.temp_c_median.value_or(0),
                  gm.peer_temp_c_max
                      ? fmt::format(" vs {:.0f} °C on its same-model peers (median of their peaks)",
                                    *gm.peer_temp_c_max)
                      : std::string(),
                  clock.text);
  if (st.thermal_reason_share > 0) {
    f.message += fmt::format("; thermal slowdown active in {:.0f}% of samples",
                             100 * st.thermal_reason_share);
  }
  if (st.thermal_counter_share) {
    f.message += ThrottledShareWords(*st.thermal_counter_share, st.thermal_counter_span_ns, "heat",
                                     st.thermal_reason_share);
  }
  f.evidence.push_back(SourceOf(
      gm, fmt::format("{:.0f}% of samples at >= {:.0f} °C", 100 * st.hot_share, o.hot_temp_c)));
  f.overlaps_slow_steps = gm.thermal_overlap;
  const HardwareDetectorOptions::Confidences& c = o.confidence;
  double conf = c.thermal + (clock.low ? c.clock_low_bonus : 0) +
                (reason >= o.min_share ? c.thermal_reason_bonus : 0);
  Relate(f, st, suspects, conf, o);
  f.next_steps.push_back(
      fmt::format("improve cooling of {} GPU {}: check its fans, airflow, blocked intake and room "
                  "temperature; watch it with `{}`",
                  st.host.value_or("the host"), st.gpu, WatchGpuCommand(st.model, st.gpu)));
  return f;
}

// Thermal throttling that began near the end of the capture: too few
// samples for the share rule, but on in every last one, clock down.
std::optional<Finding> ThermalTailFinding(const GpuMetrics& gm,
                                          const std::vector<SuspectRank>& suspects,
                                          const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  const std::optional<double>& peer_clock = st.peer_sm_clock_mhz;
  if (!(st.thermal_tail_samples >= o.thermal_tail_samples && st.thermal_tail_sm_clock_mhz &&
        peer_clock &&
        *st.thermal_tail_sm_clock_mhz <= (1 - o.thermal_tail_clock_gap) * *peer_clock)) {
    return std::nullopt;
  }
  Finding f;
  f.code = FindingCode::kGpuThermal;
  f.entity = GpuEntity(st);
  f.cause = "thermal";
  f.pattern = Pattern::kOnsetAtEnd;
  f.severity = Severity::kWarning;
  f.onset_time = st.thermal_tail_from_ns;
  f.message = fmt::format(
      "{} began to throttle for heat near the end of the capture: thermal slowdown in each of "
      "its last {} samples{}, SM clock {:.0f} MHz under load in them vs {:.0f} MHz on its {} "
      "({:+.0f}%), reaching {:.0f} °C; still throttling when the capture ends",
      GpuName(st), st.thermal_tail_samples,
      st.thermal_tail_from_ns && !st.time_is_approximate
          ? fmt::format(" (from {})", FormatTimestamp(*st.thermal_tail_from_ns))
          : std::string(),
      *st.thermal_tail_sm_clock_mhz, *peer_clock, gm.peer_is_max ? "max" : "same-model peers",
      -100 * (1 - *st.thermal_tail_sm_clock_mhz / *peer_clock), st.temp_c_max.value_or(0));
  f.evidence.push_back(SourceOf(
      gm, fmt::format("thermal slowdown in the last {} samples", st.thermal_tail_samples)));
  f.confidence = o.confidence.thermal_tail;
  if (!IsSuspect(suspects, st.rank) && !suspects.empty()) {
    f.message += st.rank ? fmt::format("; rank {} is not slow, so it is not blamed", *st.rank)
                         : "; no rank is known to run on it, so it is not blamed";
  }
  f.next_steps.push_back(fmt::format(
      "watch {} GPU {} now: `{}`; if it keeps throttling, check its fans, airflow and intake "
      "before the job slows",
      st.host.value_or("the host"), st.gpu, WatchGpuCommand(st.model, st.gpu)));
  return f;
}

// `changes_told`: set when the finding tells the GPU's limit changes.
std::optional<Finding> PowerFinding(const GpuMetrics& gm, const ClockState& clock,
                                    const std::vector<SuspectRank>& suspects,
                                    const HardwareDetectorOptions& o, bool& changes_told) {
  const GpuStats& st = gm.stats;
  const std::optional<double>& peer_limit = gm.peer_power_limit_w;
  const std::optional<double>& default_limit = gm.default_power_limit_w;
  // The lowest limit in force, and the change that first set it when that
  // happened during the run.
  std::optional<double> limit = st.power_limit_w;
  const PowerLimitChange* lowered_at = nullptr;
  for (const PowerLimitChange& c : st.power_limit_changes) {
    if (c.to_w < c.from_w && (!lowered_at || c.to_w < lowered_at->to_w)) lowered_at = &c;
  }
  if (lowered_at && (!limit || lowered_at->to_w <= *limit)) limit = lowered_at->to_w;
  else lowered_at = nullptr;
  std::string limit_text =
      lowered_at ? fmt::format("enforced power limit lowered from {:.0f} W to {:.0f} W {}",
                               lowered_at->from_w, lowered_at->to_w, When(st, lowered_at->time_ns))
      : limit    ? fmt::format("enforced power limit {:.0f} W", *limit)
                 : std::string();
  bool limit_lowered = false;
  if (limit && default_limit && *limit < (1 - o.limit_gap) * *default_limit) {
    limit_lowered = true;
    limit_text += fmt::format(", below its default {:.0f} W", *default_limit);
  } else if (limit && peer_limit && *limit < (1 - o.limit_gap) * *peer_limit) {
    limit_lowered = true;
    limit_text += fmt::format(", below its peers' {:.0f} W", *peer_limit);
  }
  if (limit_lowered && lowered_at && st.power_limit_w && *st.power_limit_w > lowered_at->to_w) {
    const PowerLimitChange& back = st.power_limit_changes.back();
    limit_text += fmt::format(" (raised to {:.0f} W {})", back.to_w, When(st, back.time_ns));
  }
  // A cap lifted again: its clocks are those while it held.
  ClockState capped = clock;
  if (lowered_at && st.capped_sm_clock_mhz && st.peer_sm_clock_mhz && *st.peer_sm_clock_mhz > 0) {
    double gap = 1 - *st.capped_sm_clock_mhz / *st.peer_sm_clock_mhz;
    capped.low = gap >= (gm.peer_is_max ? o.clock_gap_vs_max : o.clock_gap);
    capped.text = fmt::format(
        "SM clock {:.0f} MHz under load while capped vs {:.0f} MHz on its {} ({:+.0f}%)",
        *st.capped_sm_clock_mhz, *st.peer_sm_clock_mhz, gm.peer_is_max ? "max" : "same-model peers",
        -100 * gap);
  }
  const double reason = std::max(st.power_reason_share, st.power_counter_share.value_or(0));
  bool pinned = (st.pinned_share >= o.min_power_share || reason >= o.min_power_share) && capped.low;
  if (!limit_lowered && !pinned) return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuPowerCap;
  f.onset_time = limit_lowered && lowered_at && !st.time_is_approximate
                     ? std::optional<TimeNs>(lowered_at->time_ns)
                     : gm.power_from_ns;
  f.entity = GpuEntity(st);
  f.cause = "power_cap";
  f.message = GpuName(st) + ": ";
  if (limit_lowered) f.message += limit_text;
  if (pinned) {
    f.message +=
        fmt::format("{}draw at the cap in {:.0f}% of loaded samples, {}", limit_lowered ? "; " : "",
                    100 * std::max(st.pinned_share, reason), capped.text);
    if (st.power_counter_share) {
      f.message += ThrottledShareWords(*st.power_counter_share, st.power_counter_span_ns, "power",
                                       st.power_reason_share);
    }
  } else if (gm.clock_gap) {
    f.message += "; " + capped.text;
  }
  changes_told = limit_lowered && lowered_at;
  if (changes_told) f.evidence.push_back(Evidence{limit_text, lowered_at->src});
  else f.evidence.push_back(SourceOf(gm, limit_lowered ? limit_text : capped.text));
  f.overlaps_slow_steps = limit_lowered ? gm.any_overlap : gm.power_overlap;
  const HardwareDetectorOptions::Confidences& c = o.confidence;
  double conf = c.power_cap + (limit_lowered ? c.power_cap_lowered_bonus : 0) +
                (capped.low ? c.clock_low_bonus : 0);
  Relate(f, st, suspects, conf, o);
  if (lowered_at && st.power_limit_w && *st.power_limit_w > lowered_at->to_w) {
    // Restored already: what lowered it will again.
    f.next_steps.push_back(fmt::format(
        "find what lowered the power limit of {} GPU {} to {:.0f} W {} (a power-capping daemon, a "
        "DCGM policy: `dcgmi policy --get`, a job prolog running `nvidia-smi -pl`, the BMC's "
        "power budget: its event log); it is back at {:.0f} W",
        st.host.value_or("the host"), st.gpu, lowered_at->to_w, When(st, lowered_at->time_ns),
        *st.power_limit_w));
  } else {
    const double cap = default_limit.value_or(peer_limit.value_or(st.power_limit_w.value_or(0)));
    f.next_steps.push_back(fmt::format(
        "lift the power cap on {} GPU {}: `{}` (check `{}`), and check the node's power supply "
        "if the limit is already at its default",
        st.host.value_or("the host"), st.gpu, SetPowerCapCommand(st.model, st.gpu, cap),
        ShowPowerCommand(st.model, st.gpu)));
  }
  return f;
}

// Clocks without a thermal or power reason.
std::optional<Finding> ClocksFinding(const GpuMetrics& gm, const ClockState& clock,
                                     const std::vector<SuspectRank>& suspects,
                                     const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  bool locked = gm.app_sm_clock_mhz && gm.max_sm_clock_mhz &&
                *gm.app_sm_clock_mhz < o.app_clock_locked_ratio * *gm.max_sm_clock_mhz;
  if (!clock.low && !locked) return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuClocksLow;
  f.onset_time = gm.clock_from_ns;
  f.entity = GpuEntity(st);
  f.cause = "clocks";
  f.message = GpuName(st) + ": " + clock.text;
  if (locked) {
    f.message += fmt::format("; applications clocks locked at {:.0f} of {:.0f} MHz",
                             *gm.app_sm_clock_mhz, *gm.max_sm_clock_mhz);
  }
  f.evidence.push_back(SourceOf(gm, clock.text));
  f.overlaps_slow_steps = gm.clock_overlap;
  const HardwareDetectorOptions::Confidences& c = o.confidence;
  Relate(f, st, suspects,
         c.clocks_low + (clock.low ? c.clock_low_bonus : 0) + (locked ? c.clocks_locked_bonus : 0),
         o);
  f.next_steps.push_back(fmt::format(
      "reset the clocks of {} GPU {}: `{}`; then run `{}` on it", st.host.value_or("the host"),
      st.gpu, ResetClocksCommand(st.model, st.gpu), GpuDiagCommand(st.model)));
  return f;
}

std::optional<Finding> PcieFinding(const GpuMetrics& gm, const std::vector<SuspectRank>& suspects,
                                   const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  std::string what;
  if (gm.pcie_width_seen && gm.pcie_width_max && *gm.pcie_width_seen < *gm.pcie_width_max) {
    what = fmt::format("PCIe link width x{} of x{}", *gm.pcie_width_seen, *gm.pcie_width_max);
  }
  if (gm.pcie_gen_loaded && gm.pcie_gen_max && *gm.pcie_gen_loaded < *gm.pcie_gen_max) {
    what += fmt::format("{}PCIe Gen{} of Gen{} under load", what.empty() ? "" : ", ",
                        *gm.pcie_gen_loaded, *gm.pcie_gen_max);
  }
  if (what.empty()) return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuPcieDowngrade;
  f.entity = GpuEntity(st);
  f.cause = "pcie_downgrade";
  f.message = GpuName(st) + ": " + what + " (judged against the link's capability)";
  f.evidence.push_back(SourceOf(gm, what));
  f.overlaps_slow_steps = IsSuspect(suspects, st.rank) ? std::optional<bool>(true) : std::nullopt;
  Relate(f, st, suspects, o.confidence.pcie_downgrade, o);
  f.next_steps.push_back(fmt::format(
      "reseat or replace the riser / check the slot of {} GPU {} (bus {}); confirm with `{}` "
      "under load and `lspci -vv -s {}` (LnkSta vs LnkCap)",
      st.host.value_or("the host"), st.gpu, gm.bus_id.value_or("?"),
      ShowPcieCommand(st.model, st.gpu), gm.bus_id.value_or("BUS")));
  return f;
}

std::optional<Finding> NvlinkFinding(const GpuMetrics& gm, const std::vector<SuspectRank>& suspects,
                                     const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  if (!gm.nvlink_up || !gm.nvlink_expected || *gm.nvlink_up >= *gm.nvlink_expected)
    return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuNvlinkDown;
  f.entity = GpuEntity(st);
  f.cause = "nvlink_down";
  f.message = fmt::format("{}: {} NVLinks active, its peers have {:.0f}", GpuName(st),
                          *gm.nvlink_up, *gm.nvlink_expected);
  f.evidence.push_back(SourceOf(gm, f.message));
  Relate(f, st, suspects, o.confidence.nvlink_down, o);
  f.next_steps.push_back(fmt::format(
      "check NVLink of {} GPU {}: `nvidia-smi nvlink --status -i {}` and `nvidia-smi nvlink "
      "-e -i {}`; run `dcgmi diag -r 2`",
      st.host.value_or("the host"), st.gpu, st.gpu, st.gpu));
  return f;
}

// Errors: supporting evidence.
std::optional<Finding> ErrorsFinding(const GpuMetrics& gm, const std::vector<SuspectRank>& suspects,
                                     const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  if (gm.errors.empty()) return std::nullopt;
  Finding f;
  f.code = FindingCode::kGpuErrors;
  f.entity = GpuEntity(st);
  f.cause = "gpu_errors";
  f.message = GpuName(st) + ": ";
  for (size_t k = 0; k < gm.errors.size(); ++k) f.message += (k ? "; " : "") + gm.errors[k];
  f.evidence.push_back(SourceOf(gm, f.message));
  Relate(f, st, suspects, o.confidence.errors, o);
  f.next_steps.push_back(fmt::format(
      "run `dcgmi diag -r 2` (or -r 3) on {} and check `dmesg | grep -i xid`; drain the node "
      "if errors persist",
      st.host.value_or("the host")));
  return f;
}

// The enforced limit changed during the run, and no power finding tells it:
// an event on the timeline (a limit raised back, or lowered on a GPU that
// stayed fast).
std::optional<Finding> LimitChangeFinding(const GpuMetrics& gm, const HardwareDetectorOptions& o) {
  const GpuStats& st = gm.stats;
  if (st.power_limit_changes.empty()) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kGpuPowerLimitChanged);
  f.entity = GpuEntity(st);
  f.confidence = o.confidence.power_limit_changed;
  if (!st.time_is_approximate) f.onset_time = st.power_limit_changes.front().time_ns;
  std::string list;
  for (size_t k = 0; k < st.power_limit_changes.size(); ++k) {
    const PowerLimitChange& c = st.power_limit_changes[k];
    std::string one =
        fmt::format("{} from {:.0f} W to {:.0f} W {}", c.to_w < c.from_w ? "lowered" : "raised",
                    c.from_w, c.to_w, When(st, c.time_ns));
    if (k < 3) list += (k ? "; " : "") + one;
    f.evidence.push_back(Evidence{"enforced power limit " + one, c.src});
  }
  if (st.power_limit_changes.size() > 3)
    list += fmt::format("; {} more changes", st.power_limit_changes.size() - 3);
  f.message = GpuName(st) + ": enforced power limit changed during the run: " + list;
  return f;
}

// Victims that look idle.
std::optional<Finding> IdleVictimsFinding(const std::vector<GpuStats>& gpus,
                                          const std::vector<SuspectRank>& suspects,
                                          const HardwareDetectorOptions& o) {
  if (suspects.empty()) return std::nullopt;
  size_t idle = 0;
  std::string example;
  for (const GpuStats& st : gpus) {
    if (IsSuspect(suspects, st.rank) || !st.util_pct_median ||
        *st.util_pct_median >= o.idle_victim_util_pct) {
      continue;
    }
    if (!st.rank) continue;
    if (idle++ == 0) example = fmt::format("{} at {:.0f}%", GpuName(st), *st.util_pct_median);
  }
  if (idle == 0) return std::nullopt;
  Finding f = MakeFinding(FindingCode::kGpuIdleWaiting);
  f.entity.job = true;
  f.confidence = o.confidence.idle_waiting;
  f.message = fmt::format(
      "{} GPU{} of healthy ranks show low utilisation (e.g. {}): they wait for the slow rank; "
      "low utilisation is not evidence by itself",
      idle, idle == 1 ? "" : "s", example);
  return f;
}

}  // namespace

HardwareMetrics MeasureHardware(const Run& run, const RankMap& ranks,
                                const std::vector<SuspectRank>& suspects,
                                const HardwareDetectorOptions& o) {
  const std::vector<GpuRecord>& gpus = run.hardware.gpus;
  std::vector<GpuStats> all;
  for (const GpuRecord& g : gpus) all.push_back(Measure(g, ranks, o));
  // A GPU's record by host and index; the last one when several match.
  std::map<std::pair<std::optional<std::string>, int32_t>, const GpuRecord*> record_of;
  for (const GpuRecord& c : gpus) record_of[{c.host, c.index}] = &c;
  PeerValues peers;
  peers.sm_clock_mhz = PeerMedians(all, [](const GpuStats& x) { return x.sm_clock_mhz; });
  peers.power_limit_w = PeerMedians(all, [](const GpuStats& x) { return x.power_limit_w; });
  peers.temp_c_max = PeerMedians(all, [](const GpuStats& x) { return x.temp_c_max; });
  peers.thermal_history_s = PeerMedians(all, [](const GpuStats& x) { return x.thermal_history_s; });
  peers.power_history_s = PeerMedians(all, [](const GpuStats& x) { return x.power_history_s; });
  peers.nvlink_up = PeerMedians(all, [&](const GpuStats& x) -> std::optional<double> {
    auto it = record_of.find({x.host, x.gpu});
    if (it == record_of.end() || !it->second->facts.nvlink_up) return std::nullopt;
    return static_cast<double>(*it->second->facts.nvlink_up);
  });
  HardwareMetrics m;
  m.gpus.resize(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    m.gpus[i].stats = all[i];
    MeasureAgainstPeers(gpus, i, peers, suspects, o, m.gpus[i]);
  }
  return m;
}

HardwareAnalysis DecideHardware(const HardwareMetrics& m, const std::vector<SuspectRank>& suspects,
                                const HardwareDetectorOptions& o) {
  HardwareAnalysis a;
  for (const GpuMetrics& gm : m.gpus) a.gpus.push_back(gm.stats);
  for (const GpuMetrics& gm : m.gpus) {
    ClockState clock = ClockOf(gm, o);
    std::optional<Finding> thermal = ThermalFinding(gm, clock, suspects, o);
    if (!thermal) thermal = ThermalTailFinding(gm, suspects, o);
    bool changes_told = false;
    std::optional<Finding> power =
        thermal ? std::nullopt : PowerFinding(gm, clock, suspects, o, changes_told);
    std::optional<Finding> clocks =
        thermal || power ? std::nullopt : ClocksFinding(gm, clock, suspects, o);
    std::optional<Finding> history =
        thermal || power ? std::nullopt : ThrottleHistoryFinding(gm, o);
    for (std::optional<Finding>* f : {&thermal, &power, &clocks, &history}) {
      if (*f) a.findings.push_back(std::move(**f));
    }
    if (!changes_told) {
      if (std::optional<Finding> f = LimitChangeFinding(gm, o)) a.findings.push_back(std::move(*f));
    }
    if (std::optional<Finding> f = PcieFinding(gm, suspects, o))
      a.findings.push_back(std::move(*f));
    if (std::optional<Finding> f = NvlinkFinding(gm, suspects, o))
      a.findings.push_back(std::move(*f));
    if (std::optional<Finding> f = ErrorsFinding(gm, suspects, o))
      a.findings.push_back(std::move(*f));
  }
  if (std::optional<Finding> f = IdleVictimsFinding(a.gpus, suspects, o))
    a.findings.push_back(std::move(*f));
  return a;
}

HardwareAnalysis AnalyzeHardware(const Run& run, const RankMap& ranks,
                                 const std::vector<SuspectRank>& suspects,
                                 const HardwareDetectorOptions& o) {
  return DecideHardware(MeasureHardware(run, ranks, suspects, o), suspects, o);
}

}  // namespace laggard
