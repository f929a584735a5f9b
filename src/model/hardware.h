// GPU hardware part of the run model: what the nvidia-smi, DCGM and agent
// readers produce and the hardware detector reads.
//
//   HardwareData
//   └── gpus[]            one GpuRecord per (host, GPU index) after Finalize
//         ├── host / index / uuid / bus id, as far as the inputs say
//         ├── facts       static facts: model, max clocks, power limits,
//         │               PCIe generation/width current and max, NVLink
//         │               links, thermal thresholds, ECC / retired pages / XID
//         └── samples[]   time series: temperature, clocks, power, utilisation,
//                         PCIe throughput, clock-event (throttle) reasons
//
// Readers add one GpuRecord per GPU per file through RunBuilder::AddGpu();
// RunBuilder::Finalize() merges records of the same GPU from several files
// (a dmon log and an `nvidia-smi -q` of the same host): facts fill in what is
// unknown, samples are concatenated and sorted by time.
//
// Units are in the field names. Unknown or unsupported values ("[N/A]",
// "[Not Supported]", "-") are std::nullopt, never 0.
//
// Time: a sample's time_ns is absolute (Unix epoch ns) when the tool printed
// a date and time; otherwise it is the offset from the file's first sample
// (row index x interval, 1 s when the interval is unknown) and the record's
// time_is_approximate is set. Absolute and relative samples are never mixed
// in one record.

#ifndef LAGGARD_MODEL_HARDWARE_H_
#define LAGGARD_MODEL_HARDWARE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/source.h"
#include "model/time.h"

namespace laggard {

// Clock-event ("throttle") reasons, with NVML's bit values
// (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*), which
// `nvidia-smi --query-gpu=clocks_event_reasons.active` and DCGM's
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS print as the same bitmask.
namespace clock_event {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermalSlowdown = 0x20;
inline constexpr uint64_t kHwThermalSlowdown = 0x40;
inline constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kDisplayClockSetting = 0x100;
}  // namespace clock_event

// Every reason bit with its name ("sw_power_cap"), in bit order.
struct ClockEventBit {
  uint64_t bit;
  std::string_view name;
};
std::span<const ClockEventBit> ClockEventBits();

// Names of the set bits, e.g. "sw_power_cap,hw_thermal_slowdown".
std::string ClockEventNames(uint64_t reasons);

struct GpuSample {
  TimeNs time_ns = 0;  // see the header comment: absolute or file-relative
  std::optional<double> temp_c;
  std::optional<double> mem_temp_c;
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;  // enforced limit at this time, when printed per sample
  std::optional<double> util_pct;       // GPU (SM activity) utilisation
  std::optional<double> mem_util_pct;
  std::optional<double> pcie_rx_mb_s;
  std::optional<double> pcie_tx_mb_s;
  std::optional<int32_t> pcie_gen;       // current link generation at this time
  std::optional<int32_t> pcie_width;     // current link width (lanes) at this time
  std::optional<uint64_t> clock_events;  // clock_event:: bitmask of active reasons
  std::optional<int32_t> perf_state;     // performance state: 0 for P0 (fastest) .. 15 for P15
  SourceRef src;

