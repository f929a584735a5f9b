// Hardware detector: *why* is a GPU slow — thermal throttling, a power cap,
// low clocks, a downgraded PCIe link, missing NVLinks, hardware errors.
// The verdict stage (AnalyzeRun) calls AnalyzeHardware() with the ranks the
// step and trace detectors suspect (analysis/suspects.h); tests call its parts.
//
// Assumption (the article's warning): no single metric can be trusted alone
// and utilisation lies (a victim looks idle because it waits). So every rule
// compares a GPU with its same-model peers and with time, and a hardware
// anomaly is tied to the culprit only through the rank that runs on the GPU
// (rank_map.h) and the time of its slow steps.
//
// It runs in two steps: MeasureHardware() computes the metrics of every
// GPU (GpuMetrics), DecideHardware() applies the rules below to them.
//
// Metrics (per GPU, over its samples; "under load" = utilisation >=
// load_util_pct, 50%, or every sample when utilisation was not recorded):
//   sm_clock    median SM clock under load; peers' value = median over the
//               other GPUs of the same model (>= 2 of them), else the GPU's max
//   clock_gap   1 - sm_clock / peers' sm_clock
//   hot         share of samples at >= hot_temp_c (90 C) or at/above the
//               GPU's slowdown temperature
//   pinned      share of loaded samples drawing >= power_pinned (97%) of the
//               power limit
//   reasons     share of samples with thermal / power clock-event reasons
//   thermal tail the trailing run of loaded samples with a thermal reason
//   pcie        lowest generation in a loaded sample, lowest width in any,
//               against the capability (the lower of GPU's and slot's)
//   nvlink      active links, against the same-model peers' median
//   overlap     whether samples anomalous for a cause fall into the slow
//               steps of the GPU's rank, +- time_slack_ns (5 s: two hosts'
//               clocks and a 1 s sampling interval)
// Decisions (defaults, origin):
//   thermal     hot or thermal reasons in >= min_share (10%) of samples,
//               and clock_gap >= clock_gap (5%) or thermal reasons active
//               (article: >= 90 C with the SM clock pulled down); or,
//               throttling that began near the end of the capture: thermal
//               reasons in each of the last >= thermal_tail_samples (3: one
//               could be a transient) loaded samples with their SM clock >=
//               thermal_tail_clock_gap (2%: a GPU boosting normally sits
//               within ~1% of its peers) below the peers' (a warning)
//   power_cap   enforced limit >= limit_gap (5%) below the default or below
//               peers'; or pinned/SW power cap in >= min_power_share (20%)
//               of loaded samples with clock_gap >= 5% (article: nvidia-smi
//               -pl, weak supply)
//               A limit lowered during the run is named with its time and
//               line (the onset), and the lowest limit is the one compared.
//   limit change any other change of the enforced limit by >= limit_change_w
//               (1 W: limits are set in whole watts) is an info event at its
//               time, not a disagreement between inputs
//   clocks      clock_gap >= 5% (clock_gap_vs_max, 10%, against max clock)
//               with no thermal or power reason; or applications clocks
//               locked below app_clock_locked_ratio (90%) of max
//   pcie        width below max (always: lanes are not power-managed) or
//               generation below max under load; a lower generation while
//               idle is normal power saving
//   nvlink      fewer active links than the peers' median
//   history     one snapshot of the driver's clock-event counters (no
//               share between samples, no thermal or power finding): held
//               down for heat or power >= min_throttle_history_s (600 s)
//               since the driver loaded and >= throttle_history_vs_peers
//               (10x) its same-model peers' median (at least 60 s of it), a
//               warning; with no peers, >= lone_throttle_history_s (1 h),
//               info. A history, not the run: it says where to look, never
//               blames a rank (ThrottleHistoryFinding, hardware_history.cc)
//   errors      uncorrectable ECC, pending retirement, remapping failure,
//               XIDs, dcgmi diag failure (supporting evidence only)
//   idle victims GPUs of healthy ranks with median utilisation <
//               idle_victim_util_pct (80%) while some rank is suspected: they
//               wait, which is not evidence (an info finding)
// Thresholds without an origin above are judgement.
// Time correlation: an anomaly whose samples overlap the slow steps of the
// GPU's rank sets Finding::overlaps_slow_steps; a hot GPU whose rank is not
// slow is a warning ("not blamed"), never the culprit.
//
// Thread-safety: every function here is a pure function of its inputs.

#ifndef LAGGARD_ANALYSIS_HARDWARE_HARDWARE_DETECTOR_H_
#define LAGGARD_ANALYSIS_HARDWARE_HARDWARE_DETECTOR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/common/finding.h"
#include "analysis/common/rank_map.h"
#include "analysis/suspects.h"
#include "model/run.h"

