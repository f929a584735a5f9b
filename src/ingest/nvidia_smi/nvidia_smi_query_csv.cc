// `nvidia-smi --query-gpu=FIELDS --format=csv[,nounits]` output, once or
// looped with -l / -lms:
//
//   timestamp, index, temperature.gpu, clocks.current.sm [MHz], power.draw [W], utilization.gpu [%]
//   2024/01/31 12:34:56.789, 0, 45, 1410 MHz, 250.00 W, 97 %
//   2024/01/31 12:34:56.792, 1, [N/A], 1410 MHz, [Not Supported], 96 %
//
// nvidia-smi writes the header with each field's canonical name (the query
// `clocks.sm` prints `clocks.current.sm [MHz]`) and its unit in brackets;
// values carry the unit after a blank unless `nounits` was given. Either
// name of a field is accepted (`clocks.sm` or `clocks.current.sm`,
// `clocks_throttle_reasons.*` or `clocks_event_reasons.*`, `gpu_uuid` or
// `uuid`). Values in brackets ("[N/A]", "[Not Supported]", "[Unknown
// Error]") are unknown (nullopt). Fields laggard does not use are skipped
// quietly when they are nvidia-smi fields, noted once per file
// (hardware.unknown_field) otherwise. A repeated header line (two captures
// appended) starts a new layout.
//
// Which GPU: the `index` field; else each distinct `uuid` (else `pci.bus_id`)
// gets the next index in order of first appearance, which is nvidia-smi's
// own (PCI bus) order; else every row is taken as GPU 0
// (hardware.no_gpu_id).
//
// Time: the `timestamp` field ("2024/01/31 12:34:56.789", local time of the
// host, taken as UTC) gives absolute times. Without it, rows are grouped
// into samples (a group ends when a GPU repeats) and group g is at
// g x interval, the interval being -l / -lms of a captured command line
// above the header, else 1 s; approximate (hardware.approximate_time).
//
// `--format=csv,noheader` output cannot be read: its columns are unnamed.
// The file is skipped with csv.no_header and the fix (rerun without
// noheader).

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_util.h"

