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

constexpr double kFp64Blank = 140737488355328.0;       // 2^47, DCGM_FP64_BLANK
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

namespace {

// The checks a value passes before it is stored; a failing one says why in
// `why`, naming the value (`what`).
class ValueCheck {
 public:
  ValueCheck(double v, std::string& why) : v_(v), why_(why) {}

  double v() const { return v_; }

  bool NonNegative(std::string_view what) {
    if (v_ >= 0) return true;
    why_ = std::string(what) + " is negative";
    return false;
  }
  bool Whole(std::string_view what) {
    if (IsWholeNumber(v_)) return true;
    why_ = std::string(what) + " is not a non-negative integer";
    return false;
  }
  std::optional<int32_t> SmallInt(std::string_view what, double max) {
    if (!Whole(what)) return std::nullopt;
    if (v_ > max) {
      why_ = std::string(what) + " is out of range";
      return std::nullopt;
    }
    return static_cast<int32_t>(v_);
  }
  // Activities are ratios, stored as %; a little over 1 happens with DCGM's
  // averaging.
  bool Fraction(std::optional<double>& out, std::string_view what) {
    if (v_ < 0 || v_ > 1.5) {
      why_ = std::string(what) + " is not a fraction 0..1";
      return false;
    }
    out = v_ * 100.0;
    return true;
  }
  bool CounterNs(std::optional<int64_t>& out, std::string_view what) {
    if (!Whole(what)) return false;
    out = static_cast<int64_t>(v_);
    return true;
  }