namespace laggard {

struct HardwareDetectorOptions {
  double hot_temp_c = 90;
  double load_util_pct = 50;
  double clock_gap = 0.05;
  double clock_gap_vs_max = 0.10;
  double power_pinned = 0.97;
  double limit_gap = 0.05;
  double min_share = 0.10;  // of samples, for thermal reasons / hot
  double limit_change_w = 1.0;
  double min_power_share = 0.20;  // of loaded samples, for pinned / power reasons
  size_t thermal_tail_samples = 3;
  double thermal_tail_clock_gap = 0.02;
  double app_clock_locked_ratio = 0.9;
  double min_throttle_history_s = 600;
  double throttle_history_vs_peers = 10;
  double lone_throttle_history_s = 3600;
  double idle_victim_util_pct = 80;
  DurationNs time_slack_ns = 5'000'000'000;
  // Confidence each finding starts at (0..1): a judgement of how often the
  // rule is right when it fires; docs/detectors.md gives the reasons.
  struct Confidences {
    double thermal = 0.6;                    // gpu.thermal, before the bonuses
    double thermal_reason_bonus = 0.1;       // gpu.thermal, reason in >= min_share
    double thermal_tail = 0.45;              // gpu.thermal, near the capture's end
    double power_cap = 0.55;                 // gpu.power_cap, before the bonuses
    double power_cap_lowered_bonus = 0.15;   // gpu.power_cap, limit lowered
    double clocks_low = 0.5;                 // gpu.clocks_low, before the bonuses
    double clocks_locked_bonus = 0.1;        // gpu.clocks_low, app clocks locked
    double clock_low_bonus = 0.15;           // gpu.thermal / power_cap / clocks_low: SM clock low
    double not_during_slow_steps_max = 0.4;  // a suspect GPU's finding, not in its slow steps
    double pcie_downgrade = 0.75;            // gpu.pcie_downgrade
    double nvlink_down = 0.75;               // gpu.nvlink_down
    double errors = 0.6;                     // gpu.errors
    double power_limit_changed = 0.9;        // gpu.power_limit_changed
    double idle_waiting = 0.6;               // gpu.idle_waiting
    double throttle_history = 0.5;           // gpu.throttle_history, against peers
    double throttle_history_no_peers = 0.3;  // gpu.throttle_history, no peers
  };
  Confidences confidence;
};

// A change of the enforced power limit between two consecutive samples of
// one GPU (`nvidia-smi -pl`, a power-capping daemon, the BMC).
struct PowerLimitChange {
  TimeNs time_ns = 0;  // the first sample with the new limit
  double from_w = 0;
  double to_w = 0;
  SourceRef src;  // that sample's line
};

struct GpuStats {
  std::optional<std::string> host;
  int32_t gpu = 0;
  std::optional<int32_t> rank;
  std::optional<std::string> model;
  size_t samples = 0;
  size_t loaded_samples = 0;
  std::optional<double> sm_clock_mhz;       // median under load
  std::optional<double> peer_sm_clock_mhz;  // what it is compared with
  std::optional<double> temp_c_max;
  std::optional<double> temp_c_median;
  std::optional<double> power_w_median;
  std::optional<double> power_limit_w;  // enforced, the latest sample's
  // Changes of the enforced limit, by time; empty when it never changed.
  std::vector<PowerLimitChange> power_limit_changes;
  // With changes: the median loaded SM clock while the lowest limit was in
  // force (the whole-run median hides a cap that was lifted again).
  std::optional<double> capped_sm_clock_mhz;
  std::optional<double> util_pct_median;
  double hot_share = 0;
  double thermal_reason_share = 0;
  double power_reason_share = 0;
  double pinned_share = 0;
  // From the driver's violation counters (GpuSample::*_violation_ns): the
  // time held down for heat (thermal) or power (SW power cap and the HW
  // brake) over the time between samples that both have the counter, summed
  // over consecutive pairs (a counter that went back, a driver reload, is
  // skipped); nullopt without two such samples. *_counter_span_ns: that
  // time.
  std::optional<double> thermal_counter_share;
  std::optional<double> power_counter_share;
  DurationNs thermal_counter_span_ns = 0;
  DurationNs power_counter_span_ns = 0;
  // The latest counters, seconds since the driver loaded (thermal: SW + HW
  // slowdown; power: SW cap + HW brake), and whether the latest sample with
  // reasons had that reason active.
  std::optional<double> thermal_history_s;
  std::optional<double> power_history_s;
  bool thermal_reason_now = false;
  bool power_reason_now = false;
  // Thermal slowdown reasons in every one of the last loaded samples (by time):
  // how many, from when, and the median loaded SM clock among them.
  size_t thermal_tail_samples = 0;
  std::optional<TimeNs> thermal_tail_from_ns;
  std::optional<double> thermal_tail_sm_clock_mhz;
  bool time_is_approximate = false;
};

struct HardwareAnalysis {
  std::vector<GpuStats> gpus;
  std::vector<Finding> findings;
};

// What MeasureHardware() measures of one GPU: its GpuStats (with
// peer_sm_clock_mhz) and what the rules compare them with.
struct GpuMetrics {
  GpuStats stats;
  bool peer_is_max = false;         // no same-model peers: compared with its max clock
  std::optional<double> clock_gap;  // 1 - sm_clock / peer_sm_clock
  std::optional<double> peer_power_limit_w;
  std::optional<double> peer_temp_c_max;  // median of the same-model peers' peaks
  // Median of the same-model peers' GpuStats::*_history_s.
  std::optional<double> peer_thermal_history_s;
  std::optional<double> peer_power_history_s;
  std::optional<double> default_power_limit_w;
  std::optional<double> app_sm_clock_mhz;
  std::optional<double> max_sm_clock_mhz;
  std::optional<int32_t> pcie_gen_max;  // the lower of the GPU's and the slot's
  std::optional<int32_t> pcie_width_max;
  std::optional<int32_t> pcie_gen_loaded;  // lowest in a loaded sample, or current when busy
  std::optional<int32_t> pcie_width_seen;  // lowest in any sample, or current
  std::optional<std::string> bus_id;
  std::optional<int32_t> nvlink_up;
  std::optional<double> nvlink_expected;  // peers' median, else links present
  std::vector<std::string> errors;        // in words, in the order of the rules
  // Overlap with the slow steps of the GPU's rank (nullopt: not suspected,
  // or times cannot be compared) of samples that are hot or thermally
  // throttled; pinned at the power limit or SW power capped; loaded with
  // the SM clock below the clock rule's threshold; any sample.
  std::optional<bool> thermal_overlap;
  std::optional<bool> power_overlap;
  std::optional<bool> clock_overlap;
  std::optional<bool> any_overlap;
  // The first hot / power-pinned / low-clock sample (the same tests), the
  // onset of its finding on the merged timeline; nullopt when there is none
  // or sample times are approximate.
  std::optional<TimeNs> thermal_from_ns;
  std::optional<TimeNs> power_from_ns;
  std::optional<TimeNs> clock_from_ns;
  std::optional<SourceRef> source;  // of the GPU's facts, else its first sample
};

struct HardwareMetrics {
  std::vector<GpuMetrics> gpus;  // in run.hardware.gpus order
};

HardwareMetrics MeasureHardware(const Run& run, const RankMap& ranks,
                                const std::vector<SuspectRank>& suspects,
                                const HardwareDetectorOptions& options);
// "GPU 3 of node-07 (rank 27)"; the finding entity of a GPU; whether a
// sample has a thermal slowdown reason (HW or SW) active.
std::string GpuName(const GpuStats& g);
Entity GpuEntity(const GpuStats& g);
bool ThermalReasonActive(const GpuSample& s);

// GpuStats' counter shares and spans, histories and reasons now, from the
// samples' violation counters (hardware_counters.cc).
void MeasureClockEventCounters(const GpuRecord& g, GpuStats& st);

// "; its clocks were held down for heat 34% of the 60 s between samples
// (the driver's counters)", and ", though no sample caught the reason
// active" when `sampled_share` is 0 (hardware_counters.cc).
std::string ThrottledShareWords(double share, DurationNs span, std::string_view why,
                                double sampled_share);

// gpu.throttle_history of one GPU (the "history" decision above;
// hardware_counters.cc).
std::optional<Finding> ThrottleHistoryFinding(const GpuMetrics& gm,
                                              const HardwareDetectorOptions& options);
// Findings per GPU in run order (thermal, power cap, clocks, PCIe, NVLink,
// errors), then the idle victims; with every GPU's stats.
HardwareAnalysis DecideHardware(const HardwareMetrics& metrics,
                                const std::vector<SuspectRank>& suspects,
                                const HardwareDetectorOptions& options);

// MeasureHardware, then DecideHardware.
HardwareAnalysis AnalyzeHardware(const Run& run, const RankMap& ranks,
                                 const std::vector<SuspectRank>& suspects,
                                 const HardwareDetectorOptions& options);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HARDWARE_HARDWARE_DETECTOR_H_