namespace laggard {
namespace {

enum class Field : uint8_t {
  kTimestamp,
  kIndex,
  kUuid,
  kBusId,
  kName,
  kSerial,
  kDriverVersion,
  kTemp,
  kMemTemp,
  kSmClock,
  kGraphicsClock,
  kMemClock,
  kMaxSmClock,
  kMaxGraphicsClock,
  kMaxMemClock,
  kAppGraphicsClock,
  kPowerDraw,
  kPowerDrawAverage,
  kPowerDrawInstant,
  kPowerLimit,
  kEnforcedPowerLimit,
  kDefaultPowerLimit,
  kMinPowerLimit,
  kMaxPowerLimit,
  kUtil,
  kMemUtil,
  kPcieGenCurrent,
  kPcieGenMax,      // max with this GPU and this host
  kPcieGenGpuMax,   // the GPU's own max
  kPcieGenHostMax,  // the root port's max
  kPcieWidthCurrent,
  kPcieWidthMax,
  kClockEventsActive,  // hex bitmask
  kClockEventBit,      // "Active" / "Not Active" for one reason
  kEccUncorrectedVolatile,
  kEccUncorrectedAggregate,
  kRetiredPagesDbe,
  kRetiredPagesPending,
  kIgnored,  // an nvidia-smi field laggard does not use
  kUnknown,
};

struct FieldSpec {
  std::string_view name;  // lower case
  Field field;
  uint64_t bit = 0;  // kClockEventBit
};

// Canonical names and aliases, from `nvidia-smi --help-query-gpu`
// (`clocks_throttle_reasons.*` is read as `clocks_event_reasons.*`).
constexpr FieldSpec kFields[] = {
    {"timestamp", Field::kTimestamp},
    {"index", Field::kIndex},
    {"uuid", Field::kUuid},
    {"gpu_uuid", Field::kUuid},
    {"pci.bus_id", Field::kBusId},
    {"gpu_bus_id", Field::kBusId},
    {"name", Field::kName},
    {"gpu_name", Field::kName},
    {"serial", Field::kSerial},
    {"gpu_serial", Field::kSerial},
    {"driver_version", Field::kDriverVersion},
    {"temperature.gpu", Field::kTemp},
    {"temperature.memory", Field::kMemTemp},
    {"clocks.current.sm", Field::kSmClock},
    {"clocks.sm", Field::kSmClock},
    {"clocks.current.graphics", Field::kGraphicsClock},
    {"clocks.gr", Field::kGraphicsClock},
    {"clocks.current.memory", Field::kMemClock},
    {"clocks.mem", Field::kMemClock},
    {"clocks.max.sm", Field::kMaxSmClock},
    {"clocks.max.graphics", Field::kMaxGraphicsClock},
    {"clocks.max.gr", Field::kMaxGraphicsClock},
    {"clocks.max.memory", Field::kMaxMemClock},
    {"clocks.max.mem", Field::kMaxMemClock},
    {"clocks.applications.graphics", Field::kAppGraphicsClock},
    {"clocks.applications.gr", Field::kAppGraphicsClock},
    {"power.draw", Field::kPowerDraw},
    {"power.draw.average", Field::kPowerDrawAverage},
    {"power.draw.instant", Field::kPowerDrawInstant},
    {"power.limit", Field::kPowerLimit},
    {"enforced.power.limit", Field::kEnforcedPowerLimit},
    {"power.default_limit", Field::kDefaultPowerLimit},
    {"power.min_limit", Field::kMinPowerLimit},
    {"power.max_limit", Field::kMaxPowerLimit},
    {"utilization.gpu", Field::kUtil},
    {"utilization.memory", Field::kMemUtil},
    {"pcie.link.gen.current", Field::kPcieGenCurrent},
    {"pcie.link.gen.gpucurrent", Field::kPcieGenCurrent},
    {"pcie.link.gen.max", Field::kPcieGenMax},
    {"pcie.link.gen.gpumax", Field::kPcieGenGpuMax},
    {"pcie.link.gen.hostmax", Field::kPcieGenHostMax},
    {"pcie.link.width.current", Field::kPcieWidthCurrent},
    {"pcie.link.width.max", Field::kPcieWidthMax},
    {"clocks_event_reasons.active", Field::kClockEventsActive},
    {"clocks_event_reasons.gpu_idle", Field::kClockEventBit, clock_event::kGpuIdle},
    {"clocks_event_reasons.applications_clocks_setting", Field::kClockEventBit,
     clock_event::kApplicationsClocksSetting},
    {"clocks_event_reasons.sw_power_cap", Field::kClockEventBit, clock_event::kSwPowerCap},
    {"clocks_event_reasons.hw_slowdown", Field::kClockEventBit, clock_event::kHwSlowdown},
    {"clocks_event_reasons.sync_boost", Field::kClockEventBit, clock_event::kSyncBoost},
    {"clocks_event_reasons.sw_thermal_slowdown", Field::kClockEventBit,
     clock_event::kSwThermalSlowdown},
    {"clocks_event_reasons.hw_thermal_slowdown", Field::kClockEventBit,
     clock_event::kHwThermalSlowdown},
    {"clocks_event_reasons.hw_power_brake_slowdown", Field::kClockEventBit,
     clock_event::kHwPowerBrakeSlowdown},
    {"clocks_event_reasons.display_clock_setting", Field::kClockEventBit,
     clock_event::kDisplayClockSetting},
    {"ecc.errors.uncorrected.volatile.total", Field::kEccUncorrectedVolatile},
    {"ecc.errors.uncorrected.aggregate.total", Field::kEccUncorrectedAggregate},
    {"retired_pages.double_bit.count", Field::kRetiredPagesDbe},
    {"retired_pages.dbe", Field::kRetiredPagesDbe},
    {"retired_pages.pending", Field::kRetiredPagesPending},
};

// nvidia-smi --query-gpu fields laggard does not use: these families and
// names are skipped without a note.
constexpr std::string_view kIgnoredPrefixes[] = {
    "pci.",
    "pcie.",
    "accounting.",
    "driver_model.",
    "inforom.",
    "reset_status.",
    "gom.",
    "gpu_operation_mode.",
    "clocks.",
    "clocks_event_reasons",
    "clocks_throttle_reasons",
    "memory.",
    "encoder.",
    "ecc.",
    "retired_pages.",
    "temperature.",
    "power.",
    "utilization.",
    "mig.",
    "gsp.",
    "protected_memory.",
    "fabric.",
    "vgpu_",
    "dramencryption.",
    "platform.",
    "c2c.",
    "module_id",
    "gpu_",
};
constexpr std::string_view kIgnoredNames[] = {
    "count",          "display_mode",     "display_attached",
    "display_active", "persistence_mode", "addressing_mode",
    "vbios_version",  "fan.speed",        "pstate",
    "compute_mode",   "compute_cap",      "gpu_recovery_action",
};

// Fields of the other --query-* switches (compute apps, accounted apps,
// retired pages, remapped rows, supported clocks): a header holding one is
// not --query-gpu output.
constexpr std::string_view kOtherQueryNames[] = {
    "pid",
    "process_name",
    "used_gpu_memory",
    "used_memory",
    "retired_pages.address",
    "retired_pages.cause",
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "remapped_rows.pending",
    "remapped_rows.failure",
    "memory",
    "graphics",
    "sm",
    "video",
    "gpu_utilization",
    "mem_utilization",
    "max_memory_usage",
    "time",
    "is_running",
};

struct Column {
  Field field = Field::kUnknown;
  uint64_t bit = 0;
  std::string name;  // as printed, without the unit
  std::string unit;  // from "[MHz]", or empty
};

Column Classify(std::string_view printed) {
  Column c;
  printed = Trim(printed);
  size_t bracket = printed.find('[');
  if (bracket != std::string_view::npos && printed.back() == ']') {
    c.unit = std::string(Trim(printed.substr(bracket + 1, printed.size() - bracket - 2)));
    printed = Trim(printed.substr(0, bracket));
  }
  c.name = std::string(printed);
  std::string lower = ToLower(printed);
  // Drivers before R535 call the clock event reasons throttle reasons.
  constexpr std::string_view kOld = "clocks_throttle_reasons.";
  if (StartsWith(lower, kOld)) lower = "clocks_event_reasons." + lower.substr(kOld.size());
  for (const FieldSpec& f : kFields) {
    if (lower == f.name) {
      c.field = f.field;
      c.bit = f.bit;
      return c;
    }
  }
  for (std::string_view n : kIgnoredNames) {
    if (lower == n) c.field = Field::kIgnored;
  }
  for (std::string_view p : kIgnoredPrefixes) {
    if (StartsWith(lower, p)) c.field = Field::kIgnored;
  }
  return c;
}

// A field name as nvidia-smi prints it: letters, digits, '.', '_', then an
// optional " [unit]".
bool LooksLikeFieldName(std::string_view printed) {
  printed = Trim(printed);
  size_t bracket = printed.find('[');
  if (bracket != std::string_view::npos) {
    if (printed.back() != ']') return false;
    printed = Trim(printed.substr(0, bracket));
  }
  if (printed.empty()) return false;
  for (char c : printed) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' || c == '_';
    if (!ok) return false;
  }
  return !IsDigit(printed.front());
}

bool IsOtherQuery(std::string_view name) {
  std::string lower = ToLower(name);
  for (std::string_view n : kOtherQueryNames) {
    if (lower == n) return true;
  }
  return false;
}

void SplitFields(std::string_view line, std::vector<std::string_view>& out) {
  out = Split(line, ',');
  for (auto& f : out) f = Trim(f);
}

// The columns of a header line, or an empty vector when `line` is not the
// header of --query-gpu output.
std::vector<Column> ParseHeader(std::string_view line) {
  std::vector<std::string_view> fields;
  SplitFields(Trim(line), fields);
  std::vector<Column> columns;
  int mapped = 0, unknown = 0;
  for (std::string_view f : fields) {
    if (!LooksLikeFieldName(f)) return {};
    Column c = Classify(f);
    if (IsOtherQuery(c.name)) return {};
    mapped += c.field != Field::kIgnored && c.field != Field::kUnknown;
    unknown += c.field == Field::kUnknown;
    columns.push_back(std::move(c));
  }
  if (mapped == 0 || unknown > mapped) return {};
  return columns;
}

// A value only nvidia-smi prints: its timestamp, a GPU UUID, a PCI bus id,
// a bracketed "[N/A]", a number with one of its units.
bool LooksLikeSmiValue(std::string_view v) {
  v = Trim(v);
  if (ParseNvidiaSmiTimestamp(v)) return true;
  if (StartsWith(v, "GPU-") && v.size() >= 36) return true;
  if (v.size() == 16 && v[8] == ':' && v[11] == ':' && v[14] == '.')
    return true;  // 00000000:18:00.0
  if (v.size() >= 3 && v.front() == '[' && v.back() == ']') return true;
  static constexpr std::string_view kUnits[] = {" MHz", " W", " MiB", " %"};
  for (std::string_view u : kUnits) {
    if (EndsWith(v, u) && ParseDouble(v.substr(0, v.size() - u.size()))) return true;
  }
  return false;
}

// Whether `line` echoes the nvidia-smi command above its output.
bool IsCommandLine(std::string_view line) {
  return line.find("nvidia-smi") != std::string_view::npos;
}

// "0x0000000000000004" -> 4.
std::optional<uint64_t> ParseHexMask(std::string_view v) {
  v = Trim(v);
  if (v.size() < 3 || v.size() > 18 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X'))
    return std::nullopt;
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), out, 16);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return out;
}