  // DCGM profiling metrics (DCGM_FI_PROF_*, dcgmi dmon GRACT/SMACT/...):
  // DCGM prints fractions 0..1 averaged over its sample interval; stored
  // here x100. SM activity is the better "is the GPU busy" signal than
  // util_pct (which is 100% as soon as one kernel runs).
  std::optional<double> gr_engine_active_pct;
  std::optional<double> sm_active_pct;
  std::optional<double> sm_occupancy_pct;
  std::optional<double> tensor_active_pct;
  std::optional<double> dram_active_pct;
  // NVLink throughput: tx / rx payload rates (DCGM_FI_PROF_NVLINK_TX/RX_BYTES)
  // and the total over all links and both directions
  // (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, which DCGM reports in MB/s).
  std::optional<double> nvlink_tx_mb_s;
  std::optional<double> nvlink_rx_mb_s;
  std::optional<double> nvlink_total_mb_s;
  // Cumulative time the clocks were held down by each policy since the
  // driver loaded (DCGM_FI_DEV_*_VIOLATION, NVML's perf-policy counters).
  // Counters: the throttled fraction of an interval is the difference of
  // two samples divided by the time between them.
  std::optional<int64_t> power_violation_ns;
  std::optional<int64_t> thermal_violation_ns;
  std::optional<int64_t> sync_boost_violation_ns;
  std::optional<int64_t> board_limit_violation_ns;
  std::optional<int64_t> low_util_violation_ns;
  std::optional<int64_t> reliability_violation_ns;
  // The hardware power brake's share (nvidia-smi -q "HW Power Braking"):
  // the board or the system asserted the brake, not the driver.
  std::optional<int64_t> power_brake_violation_ns;
};

struct GpuFacts {
  std::optional<std::string> name;  // "NVIDIA H100 80GB HBM3"
  std::optional<std::string> serial;
  std::optional<std::string> driver_version;
  std::optional<double> max_sm_clock_mhz;
  std::optional<double> max_mem_clock_mhz;
  std::optional<double> app_sm_clock_mhz;  // applications clocks (lowered = locked)
  std::optional<double> default_power_limit_w;
  std::optional<double> enforced_power_limit_w;
  std::optional<double> min_power_limit_w;
  std::optional<double> max_power_limit_w;
  std::optional<double> slowdown_temp_c;
  std::optional<double> shutdown_temp_c;
  std::optional<double> max_operating_temp_c;
  std::optional<int32_t> pcie_gen_current;
  std::optional<int32_t> pcie_gen_max;       // the device's capability
  std::optional<int32_t> pcie_gen_host_max;  // the host slot's capability
  std::optional<int32_t> pcie_width_current;
  std::optional<int32_t> pcie_width_max;
  std::optional<int32_t> nvlink_up;         // links active
  std::optional<int32_t> nvlink_total;      // links present
  std::optional<double> nvlink_speed_gb_s;  // per-link speed of the active links
  std::optional<int64_t> ecc_uncorrected_volatile;
  std::optional<int64_t> ecc_uncorrected_aggregate;
  std::optional<int64_t> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<bool> remapping_failure;  // "Remapping Failure Occurred: Yes"
  std::optional<int64_t> remapped_rows_uncorrectable;
  std::optional<bool> remapped_rows_pending;  // a row remap waits for a GPU reset
  std::vector<int64_t> xids;                  // XID codes seen
  std::optional<bool> diag_failed;            // dcgmi diag reported a failure
  std::vector<std::string> diag_messages;     // what dcgmi diag said, one line each
  std::optional<SourceRef> src;               // where most of the facts came from
  // When the GPU was first seen lost (NVML GPU_IS_LOST: fallen off the bus),
  // from agent logs; the earliest time wins when inputs are merged.
  std::optional<TimeNs> lost_at_ns;
};

struct GpuRecord {
  std::optional<std::string> host;
  int32_t index = 0;  // GPU index on its host, as the tool numbers it
  std::optional<std::string> uuid;
  std::optional<std::string> bus_id;        // "00000000:18:00.0"
  std::optional<std::string> mig_instance;  // MIG GPU instance, when the data is per instance
  GpuFacts facts;
  std::vector<GpuSample> samples;
  bool time_is_approximate = false;
  std::vector<uint32_t> files;  // input files that described this GPU
};

// The host's CPUs as `laggard agent` logs them (agent/host_cpu.h,
// agent/host_procs.h): each round's per-core shares and speed probe, and
// each process scan's busy processes and the job's own.
inline constexpr int32_t kMaxCpuNumber = 1 << 20;
inline constexpr int64_t kMaxPid = 1 << 22;  // Linux's PID_MAX_LIMIT

struct CoreReading {
  int32_t cpu = 0;
  std::optional<double> busy;     // share of the round not idle
  std::optional<double> steal;    // share of the round the hypervisor ran another guest
  std::optional<double> probe_s;  // the agent's fixed work on this core, latest
  std::optional<double> speed;    // the host's fastest core's probe / this core's
};

struct HostCpuRound {
  TimeNs time_ns = 0;
  std::optional<double> procs_running;
  std::optional<double> procs_blocked;
  std::vector<CoreReading> cores;
};

struct HostProcReading {
  TimeNs time_ns = 0;
  int64_t pid = 0;
  std::optional<int64_t> ppid;
  std::string comm;
  std::string cmdline;
  double cpu_share = 0;               // of one core, over the scan
  std::vector<int32_t> cpus_allowed;  // empty when not logged
  std::optional<int32_t> last_cpu;
  std::optional<int32_t> rank;  // the job's process of this rank (its step reports' pid)
  SourceRef src;
};

// What puts a reading outside what the agent writes, or "": shares in
// [0, 1], a probe's time in (0, 1 h], a speed in (0, 1], a CPU number in
// [0, 2^20]; a pid in [1, 2^22], a share of a core finite and >= 0 (at
// most 1e5), a rank in [0, kMaxRank], allowed CPUs ascending. The agent-log
// reader refuses such a line and the wire codec such a frame.
std::string CoreReadingProblem(const CoreReading& c);
std::string HostProcReadingProblem(const HostProcReading& p);

// An agent record is the job's when it lies within the job's step times
// (StepTimesOf) widened by this: the agent scans processes every 5 s by
// default, and an agent that ran through several jobs tied their ranks too.
inline constexpr TimeNs kJobSpanSlackNs = 10'000'000'000;

// One host's agent log of one file.
struct HostCpuLog {
  std::string host;                    // "" when neither the lines nor the path name it
  std::vector<HostCpuRound> rounds;    // in file order
  std::vector<HostProcReading> procs;  // in file order
};

struct HardwareData {
  std::vector<GpuRecord> gpus;       // sorted by (host, index) after Finalize
  std::vector<HostCpuLog> host_cpu;  // in file order, then host order

  const GpuRecord* Find(std::string_view host, int32_t index) const;
};

}  // namespace laggard

#endif  // LAGGARD_MODEL_HARDWARE_H_
