// The DCGM field catalogue: the DCGM fields laggard knows, by field id
// (dcgm_fields.h, `dcgmi dmon -e 150,155`), by name (DCGM_FI_DEV_GPU_TEMP,
// the dcgm-exporter metric name) and by the short name `dcgmi dmon` prints
// as its column header (TMPTR), and where each value goes in the model.
//
// Used by the dcgmi dmon reader (dcgmi_dmon.cc) and the dcgm-exporter reader
// (dcgm_exporter.cc). Ids, names and short names come from DCGM's
// dcgm_fields.h and dcgmlib/src/dcgm_fields.cpp; units are DCGM's:
//   - temperatures C, clocks MHz, power W (doubles), utilisation %;
//   - DEV_PCIE_TX/RX_THROUGHPUT KB/s (NVML's PCIe throughput);
//   - PROF_* activities are fractions 0..1 (stored x100);
//   - PROF_PCIE/NVLINK_*_BYTES are rates in bytes/s;
//   - DEV_NVLINK_BANDWIDTH_TOTAL is MB/s (DCGM's unit for the field);
//   - DEV_*_VIOLATION are cumulative ns (NVML's perf-policy counters; DCGM's
//     headers before 4.x said "usec", DCGM 4 and go-dcgm say ns, and NVML,
//     which DCGM reads them from, reports ns).
//
// Thread-safety: the catalogue is immutable; all functions are pure.

#ifndef LAGGARD_INGEST_DCGM_DCGM_FIELDS_H_
#define LAGGARD_INGEST_DCGM_DCGM_FIELDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "model/hardware.h"

namespace laggard {

// Where a DCGM value goes.
enum class DcgmSink : uint8_t {
  kUnused,  // a field DCGM has and laggard does not use
  kTempC,
  kMemTempC,
  kSmClockMhz,
  kMemClockMhz,
  kPowerW,
  kPowerMgmtLimitW,      // sample power limit unless an enforced limit is given
  kEnforcedPowerLimitW,  // sample power limit and facts.enforced_power_limit_w
  kDefaultPowerLimitW,
  kMinPowerLimitW,
  kMaxPowerLimitW,
  kUtilPct,
  kMemUtilPct,
  kPcieTxKbS,  // DEV_PCIE_TX_THROUGHPUT; PROF bytes win over it
  kPcieRxKbS,
  kPcieTxBytesS,  // PROF_PCIE_TX_BYTES
  kPcieRxBytesS,
  kPcieGen,
  kPcieWidth,
  kPcieGenMax,
  kPcieWidthMax,
  kClockEvents,
  kXid,  // the last XID seen; 0 = none
  kEccDbeVolatile,
  kEccDbeAggregate,
  kRetiredPagesDbe,
  kRetiredPagesPending,
  kRemappedRowsUncorrectable,
  kRowRemapFailure,
  kMaxSmClockMhz,
  kMaxMemClockMhz,
  kAppSmClockMhz,
  kSlowdownTempC,
  kShutdownTempC,
  kMaxOperatingTempC,
  kPowerViolationNs,
  kThermalViolationNs,
  kSyncBoostViolationNs,
  kBoardLimitViolationNs,
  kLowUtilViolationNs,
  kReliabilityViolationNs,
  kGrEngineActive,  // fractions 0..1
  kSmActive,
  kSmOccupancy,
  kTensorActive,
  kDramActive,
  kNvlinkTxBytesS,
  kNvlinkRxBytesS,
  kNvlinkTotalMbS,
};

struct DcgmField {
  uint16_t id;
  std::string_view name;        // without the "DCGM_FI_" prefix: "DEV_GPU_TEMP"
  std::string_view short_name;  // dcgmi dmon column header: "TMPTR"
  DcgmSink sink;
  bool fp64;  // DCGM_FT_DOUBLE (blank is 2^47), else DCGM_FT_INT64 (blank near 2^63)
};

const DcgmField* DcgmFieldById(int64_t id);
// Accepts "DCGM_FI_DEV_GPU_TEMP" and "DEV_GPU_TEMP"; case-sensitive, as
// DCGM and dcgm-exporter print them.
const DcgmField* DcgmFieldByName(std::string_view name);
// Case-insensitive ("TMPTR").
const DcgmField* DcgmFieldByShortName(std::string_view short_name);

// Whether `value` is one of DCGM's "blank" sentinels (no data), which DCGM
// stores in place of a value: 2^47 and up for doubles, 2^63 - 16 and up for
// integers.
bool IsDcgmBlank(const DcgmField& field, double value);

enum class DcgmApply : uint8_t { kApplied, kNoValue, kUnused, kBadValue };

// Stores `value` (in DCGM's unit) where `field` goes: into `sample` for
// time series, into `facts` for static facts (latest value wins, error
// counters keep their maximum, XIDs are collected). NaN, infinities and
// blanks are unknown values, like "N/A": nothing is stored (kNoValue). A
// field laggard does not use returns kUnused. A value that cannot be right
// (negative clock, fractional bitmask) returns kBadValue, the reason in `why`.
DcgmApply ApplyDcgmValue(const DcgmField& field, double value, GpuSample& sample, GpuFacts& facts,
                         std::string& why);

}  // namespace laggard

#endif  // LAGGARD_INGEST_DCGM_DCGM_FIELDS_H_