int SniffQueryCsv(std::string_view head) {
  // The first line other than blanks and a command line decides.
  int score = kSniffNo;
  ForEachHeadLine(head, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t.empty() || IsCommandLine(t)) return true;
    if (!ParseHeader(t).empty()) {
      score = kSniffSure;
      return false;
    }
    // Without a header (csv,noheader): claimed when the values are
    // clearly nvidia-smi's, so that the user learns how to fix the capture.
    std::vector<std::string_view> fields;
    SplitFields(t, fields);
    if (fields.size() >= 2 && std::any_of(fields.begin(), fields.end(), LooksLikeSmiValue)) {
      score = kSniffLikely;
    }
    return false;
  });
  return score;
}

struct RowValues {
  std::optional<TimeNs> time;
  std::optional<int32_t> index;
  GpuSample sample;
  GpuFacts facts;
  std::optional<std::string> uuid, bus_id;
  std::optional<uint64_t> events_mask;
  std::optional<uint64_t> event_bits;
  // Alternatives resolved after the whole row is read.
  std::optional<double> power_draw, power_average, power_instant, power_limit, enforced_limit;
  std::optional<double> sm_clock, graphics_clock, max_sm_clock, max_graphics_clock;
  std::optional<int32_t> pcie_gen_max, pcie_gen_gpu_max;
};