 private:
  double v_;
  std::string& why_;
};

// Each Apply*() below stores the value of the sinks of one kind and returns
// whether it was right; nullopt for a sink of another kind.

// Readings of a sample: temperatures, clocks, power, utilisation, PCIe and
// NVLink throughput.
std::optional<bool> ApplyReading(DcgmSink sink, ValueCheck& c, GpuSample& s) {
  double v = c.v();
  bool ok = true;
  switch (sink) {
    case S::kTempC: s.temp_c = v; break;
    case S::kMemTempC: s.mem_temp_c = v; break;
    case S::kSmClockMhz:
      if ((ok = c.NonNegative("SM clock"))) s.sm_clock_mhz = v;
      break;
    case S::kMemClockMhz:
      if ((ok = c.NonNegative("memory clock"))) s.mem_clock_mhz = v;
      break;
    case S::kPowerW:
      if ((ok = c.NonNegative("power"))) s.power_w = v;
      break;
    case S::kUtilPct:
      if ((ok = c.NonNegative("GPU utilisation"))) s.util_pct = v;
      break;
    case S::kMemUtilPct:
      if ((ok = c.NonNegative("memory utilisation"))) s.mem_util_pct = v;
      break;
    case S::kPcieTxKbS:
      if ((ok = c.NonNegative("PCIe TX throughput")) && !s.pcie_tx_mb_s) {
        s.pcie_tx_mb_s = v / 1000.0;
      }
      break;
    case S::kPcieRxKbS:
      if ((ok = c.NonNegative("PCIe RX throughput")) && !s.pcie_rx_mb_s) {
        s.pcie_rx_mb_s = v / 1000.0;
      }
      break;
    case S::kPcieTxBytesS:
      if ((ok = c.NonNegative("PCIe TX bytes"))) s.pcie_tx_mb_s = v / 1e6;
      break;
    case S::kPcieRxBytesS:
      if ((ok = c.NonNegative("PCIe RX bytes"))) s.pcie_rx_mb_s = v / 1e6;
      break;
    case S::kNvlinkTxBytesS:
      if ((ok = c.NonNegative("NVLink TX bytes"))) s.nvlink_tx_mb_s = v / 1e6;
      break;
    case S::kNvlinkRxBytesS:
      if ((ok = c.NonNegative("NVLink RX bytes"))) s.nvlink_rx_mb_s = v / 1e6;
      break;
    case S::kNvlinkTotalMbS:
      if ((ok = c.NonNegative("NVLink bandwidth"))) s.nvlink_total_mb_s = v;
      break;
    default: return std::nullopt;
  }
  return ok;
}

// Limits: power limits, maximum and applications clocks, temperature limits.
std::optional<bool> ApplyLimit(DcgmSink sink, ValueCheck& c, GpuSample& s, GpuFacts& f) {
  double v = c.v();
  bool ok = true;
  switch (sink) {
    case S::kPowerMgmtLimitW:
      if ((ok = c.NonNegative("power limit")) && !s.power_limit_w) s.power_limit_w = v;
      break;
    case S::kEnforcedPowerLimitW:
      if ((ok = c.NonNegative("enforced power limit"))) {
        s.power_limit_w = f.enforced_power_limit_w = v;
      }
      break;
    case S::kDefaultPowerLimitW:
      if ((ok = c.NonNegative("default power limit"))) f.default_power_limit_w = v;
      break;
    case S::kMinPowerLimitW:
      if ((ok = c.NonNegative("min power limit"))) f.min_power_limit_w = v;
      break;
    case S::kMaxPowerLimitW:
      if ((ok = c.NonNegative("max power limit"))) f.max_power_limit_w = v;
      break;
    case S::kMaxSmClockMhz:
      if ((ok = c.NonNegative("max SM clock"))) f.max_sm_clock_mhz = v;
      break;
    case S::kMaxMemClockMhz:
      if ((ok = c.NonNegative("max memory clock"))) f.max_mem_clock_mhz = v;
      break;
    case S::kAppSmClockMhz:
      if ((ok = c.NonNegative("applications SM clock"))) f.app_sm_clock_mhz = v;
      break;
    case S::kSlowdownTempC: f.slowdown_temp_c = v; break;
    case S::kShutdownTempC: f.shutdown_temp_c = v; break;
    case S::kMaxOperatingTempC: f.max_operating_temp_c = v; break;
    default: return std::nullopt;
  }
  return ok;
}

// The PCIe link: current generation and width (sample and fact), maximums.
std::optional<bool> ApplyPcieLink(DcgmSink sink, ValueCheck& c, GpuSample& s, GpuFacts& f) {
  std::optional<int32_t> n;
  switch (sink) {
    case S::kPcieGen:
      if ((n = c.SmallInt("PCIe generation", 64))) s.pcie_gen = f.pcie_gen_current = *n;
      break;
    case S::kPcieWidth:
      if ((n = c.SmallInt("PCIe width", 1024))) s.pcie_width = f.pcie_width_current = *n;
      break;
    case S::kPcieGenMax:
      if ((n = c.SmallInt("PCIe max generation", 64))) f.pcie_gen_max = *n;
      break;
    case S::kPcieWidthMax:
      if ((n = c.SmallInt("PCIe max width", 1024))) f.pcie_width_max = *n;
      break;
    default: return std::nullopt;
  }
  return n.has_value();
}

// Health: clock event reasons, XIDs, ECC errors, retired pages, remapped
// rows. Error counts keep their maximum.
std::optional<bool> ApplyHealth(DcgmSink sink, ValueCheck& c, GpuSample& s, GpuFacts& f) {
  double v = c.v();
  bool ok = true;
  auto largest = [&](std::optional<int64_t>& out) {
    out = std::max(out.value_or(0), static_cast<int64_t>(v));
  };
  switch (sink) {
    case S::kClockEvents:
      if ((ok = c.Whole("clock event reasons"))) s.clock_events = static_cast<uint64_t>(v);
      break;
    case S::kXid:
      if ((ok = c.Whole("XID"))) {
        auto xid = static_cast<int64_t>(v);
        if (xid != 0 && std::find(f.xids.begin(), f.xids.end(), xid) == f.xids.end()) {
          f.xids.push_back(xid);
        }
      }
      break;
    case S::kEccDbeVolatile:
      if ((ok = c.Whole("volatile DBE count"))) largest(f.ecc_uncorrected_volatile);
      break;
    case S::kEccDbeAggregate:
      if ((ok = c.Whole("aggregate DBE count"))) largest(f.ecc_uncorrected_aggregate);
      break;
    case S::kRetiredPagesDbe:
      if ((ok = c.Whole("retired pages"))) largest(f.retired_pages_dbe);
      break;
    case S::kRetiredPagesPending:
      if ((ok = c.Whole("pending retired pages"))) {
        f.retired_pages_pending = f.retired_pages_pending.value_or(false) || v > 0;
      }
      break;
    case S::kRemappedRowsUncorrectable:
      if ((ok = c.Whole("remapped rows"))) largest(f.remapped_rows_uncorrectable);
      break;
    case S::kRowRemapFailure:
      if ((ok = c.Whole("row remap failure"))) {
        f.remapping_failure = f.remapping_failure.value_or(false) || v > 0;
      }
      break;
    default: return std::nullopt;
  }
  return ok;
}

// Cumulative violation times (ns) and profiling activities (fractions).
std::optional<bool> ApplyCounter(DcgmSink sink, ValueCheck& c, GpuSample& s) {
  switch (sink) {
    case S::kPowerViolationNs: return c.CounterNs(s.power_violation_ns, "power violation time");
    case S::kThermalViolationNs:
      return c.CounterNs(s.thermal_violation_ns, "thermal violation time");
    case S::kSyncBoostViolationNs:
      return c.CounterNs(s.sync_boost_violation_ns, "sync boost violation time");
    case S::kBoardLimitViolationNs:
      return c.CounterNs(s.board_limit_violation_ns, "board limit violation time");
    case S::kLowUtilViolationNs:
      return c.CounterNs(s.low_util_violation_ns, "low utilisation violation time");
    case S::kReliabilityViolationNs:
      return c.CounterNs(s.reliability_violation_ns, "reliability violation time");
    case S::kGrEngineActive: return c.Fraction(s.gr_engine_active_pct, "graphics engine activity");
    case S::kSmActive: return c.Fraction(s.sm_active_pct, "SM activity");
    case S::kSmOccupancy: return c.Fraction(s.sm_occupancy_pct, "SM occupancy");
    case S::kTensorActive: return c.Fraction(s.tensor_active_pct, "tensor pipe activity");
    case S::kDramActive: return c.Fraction(s.dram_active_pct, "DRAM activity");
    default: return std::nullopt;
  }
}

}  // namespace

DcgmApply ApplyDcgmValue(const DcgmField& field, double v, GpuSample& s, GpuFacts& f,
                         std::string& why) {
  if (field.sink == S::kUnused) return DcgmApply::kUnused;
  if (!std::isfinite(v) || IsDcgmBlank(field, v)) return DcgmApply::kNoValue;
  ValueCheck c(v, why);
  std::optional<bool> ok = ApplyReading(field.sink, c, s);
  if (!ok) ok = ApplyLimit(field.sink, c, s, f);
  if (!ok) ok = ApplyPcieLink(field.sink, c, s, f);
  if (!ok) ok = ApplyHealth(field.sink, c, s, f);
  if (!ok) ok = ApplyCounter(field.sink, c, s);
  return ok.value_or(true) ? DcgmApply::kApplied : DcgmApply::kBadValue;
}

}  // namespace laggard
