#include "ingest/dcgm/dcgm_fields.h"

#include <algorithm>
#include <cmath>

#include "base/text.h"

namespace laggard {
namespace {

using S = DcgmSink;

// Ids and short names from DCGM's dcgm_fields.h / dcgm_fields.cpp. Two
// names for one id are both listed (DCGM renamed CLOCK_THROTTLE_REASONS to
// CLOCKS_EVENT_REASONS, NVLINK_BANDWIDTH_TOTAL to NVLINK_THROUGHPUT_TOTAL);
// the first is the one DcgmFieldById() returns.
constexpr DcgmField kFields[] = {
    {100, "DEV_SM_CLOCK", "SMCLK", S::kSmClockMhz, false},
    {101, "DEV_MEM_CLOCK", "MMCLK", S::kMemClockMhz, false},
    {102, "DEV_VIDEO_CLOCK", "VICLK", S::kUnused, false},
    {110, "DEV_APP_SM_CLOCK", "SACLK", S::kAppSmClockMhz, false},
    {111, "DEV_APP_MEM_CLOCK", "MACLK", S::kUnused, false},
    {112, "DEV_CLOCK_THROTTLE_REASONS", "DVCCTR", S::kClockEvents, false},
    {112, "DEV_CLOCKS_EVENT_REASONS", "", S::kClockEvents, false},
    {113, "DEV_MAX_SM_CLOCK", "SMMAX", S::kMaxSmClockMhz, false},
    {114, "DEV_MAX_MEM_CLOCK", "MMMAX", S::kMaxMemClockMhz, false},
    {115, "DEV_MAX_VIDEO_CLOCK", "VIMAX", S::kUnused, false},
    {120, "DEV_AUTOBOOST", "ATBST", S::kUnused, false},
    {140, "DEV_MEMORY_TEMP", "MMTMP", S::kMemTempC, false},
    {150, "DEV_GPU_TEMP", "TMPTR", S::kTempC, false},
    {151, "DEV_MEM_MAX_OP_TEMP", "GMMOT", S::kUnused, false},
    {152, "DEV_GPU_MAX_OP_TEMP", "GGMOT", S::kMaxOperatingTempC, false},
    {155, "DEV_POWER_USAGE", "POWER", S::kPowerW, true},
    {156, "DEV_TOTAL_ENERGY_CONSUMPTION", "TOTEC", S::kUnused, false},
    {157, "DEV_POWER_USAGE_INSTANT", "", S::kUnused, true},
    {158, "DEV_SLOWDOWN_TEMP", "SDTMP", S::kSlowdownTempC, false},
    {159, "DEV_SHUTDOWN_TEMP", "SHTMP", S::kShutdownTempC, false},
    {160, "DEV_POWER_MGMT_LIMIT", "PMLMT", S::kPowerMgmtLimitW, true},
    {161, "DEV_POWER_MGMT_LIMIT_MIN", "PMMIN", S::kMinPowerLimitW, true},
    {162, "DEV_POWER_MGMT_LIMIT_MAX", "PMMAX", S::kMaxPowerLimitW, true},
    {163, "DEV_POWER_MGMT_LIMIT_DEF", "PMDEF", S::kDefaultPowerLimitW, true},
    {164, "DEV_ENFORCED_POWER_LIMIT", "EPLMT", S::kEnforcedPowerLimitW, true},
    {190, "DEV_PSTATE", "PSTAT", S::kUnused, false},
    {191, "DEV_FAN_SPEED", "FANSP", S::kUnused, false},
    {200, "DEV_PCIE_TX_THROUGHPUT", "TXTPT", S::kPcieTxKbS, false},
    {201, "DEV_PCIE_RX_THROUGHPUT", "RXTPT", S::kPcieRxKbS, false},
    {202, "DEV_PCIE_REPLAY_COUNTER", "RPCTR", S::kUnused, false},
    {203, "DEV_GPU_UTIL", "GPUTL", S::kUtilPct, false},
    {204, "DEV_MEM_COPY_UTIL", "MCUTL", S::kMemUtilPct, false},
    {206, "DEV_ENC_UTIL", "ECUTL", S::kUnused, false},
    {207, "DEV_DEC_UTIL", "DCUTL", S::kUnused, false},
    {230, "DEV_XID_ERRORS", "XIDER", S::kXid, false},
    {235, "DEV_PCIE_MAX_LINK_GEN", "PCIMG", S::kPcieGenMax, false},
    {236, "DEV_PCIE_MAX_LINK_WIDTH", "PCIMW", S::kPcieWidthMax, false},
    {237, "DEV_PCIE_LINK_GEN", "PCILG", S::kPcieGen, false},
    {238, "DEV_PCIE_LINK_WIDTH", "PCILW", S::kPcieWidth, false},
    {240, "DEV_POWER_VIOLATION", "PVIOL", S::kPowerViolationNs, false},
    {241, "DEV_THERMAL_VIOLATION", "TVIOL", S::kThermalViolationNs, false},
    {242, "DEV_SYNC_BOOST_VIOLATION", "SBVIO", S::kSyncBoostViolationNs, false},
    {243, "DEV_BOARD_LIMIT_VIOLATION", "BLVIO", S::kBoardLimitViolationNs, false},
    {244, "DEV_LOW_UTIL_VIOLATION", "LUVIO", S::kLowUtilViolationNs, false},
    {245, "DEV_RELIABILITY_VIOLATION", "RVIOL", S::kReliabilityViolationNs, false},
    {246, "DEV_TOTAL_APP_CLOCKS_VIOLATION", "TAPCV", S::kUnused, false},
    {247, "DEV_TOTAL_BASE_CLOCKS_VIOLATION", "TAPBC", S::kUnused, false},
    {250, "DEV_FB_TOTAL", "FBTTL", S::kUnused, false},
    {251, "DEV_FB_FREE", "FBFRE", S::kUnused, false},
    {252, "DEV_FB_USED", "FBUSD", S::kUnused, false},
    {310, "DEV_ECC_SBE_VOL_TOTAL", "ESVTL", S::kUnused, false},
    {311, "DEV_ECC_DBE_VOL_TOTAL", "EDVTL", S::kEccDbeVolatile, false},
    {312, "DEV_ECC_SBE_AGG_TOTAL", "ESATL", S::kUnused, false},
    {313, "DEV_ECC_DBE_AGG_TOTAL", "EDATL", S::kEccDbeAggregate, false},
    {390, "DEV_RETIRED_SBE", "RPSBE", S::kUnused, false},
    {391, "DEV_RETIRED_DBE", "RPDBE", S::kRetiredPagesDbe, false},
    {392, "DEV_RETIRED_PENDING", "RPPEN", S::kRetiredPagesPending, false},
    {393, "DEV_UNCORRECTABLE_REMAPPED_ROWS", "URMPS", S::kRemappedRowsUncorrectable, false},
    {394, "DEV_CORRECTABLE_REMAPPED_ROWS", "CRMPS", S::kUnused, false},
    {395, "DEV_ROW_REMAP_FAILURE", "RRF", S::kRowRemapFailure, false},
    {396, "DEV_ROW_REMAP_PENDING", "RRP", S::kUnused, false},
    {449, "DEV_NVLINK_BANDWIDTH_TOTAL", "NBWLT", S::kNvlinkTotalMbS, false},
    {449, "DEV_NVLINK_THROUGHPUT_TOTAL", "", S::kNvlinkTotalMbS, false},
    {1001, "PROF_GR_ENGINE_ACTIVE", "GRACT", S::kGrEngineActive, true},
    {1002, "PROF_SM_ACTIVE", "SMACT", S::kSmActive, true},
    {1003, "PROF_SM_OCCUPANCY", "SMOCC", S::kSmOccupancy, true},
    {1004, "PROF_PIPE_TENSOR_ACTIVE", "TENSO", S::kTensorActive, true},
    {1005, "PROF_DRAM_ACTIVE", "DRAMA", S::kDramActive, true},
    {1006, "PROF_PIPE_FP64_ACTIVE", "FP64A", S::kUnused, true},
    {1007, "PROF_PIPE_FP32_ACTIVE", "FP32A", S::kUnused, true},
    {1008, "PROF_PIPE_FP16_ACTIVE", "FP16A", S::kUnused, true},
    {1009, "PROF_PCIE_TX_BYTES", "PCITX", S::kPcieTxBytesS, false},
    {1010, "PROF_PCIE_RX_BYTES", "PCIRX", S::kPcieRxBytesS, false},
    {1011, "PROF_NVLINK_TX_BYTES", "NVLTX", S::kNvlinkTxBytesS, false},
    {1012, "PROF_NVLINK_RX_BYTES", "NVLRX", S::kNvlinkRxBytesS, false},
};

constexpr double kFp64Blank = 140737488355328.0;     // 2^47, DCGM_FP64_BLANK
constexpr double kInt64Blank = 9223372036854775792.0;  // 0x7ffffffffffffff0, DCGM_INT64_BLANK

// Largest double below which every integer is exact, so a bitmask or
// counter read as a double is still the integer DCGM printed.
constexpr double kExactInt = 9007199254740992.0;  // 2^53

bool IsWholeNumber(double v) { return v >= 0 && v < kExactInt && std::floor(v) == v; }

}  // namespace

const DcgmField* DcgmFieldById(int64_t id) {
  for (const DcgmField& f : kFields) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const DcgmField* DcgmFieldByName(std::string_view name) {
  if (StartsWith(name, "DCGM_FI_")) name.remove_prefix(8);
  for (const DcgmField& f : kFields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const DcgmField* DcgmFieldByShortName(std::string_view short_name) {
  if (short_name.empty()) return nullptr;
  for (const DcgmField& f : kFields) {
    if (!f.short_name.empty() && EqualsIgnoreCase(f.short_name, short_name)) return &f;
  }
  return nullptr;
}

bool IsDcgmBlank(const DcgmField& field, double value) {
  return value >= (field.fp64 ? kFp64Blank : kInt64Blank);
}

DcgmApply ApplyDcgmValue(const DcgmField& field, double v, GpuSample& s, GpuFacts& f,
                         std::string& why) {
  if (field.sink == S::kUnused) return DcgmApply::kUnused;
  if (!std::isfinite(v) || IsDcgmBlank(field, v)) return DcgmApply::kNoValue;
  auto non_negative = [&](std::string_view what) {
    if (v >= 0) return true;
    why = std::string(what) + " is negative";
    return false;
  };
  auto whole = [&](std::string_view what) {
    if (IsWholeNumber(v)) return true;
    why = std::string(what) + " is not a non-negative integer";
    return false;
  };
  auto small_int = [&](std::string_view what, double max) -> std::optional<int32_t> {
    if (!whole(what)) return std::nullopt;
    if (v > max) {
      why = std::string(what) + " is out of range";
      return std::nullopt;
    }
    return static_cast<int32_t>(v);
  };
  auto fraction = [&](std::optional<double>& out, std::string_view what) {
    // Activities are ratios; a little over 1 happens with DCGM's averaging.
    if (v < 0 || v > 1.5) {
      why = std::string(what) + " is not a fraction 0..1";
      return false;
    }
    out = v * 100.0;
    return true;
  };
  auto counter_ns = [&](std::optional<int64_t>& out, std::string_view what) {
    if (!whole(what)) return false;
    out = static_cast<int64_t>(v);
    return true;
  };
  bool ok = true;
  switch (field.sink) {
    case S::kUnused: return DcgmApply::kUnused;
    case S::kTempC: s.temp_c = v; break;
    case S::kMemTempC: s.mem_temp_c = v; break;
    case S::kSmClockMhz:
      if ((ok = non_negative("SM clock"))) s.sm_clock_mhz = v;
      break;
    case S::kMemClockMhz:
      if ((ok = non_negative("memory clock"))) s.mem_clock_mhz = v;
      break;
    case S::kPowerW:
      if ((ok = non_negative("power"))) s.power_w = v;
      break;
    case S::kPowerMgmtLimitW:
      if ((ok = non_negative("power limit")) && !s.power_limit_w) s.power_limit_w = v;
      break;
    case S::kEnforcedPowerLimitW:
      if ((ok = non_negative("enforced power limit")))
        s.power_limit_w = f.enforced_power_limit_w = v;
      break;
    case S::kDefaultPowerLimitW:
      if ((ok = non_negative("default power limit"))) f.default_power_limit_w = v;
      break;
    case S::kMinPowerLimitW:
      if ((ok = non_negative("min power limit"))) f.min_power_limit_w = v;
      break;
    case S::kMaxPowerLimitW:
      if ((ok = non_negative("max power limit"))) f.max_power_limit_w = v;
      break;
    case S::kUtilPct:
      if ((ok = non_negative("GPU utilisation"))) s.util_pct = v;
      break;
    case S::kMemUtilPct:
      if ((ok = non_negative("memory utilisation"))) s.mem_util_pct = v;
      break;
    case S::kPcieTxKbS:
      if ((ok = non_negative("PCIe TX throughput")) && !s.pcie_tx_mb_s) s.pcie_tx_mb_s = v / 1000.0;
      break;
    case S::kPcieRxKbS:
      if ((ok = non_negative("PCIe RX throughput")) && !s.pcie_rx_mb_s) s.pcie_rx_mb_s = v / 1000.0;
      break;
    case S::kPcieTxBytesS:
      if ((ok = non_negative("PCIe TX bytes"))) s.pcie_tx_mb_s = v / 1e6;
      break;
    case S::kPcieRxBytesS:
      if ((ok = non_negative("PCIe RX bytes"))) s.pcie_rx_mb_s = v / 1e6;
      break;
    case S::kPcieGen:
      if (auto g = small_int("PCIe generation", 64)) s.pcie_gen = f.pcie_gen_current = *g;
      else ok = false;
      break;
    case S::kPcieWidth:
      if (auto w = small_int("PCIe width", 1024)) s.pcie_width = f.pcie_width_current = *w;
      else ok = false;
      break;
    case S::kPcieGenMax:
      if (auto g = small_int("PCIe max generation", 64)) f.pcie_gen_max = *g;
      else ok = false;
      break;
    case S::kPcieWidthMax:
      if (auto w = small_int("PCIe max width", 1024)) f.pcie_width_max = *w;
      else ok = false;
      break;
    case S::kClockEvents:
      if ((ok = whole("clock event reasons"))) s.clock_events = static_cast<uint64_t>(v);
      break;
    case S::kXid:
      if ((ok = whole("XID"))) {
        auto xid = static_cast<int64_t>(v);
        if (xid != 0 && std::find(f.xids.begin(), f.xids.end(), xid) == f.xids.end())
          f.xids.push_back(xid);
      }
      break;
    case S::kEccDbeVolatile:
      if ((ok = whole("volatile DBE count")))
        f.ecc_uncorrected_volatile = std::max(f.ecc_uncorrected_volatile.value_or(0),
                                              static_cast<int64_t>(v));
      break;
    case S::kEccDbeAggregate:
      if ((ok = whole("aggregate DBE count")))
        f.ecc_uncorrected_aggregate = std::max(f.ecc_uncorrected_aggregate.value_or(0),
                                               static_cast<int64_t>(v));
      break;
    case S::kRetiredPagesDbe:
      if ((ok = whole("retired pages")))
        f.retired_pages_dbe = std::max(f.retired_pages_dbe.value_or(0), static_cast<int64_t>(v));
      break;
    case S::kRetiredPagesPending:
      if ((ok = whole("pending retired pages")))
        f.retired_pages_pending = f.retired_pages_pending.value_or(false) || v > 0;
      break;
    case S::kRemappedRowsUncorrectable:
      if ((ok = whole("remapped rows")))
        f.remapped_rows_uncorrectable =
            std::max(f.remapped_rows_uncorrectable.value_or(0), static_cast<int64_t>(v));
      break;
    case S::kRowRemapFailure:
      if ((ok = whole("row remap failure")))
        f.remapping_failure = f.remapping_failure.value_or(false) || v > 0;
      break;
    case S::kMaxSmClockMhz:
      if ((ok = non_negative("max SM clock"))) f.max_sm_clock_mhz = v;
      break;
    case S::kMaxMemClockMhz:
      if ((ok = non_negative("max memory clock"))) f.max_mem_clock_mhz = v;
      break;
    case S::kAppSmClockMhz:
      if ((ok = non_negative("applications SM clock"))) f.app_sm_clock_mhz = v;
      break;
    case S::kSlowdownTempC: f.slowdown_temp_c = v; break;
    case S::kShutdownTempC: f.shutdown_temp_c = v; break;
    case S::kMaxOperatingTempC: f.max_operating_temp_c = v; break;
    case S::kPowerViolationNs: ok = counter_ns(s.power_violation_ns, "power violation time"); break;
    case S::kThermalViolationNs:
      ok = counter_ns(s.thermal_violation_ns, "thermal violation time");
      break;
    case S::kSyncBoostViolationNs:
      ok = counter_ns(s.sync_boost_violation_ns, "sync boost violation time");
      break;
    case S::kBoardLimitViolationNs:
      ok = counter_ns(s.board_limit_violation_ns, "board limit violation time");
      break;
    case S::kLowUtilViolationNs:
      ok = counter_ns(s.low_util_violation_ns, "low utilisation violation time");
      break;
    case S::kReliabilityViolationNs:
      ok = counter_ns(s.reliability_violation_ns, "reliability violation time");
      break;
    case S::kGrEngineActive:
      ok = fraction(s.gr_engine_active_pct, "graphics engine activity");
      break;
    case S::kSmActive: ok = fraction(s.sm_active_pct, "SM activity"); break;
    case S::kSmOccupancy: ok = fraction(s.sm_occupancy_pct, "SM occupancy"); break;
    case S::kTensorActive: ok = fraction(s.tensor_active_pct, "tensor pipe activity"); break;
    case S::kDramActive: ok = fraction(s.dram_active_pct, "DRAM activity"); break;
    case S::kNvlinkTxBytesS:
      if ((ok = non_negative("NVLink TX bytes"))) s.nvlink_tx_mb_s = v / 1e6;
      break;
    case S::kNvlinkRxBytesS:
      if ((ok = non_negative("NVLink RX bytes"))) s.nvlink_rx_mb_s = v / 1e6;
      break;
    case S::kNvlinkTotalMbS:
      if ((ok = non_negative("NVLink bandwidth"))) s.nvlink_total_mb_s = v;
      break;
  }
  return ok ? DcgmApply::kApplied : DcgmApply::kBadValue;
}

}  // namespace laggard