// Reads field `c` of a row into `r`; false when the value is not what the
// field holds (a garbled row).
bool ReadValue(const Column& c, std::string_view v, RowValues& r) {
  v = Trim(v);
  bool absent = IsAbsentValue(v);
  auto number = [&](std::optional<double>& out) {
    if (absent) return true;
    out = ParseNumberWithUnit(v, c.unit);
    return out.has_value();
  };
  auto integer = [&](std::optional<int32_t>& out) {
    if (absent) return true;
    auto d = ParseNumberWithUnit(v, c.unit);
    if (!d || *d != static_cast<double>(static_cast<int32_t>(*d)) || *d < 0 || *d > 1024)
      return false;
    out = static_cast<int32_t>(*d);
    return true;
  };
  auto count = [&](std::optional<int64_t>& out) {
    if (absent) return true;
    auto i = ParseInt<int64_t>(v);
    if (!i || *i < 0) return false;
    out = i;
    return true;
  };
  auto text = [&](std::optional<std::string>& out) {
    if (!absent) out = std::string(v);
    return true;
  };
  switch (c.field) {
    case Field::kTimestamp:
      if (absent) return false;
      r.time = ParseNvidiaSmiTimestamp(v);
      return r.time.has_value();
    case Field::kIndex: {
      if (absent) return false;
      auto i = ParseInt<int32_t>(v);
      if (!i || *i < 0 || *i > kMaxGpuIndex) return false;
      r.index = i;
      return true;
    }
    case Field::kUuid: return text(r.uuid);
    case Field::kBusId: return text(r.bus_id);
    case Field::kName: return text(r.facts.name);
    case Field::kSerial: return text(r.facts.serial);
    case Field::kDriverVersion: return text(r.facts.driver_version);
    case Field::kTemp: return number(r.sample.temp_c);
    case Field::kMemTemp: return number(r.sample.mem_temp_c);
    case Field::kSmClock: return number(r.sm_clock);
    case Field::kGraphicsClock: return number(r.graphics_clock);
    case Field::kMemClock: return number(r.sample.mem_clock_mhz);
    case Field::kMaxSmClock: return number(r.max_sm_clock);
    case Field::kMaxGraphicsClock: return number(r.max_graphics_clock);
    case Field::kMaxMemClock: return number(r.facts.max_mem_clock_mhz);
    case Field::kAppGraphicsClock: return number(r.facts.app_sm_clock_mhz);
    case Field::kPowerDraw: return number(r.power_draw);
    case Field::kPowerDrawAverage: return number(r.power_average);
    case Field::kPowerDrawInstant: return number(r.power_instant);
    case Field::kPowerLimit: return number(r.power_limit);
    case Field::kEnforcedPowerLimit: return number(r.enforced_limit);
    case Field::kDefaultPowerLimit: return number(r.facts.default_power_limit_w);
    case Field::kMinPowerLimit: return number(r.facts.min_power_limit_w);
    case Field::kMaxPowerLimit: return number(r.facts.max_power_limit_w);
    case Field::kUtil: return number(r.sample.util_pct);
    case Field::kMemUtil: return number(r.sample.mem_util_pct);
    case Field::kPcieGenCurrent: return integer(r.sample.pcie_gen);
    case Field::kPcieGenMax: return integer(r.pcie_gen_max);
    case Field::kPcieGenGpuMax: return integer(r.pcie_gen_gpu_max);
    case Field::kPcieGenHostMax: return integer(r.facts.pcie_gen_host_max);
    case Field::kPcieWidthCurrent: return integer(r.sample.pcie_width);
    case Field::kPcieWidthMax: return integer(r.facts.pcie_width_max);
    case Field::kClockEventsActive:
      if (absent) return true;
      r.events_mask = ParseHexMask(v);
      return r.events_mask.has_value();
    case Field::kClockEventBit:
      if (absent) return true;
      if (EqualsIgnoreCase(v, "Active")) {
        r.event_bits = r.event_bits.value_or(0) | c.bit;
        return true;
      }
      if (EqualsIgnoreCase(v, "Not Active")) {
        r.event_bits = r.event_bits.value_or(0);
        return true;
      }
      return false;
    case Field::kEccUncorrectedVolatile: return count(r.facts.ecc_uncorrected_volatile);
    case Field::kEccUncorrectedAggregate: return count(r.facts.ecc_uncorrected_aggregate);
    case Field::kRetiredPagesDbe: return count(r.facts.retired_pages_dbe);
    case Field::kRetiredPagesPending:
      if (absent) return true;
      if (EqualsIgnoreCase(v, "Yes")) r.facts.retired_pages_pending = true;
      else if (EqualsIgnoreCase(v, "No")) r.facts.retired_pages_pending = false;
      else return false;
      return true;
    case Field::kIgnored:
    case Field::kUnknown: return true;
  }
  return true;
}

bool IsSampleField(Field f) {
  switch (f) {
    case Field::kTemp:
    case Field::kMemTemp:
    case Field::kSmClock:
    case Field::kGraphicsClock:
    case Field::kMemClock:
    case Field::kPowerDraw:
    case Field::kPowerDrawAverage:
    case Field::kPowerDrawInstant:
    case Field::kPowerLimit:
    case Field::kEnforcedPowerLimit:
    case Field::kUtil:
    case Field::kMemUtil:
    case Field::kPcieGenCurrent:
    case Field::kPcieWidthCurrent:
    case Field::kClockEventsActive:
    case Field::kClockEventBit: return true;
    default: return false;
  }
}

// Fills the unknown facts of `dst` from `src` (first value wins; error
// counts keep their largest value).
void MergeRowFacts(GpuFacts& dst, const GpuFacts& src) {
  auto first = [](auto& d, const auto& s) {
    if (!d && s) d = s;
  };
  first(dst.name, src.name);
  first(dst.serial, src.serial);
  first(dst.driver_version, src.driver_version);
  first(dst.max_sm_clock_mhz, src.max_sm_clock_mhz);
  first(dst.max_mem_clock_mhz, src.max_mem_clock_mhz);
  first(dst.app_sm_clock_mhz, src.app_sm_clock_mhz);
  first(dst.default_power_limit_w, src.default_power_limit_w);
  first(dst.enforced_power_limit_w, src.enforced_power_limit_w);
  first(dst.min_power_limit_w, src.min_power_limit_w);
  first(dst.max_power_limit_w, src.max_power_limit_w);
  first(dst.pcie_gen_current, src.pcie_gen_current);
  first(dst.pcie_gen_max, src.pcie_gen_max);
  first(dst.pcie_gen_host_max, src.pcie_gen_host_max);
  first(dst.pcie_width_current, src.pcie_width_current);
  first(dst.pcie_width_max, src.pcie_width_max);
  auto largest = [](auto& d, const auto& s) {
    if (s && (!d || *s > *d)) d = s;
  };
  largest(dst.ecc_uncorrected_volatile, src.ecc_uncorrected_volatile);
  largest(dst.ecc_uncorrected_aggregate, src.ecc_uncorrected_aggregate);
  largest(dst.retired_pages_dbe, src.retired_pages_dbe);
  if (src.retired_pages_pending && !dst.retired_pages_pending.value_or(false)) {
    dst.retired_pages_pending = src.retired_pages_pending;
  }
}

// The reading of one file.
class QueryCsvFile {
 public:
  explicit QueryCsvFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    bool headerless = false;
    ForEachNonBlankLine(lines, [&](const TextLine& l) {
      if (l.trimmed == header_text_) return true;  // the same header again
      if (Header(l.trimmed, l.number)) return true;
      if (columns_.empty()) {
        headerless = !Preamble(l.trimmed, l.number);
        return !headerless;
      }
      Row(l.text, l.trimmed, l.number);
      return true;
    });
    if (headerless) return 0;
    Finish();
    return taken_;
  }

 private:
  void Bad(uint64_t n, std::string_view line, std::string_view why) {
    ctx_.diag().Add(
        DiagCode::kHwBadRecord, ctx_.path, n,
        fmt::format("nvidia-smi --query-gpu row {}: \"{}\"", why, Printable(line, 100)));
  }

  // A header line starts a new layout; false when `t` is none.
  bool Header(std::string_view t, uint64_t n) {
    std::vector<Column> header = ParseHeader(t);
    if (header.empty()) return false;
    columns_ = std::move(header);
    header_text_ = std::string(t);
    has_sample_fields_ = false;
    timestamp_col_ = index_col_ = uuid_col_ = bus_col_ = -1;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const Column& c = columns_[i];
      int col = static_cast<int>(i);
      has_sample_fields_ = has_sample_fields_ || IsSampleField(c.field);
      if (c.field == Field::kTimestamp && timestamp_col_ < 0) timestamp_col_ = col;
      if (c.field == Field::kIndex && index_col_ < 0) index_col_ = col;
      if (c.field == Field::kUuid && uuid_col_ < 0) uuid_col_ = col;
      if (c.field == Field::kBusId && bus_col_ < 0) bus_col_ = col;
      if (c.field == Field::kUnknown &&
          std::find(noted_.begin(), noted_.end(), c.name) == noted_.end()) {
        noted_.push_back(c.name);
        ctx_.diag().Add(
            DiagCode::kHwUnknownField, ctx_.path, n,
            fmt::format("nvidia-smi --query-gpu field '{}' is not one laggard reads", c.name));
      }
    }
    if (!file_has_timestamp_) file_has_timestamp_ = timestamp_col_ >= 0;
    return true;
  }

  // A line before the first header: a captured command line (its interval
  // is kept), else a row of headerless output, which ends the reading
  // (returns false).
  bool Preamble(std::string_view t, uint64_t n) {
    if (IsCommandLine(t)) {
      if (auto d = IntervalFromCommandLine(t, SmiCommand::kQueryGpu)) {
        interval_ = *d;
        interval_from_file_ = true;
      }
      return true;
    }
    ctx_.diag().Add(DiagCode::kCsvNoHeader, ctx_.path, n,
                    fmt::format("nvidia-smi --query-gpu output without its header line (\"{}\"): "
                                "the columns cannot be named; rerun with --format=csv (or "
                                "csv,nounits), without noheader",
                                Printable(t, 80)));
    return false;
  }

  void Row(std::string_view line, std::string_view t, uint64_t n) {
    if (*file_has_timestamp_ != (timestamp_col_ >= 0)) {
      Bad(n, line, "comes under a header that differs from the file's first in having a timestamp");
      return;
    }
    SplitFields(t, fields_);
    if (fields_.size() != columns_.size()) {
      Bad(n, line, fmt::format("has {} values for {} fields", fields_.size(), columns_.size()));
      return;
    }
    RowValues r;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (!ReadValue(columns_[i], fields_[i], r)) {
        Bad(n, line, fmt::format("has a value of '{}' that cannot be read", columns_[i].name));
        return;
      }
    }
    std::optional<int32_t> index = WhichGpu(r, line, n);
    if (!index) return;
    // When.
    GpuSample& s = r.sample;
    if (timestamp_col_ >= 0) {
      s.time_ns = *r.time;
    } else if (auto at = groups_.Next(*index, interval_)) {
      s.time_ns = *at;
    } else {
      Bad(n, line, "is too far from the first row for its interval");
      return;
    }
    Store(r, *index, n);
  }

  // The GPU a row is of; nullopt (counted) when the row does not say.
  std::optional<int32_t> WhichGpu(const RowValues& r, std::string_view line, uint64_t n) {
    if (index_col_ >= 0) return *r.index;
    if (uuid_col_ >= 0 || bus_col_ >= 0) {
      const std::optional<std::string>& id = uuid_col_ >= 0 ? r.uuid : r.bus_id;
      if (!id) {
        Bad(n, line, "names no GPU (its uuid / pci.bus_id is missing)");
        return std::nullopt;
      }
      auto [it, inserted] = index_of_id_.emplace(*id, static_cast<int32_t>(index_of_id_.size()));
      if (inserted && it->second > kMaxGpuIndex) {
        index_of_id_.erase(it);
        Bad(n, line, "names more GPUs than laggard accepts on one host");
        return std::nullopt;
      }
      return it->second;
    }
    if (!noted_no_id_) {
      noted_no_id_ = true;
      ctx_.diag().Add(DiagCode::kHwNoGpuId, ctx_.path, n,
                      "the query has no index, uuid or pci.bus_id field: every row was taken as "
                      "GPU 0; add index to --query-gpu when the host has several GPUs");
    }
    return 0;
  }

  // Resolves the row's alternatives and adds it to its GPU's record.
  void Store(RowValues& r, int32_t index, uint64_t n) {
    GpuSample& s = r.sample;
    // The SM clock is the graphics clock when only that was queried;
    // power.draw is the 1 s average on Ampere and newer, instant before.
    s.sm_clock_mhz = r.sm_clock ? r.sm_clock : r.graphics_clock;
    s.power_w = r.power_draw ? r.power_draw : r.power_average ? r.power_average : r.power_instant;
    s.power_limit_w = r.enforced_limit ? r.enforced_limit : r.power_limit;
    s.clock_events = r.events_mask ? r.events_mask : r.event_bits;
    s.src = ctx_.Ref(n);
    r.facts.max_sm_clock_mhz = r.max_sm_clock ? r.max_sm_clock : r.max_graphics_clock;
    r.facts.enforced_power_limit_w = s.power_limit_w;
    r.facts.pcie_gen_current = s.pcie_gen;
    r.facts.pcie_width_current = s.pcie_width;
    // pcie.link.gen.max is the lower of the GPU's and the host's max; the
    // GPU's own (gpumax) is the fact when printed.
    r.facts.pcie_gen_max = r.pcie_gen_gpu_max ? r.pcie_gen_gpu_max : r.pcie_gen_max;

    GpuRecord& gpu = by_index_[index];
    if (!gpu.uuid) gpu.uuid = r.uuid;
    if (!gpu.bus_id) gpu.bus_id = r.bus_id;
    bool had_facts = HasAnyFact(gpu.facts);
    MergeRowFacts(gpu.facts, r.facts);
    if (!had_facts && HasAnyFact(gpu.facts)) gpu.facts.src = ctx_.Ref(n);
    if (has_sample_fields_) gpu.samples.push_back(s);
    ++taken_;
  }

  void Finish() {
    bool approximate = file_has_timestamp_.has_value() && !*file_has_timestamp_;
    std::string how =
        approximate ? fmt::format(
                          "the query has no timestamp field: times are row index x {} s ({}); "
                          "add timestamp to --query-gpu for absolute times",
                          ToSeconds(interval_),
                          interval_from_file_ ? "-l/-lms of the captured command" : "assumed")
                    : std::string();
    EmitGpuRecords(ctx_, by_index_, approximate, how);
  }

  ReaderContext& ctx_;
  std::vector<Column> columns_;
  std::string header_text_;
  bool has_sample_fields_ = false;
  int timestamp_col_ = -1, index_col_ = -1, uuid_col_ = -1, bus_col_ = -1;
  std::optional<bool> file_has_timestamp_;
  std::map<std::string, int32_t> index_of_id_;  // uuid / bus id -> assigned index
  std::map<int32_t, GpuRecord> by_index_;
  std::vector<std::string> noted_;
  bool noted_no_id_ = false;
  DurationNs interval_ = 1'000'000'000;
  bool interval_from_file_ = false;
  RowGroupClock groups_;  // rows without a timestamp
  std::vector<std::string_view> fields_;
  uint64_t taken_ = 0;
};

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiQueryCsvReader() {
  return MakeFileReader<QueryCsvFile>("nvidia-smi-query-gpu", SniffQueryCsv);
}

}  // namespace laggard
