// `nvidia-smi -q` / `nvidia-smi -a` (the full query, also filtered with
// `-d`, `-i`, and repeated with `-l`):
//
//   ==============NVSMI LOG==============
//   Timestamp                                 : Fri Feb 23 11:51:29 2024
//   Driver Version                            : 545.23.08
//   Attached GPUs                             : 1
//   GPU 00000000:19:00.0
//       Product Name                          : NVIDIA H100 80GB HBM3
//       PCI
//           GPU Link Info
//               PCIe Generation
//                   Max                       : 5
//       Clocks Event Reasons
//           SW Power Cap                      : Not Active
//               HW Thermal Slowdown           : Not Active
//
// Each "GPU <bus id>" block nests "Key : Value" lines in sections by
// indentation. A key's meaning is its section path plus its name (the
// "Max" of PCIe Generation is not the "Max" of Link Width), so the reader
// keeps the stack of open sections and looks each (path, key) up. Keys it
// does not use are skipped without a word: -q prints some two hundred.
//
// Both wordings are read: old drivers' "Clocks Throttle Reasons" and
// "Power Readings" (Power Draw, Power Limit, Enforced Power Limit), new
// drivers' "Clocks Event Reasons" and "GPU Power Readings" (Power Draw or
// Average / Instantaneous Power Draw, Current Power Limit); ECC counts as
// "Double Bit / Total" (Kepler to Volta) or "DRAM / SRAM Uncorrectable ..."
// (Ampere on). New drivers print the thermal thresholds as offsets from a
// moving limit ("GPU Slowdown T.Limit Temp : -2 C"); those are not
// temperatures and are not read as such.
//
// GPU index: -q numbers nothing; its blocks come in nvidia-smi's index
// order, which is also the order of the table, dmon and --query-gpu. "Minor
// Number" is the /dev/nvidiaN number and differs from it on many machines
// (an RTX 6000 Ada box lists minors 3, 2, 1, 0, 7, ...), so the block order
// is the index. Only when a snapshot lists fewer GPUs than "Attached GPUs"
// without being cut short (`-q -i 3`) is the minor number the best guess
// left.
//
// Damage: a known key whose value is neither a value nor an "unavailable"
// marker, a line that is neither "Key : Value" nor a section heading, and a
// full block (one with "Product Name") that stops before its "Processes"
// entry (every full -q block of driver R300 or later has one: the output
// was cut) count as hardware.bad_record with their line; everything read up
// to there is kept.
// An unknown clock-event reason counts as hardware.unknown_field.
//
// "Clocks Event Reasons Counters" (drivers of 2023 on) give the time, since
// the driver loaded, that the clocks were held down for each reason, in
// microseconds: the GPU sample's violation counters (model/hardware.h), SW
// and HW thermal slowdown summed. With two snapshots or more (-l) their
// difference over the time between is the share of the time throttled.

#include <cmath>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_text.h"

namespace laggard {
namespace {

using nvsmi::Number;

struct QLine {
  int indent = 0;
  std::string_view body;  // trimmed
  bool has_value = false;
  std::string_view key;
  std::string_view value;
};

QLine SplitLine(std::string_view raw) {
  QLine l;
  size_t p = 0;
  while (p < raw.size() && (raw[p] == ' ' || raw[p] == '\t')) {
    l.indent = raw[p] == '\t' ? (l.indent / 8 + 1) * 8 : l.indent + 1;
    ++p;
  }
  l.body = Trim(raw);
  size_t colon = l.body.find(" :");
  if (colon != std::string_view::npos) {
    l.has_value = true;
    l.key = Trim(l.body.substr(0, colon));
    l.value = Trim(l.body.substr(colon + 2));
  }
  return l;
}

bool IsBanner(std::string_view body) {
  return StartsWith(body, "==") && body.find("NVSMI LOG") != std::string_view::npos;
}

// "GPU 00000000:19:00.0" (or the old "GPU 0:2:0"): the bus id, else empty.
std::string_view GpuHeaderBusId(std::string_view body) {
  if (!StartsWith(body, "GPU ")) return {};
  std::string_view id = Trim(body.substr(4));
  bool colon = false;
  for (char c : id) {
    bool hex = IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex && c != ':' && c != '.') return {};
    colon |= c == ':';
  }
  return colon ? id : std::string_view{};
}

// The reasons of "Clocks Event Reasons" / "Clocks Throttle Reasons".
std::optional<uint64_t> ClockEventBit(std::string_view key) {
  static constexpr std::pair<std::string_view, uint64_t> kReasons[] = {
      {"Idle", clock_event::kGpuIdle},
      {"Applications Clocks Setting", clock_event::kApplicationsClocksSetting},
      {"SW Power Cap", clock_event::kSwPowerCap},
      {"HW Slowdown", clock_event::kHwSlowdown},
      {"HW Thermal Slowdown", clock_event::kHwThermalSlowdown},
      {"HW Power Brake Slowdown", clock_event::kHwPowerBrakeSlowdown},
      {"Sync Boost", clock_event::kSyncBoost},
      {"SW Thermal Slowdown", clock_event::kSwThermalSlowdown},
      {"Display Clock Setting", clock_event::kDisplayClockSetting},
  };
  for (auto [name, bit] : kReasons) {
    if (EqualsIgnoreCase(key, name)) return bit;
  }
  return std::nullopt;
}

// Whether a full -q block of this driver ends with a "Processes" entry:
// R270 (2011) printed none; every driver from R300 on does.
bool PrintsProcesses(const std::optional<std::string>& driver) {
  if (!driver) return false;
  size_t dot = driver->find('.');
  auto major = ParseInt<int>(std::string_view(*driver).substr(0, dot));
  return major && *major >= 300;
}

bool HasAnyValue(const GpuSample& s) {
  return s.temp_c || s.mem_temp_c || s.sm_clock_mhz || s.mem_clock_mhz || s.power_w ||
         s.power_limit_w || s.util_pct || s.mem_util_pct || s.pcie_rx_mb_s || s.pcie_tx_mb_s ||
         s.pcie_gen || s.pcie_width || s.clock_events || s.perf_state || s.power_violation_ns ||
         s.thermal_violation_ns || s.sync_boost_violation_ns || s.power_brake_violation_ns;
}

// One "GPU <bus id>" block as read so far.
struct Block {
  uint64_t line = 0;  // of the "GPU ..." heading
  uint64_t last_line = 0;
  uint64_t content_lines = 0;
  std::string bus_id;
  std::optional<std::string> uuid;
  std::optional<int32_t> minor;
  GpuFacts facts;
  GpuSample sample;
  bool full = false;           // has "Product Name": an unfiltered -q block
  bool has_processes = false;  // its closing "Processes" entry was seen
  std::optional<int32_t> gen_max, gen_device_max, gen_host_max, gen_current;
  std::optional<int32_t> width_max, width_current;
  std::optional<double> power_draw, power_average, power_instant;
  std::optional<double> limit_enforced, limit_current, limit_plain;
  std::optional<int32_t> power_state;
  uint64_t clock_events = 0;
  bool clock_events_seen = false;
  std::optional<int64_t> ecc_volatile, ecc_aggregate;
};

// One snapshot: a header (Timestamp, Driver Version, Attached GPUs) and its
// GPU blocks.
struct Snapshot {
  std::optional<TimeNs> time;
  std::optional<std::string> driver;
  std::optional<int64_t> attached;
  std::vector<Block> blocks;
  bool cut = false;  // a block was cut short: the output ends early
};

class QParser {
 public:
  explicit QParser(ReaderContext& ctx) : ctx_(ctx) {}

  // Reads every line; returns the GPU blocks read.
  uint64_t Read(LineReader& lines) {
    std::string_view line;
    while (lines.Next(line)) Line(line, lines.line_number());
    return Finish();
  }

  void Line(std::string_view raw, uint64_t n) {
    QLine l = SplitLine(raw);
    if (l.body.empty()) return;
    if (pending_heading_ && l.indent <= pending_heading_indent_) ChildlessHeading();
    pending_heading_ = false;
    if (IsBanner(l.body)) {
      EndBlock();
      EndSnapshot();
      started_ = true;
      return;
    }
    if (l.indent == 0) {
      EndBlock();
      TopLevel(l, n);
      return;
    }
    if (!block_) {
      // Lines of a top-level section that is not a GPU (S-class "Unit"
      // blocks, or a heading already reported).
      return;
    }
    Block& b = *block_;
    b.last_line = n;
    ++b.content_lines;
    while (!stack_.empty() && stack_.back().indent >= l.indent) Pop();
    if (!l.has_value) {
      stack_.push_back({l.indent, ToLower(l.body)});
      RebuildPath();
      pending_heading_ = true;
      pending_heading_indent_ = l.indent;
      pending_heading_line_ = n;
      pending_heading_text_ = std::string(l.body);
      if (stack_.size() == 1 && path_ == "processes") b.has_processes = true;
      return;
    }
    Value(b, l.key, l.value, n);
  }

  size_t Finish() {
    if (pending_heading_) ChildlessHeading();
    pending_heading_ = false;
    EndBlock();
    EndSnapshot();
    collector_.Finish(ctx_);
    return blocks_read_;
  }

 private:
  struct Section {
    int indent;
    std::string name;  // lower case
  };

  void Bad(uint64_t n, std::string message) {
    ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n, std::move(message));
  }
  void BadValue(uint64_t n, std::string_view key, std::string_view value, std::string_view want) {
    Bad(n, fmt::format("{}: \"{}\" is not {}", key, Printable(value, 60), want));
  }

  std::optional<double> Num(std::string_view key, std::string_view value, std::string_view unit,
                            uint64_t n) {
    Number v = nvsmi::ParseNumber(value, unit);
    if (v.kind == Number::kGarbled) {
      BadValue(n, key, value, unit.empty() ? "a number" : fmt::format("a number in {}", unit));
    }
    return v.get();
  }
  // A whole number in [min, max].
  std::optional<int64_t> Int(std::string_view key, std::string_view value, std::string_view unit,
                             uint64_t n, int64_t min, int64_t max) {
    Number v = nvsmi::ParseNumber(value, unit);
    if (v.kind == Number::kValue && v.value >= static_cast<double>(min) &&
        v.value <= static_cast<double>(max) && std::floor(v.value) == v.value) {
      return static_cast<int64_t>(v.value);
    }
    if (v.kind != Number::kUnavailable) BadValue(n, key, value, "a whole number in range");
    return std::nullopt;
  }
  std::optional<int32_t> Small(std::string_view key, std::string_view value, std::string_view unit,
                               uint64_t n, int32_t max) {
    auto v = Int(key, value, unit, n, 0, max);
    return v ? std::optional<int32_t>(static_cast<int32_t>(*v)) : std::nullopt;
  }
  std::optional<int64_t> Count(std::string_view key, std::string_view value, uint64_t n) {
    return Int(key, value, "", n, 0, int64_t{1} << 53);
  }
  // One line of "Clocks Event Reasons Counters": the time since the driver
  // loaded that the clocks were held down for that reason, "12234991553 us".
  // SW and HW thermal slowdown add up into the thermal counter (either may
  // be N/A); an unknown reason counts as hardware.unknown_field.
  void Counter(std::string_view key, std::string_view value, uint64_t n, GpuSample& s) {
    std::optional<int64_t>* into = nullptr;
    bool adds = false;
    if (EqualsIgnoreCase(key, "SW Power Capping")) into = &s.power_violation_ns;
    else if (EqualsIgnoreCase(key, "Sync Boost")) into = &s.sync_boost_violation_ns;
    else if (EqualsIgnoreCase(key, "HW Power Braking")) into = &s.power_brake_violation_ns;
    else if (EqualsIgnoreCase(key, "SW Thermal Slowdown") ||
             EqualsIgnoreCase(key, "HW Thermal Slowdown"))
      into = &s.thermal_violation_ns, adds = true;
    if (into == nullptr) {
      ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, n,
                      fmt::format("unknown clock-event counter \"{}\"", Printable(key, 60)));
      return;
    }
    auto us = Int(key, value, "us", n, 0, int64_t{1} << 52);
    if (!us) return;
    const int64_t ns = *us * 1000;
    *into = adds && *into ? **into + ns : ns;
  }
  // "Yes"/"No" (or "Active"/"Not Active" with `active`).
  std::optional<bool> Flag(std::string_view key, std::string_view value, uint64_t n,
                           bool active = false) {
    std::string_view yes = active ? "Active" : "Yes";
    std::string_view no = active ? "Not Active" : "No";
    if (EqualsIgnoreCase(value, yes)) return true;
    if (EqualsIgnoreCase(value, no)) return false;
    if (!nvsmi::IsUnavailable(value)) {
      BadValue(n, key, value, fmt::format("\"{}\" or \"{}\"", yes, no));
    }
    return std::nullopt;
  }
  std::optional<std::string> Text(std::string_view value) {
    if (value.empty() || nvsmi::IsUnavailable(value)) return std::nullopt;
    return std::string(value);
  }
  // "5", "Gen5".
  std::optional<int32_t> PcieGen(std::string_view key, std::string_view value, uint64_t n) {
    std::string_view v = Trim(value);
    if (v.size() > 3 && EqualsIgnoreCase(v.substr(0, 3), "Gen")) v.remove_prefix(3);
    return Small(key, v, "", n, 16);
  }
  // "16x", "x16".
  std::optional<int32_t> Width(std::string_view key, std::string_view value, uint64_t n) {
    std::string_view v = Trim(value);
    if (!v.empty() && (v.front() == 'x' || v.front() == 'X')) v.remove_prefix(1);
    return Small(key, v, "x", n, 64);
  }

  void ChildlessHeading() {
    Bad(pending_heading_line_,
        fmt::format("\"{}\" is neither \"Key : Value\" nor a section heading",
                    Printable(pending_heading_text_, 80)));
  }

  void Pop() {
    stack_.pop_back();
    RebuildPath();
  }
  void RebuildPath() {
    path_.clear();
    for (const Section& s : stack_) {
      if (!path_.empty()) path_ += '/';
      path_ += s.name;
    }
  }

  void TopLevel(const QLine& l, uint64_t n) {
    std::string_view bus = GpuHeaderBusId(l.body);
    if (!bus.empty()) {
      block_.emplace();
      block_->line = block_->last_line = n;
      block_->bus_id = std::string(bus);
      stack_.clear();
      path_.clear();
      started_ = true;
      return;
    }
    if (!l.has_value) {
      // Before the banner or the first GPU block: a preamble ("$ nvidia-smi -q").
      if (started_ && !StartsWith(l.body, "Unit ")) {
        ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, n,
                        fmt::format("\"{}\" is not a GPU block heading; its lines are skipped",
                                    Printable(l.body, 80)));
      }
      return;
    }
    if (EqualsIgnoreCase(l.key, "Timestamp")) {
      // A new date after GPU blocks starts a snapshot even without a banner.
      if (!snapshot_.blocks.empty()) EndSnapshot();
      snapshot_.time = ParseCtime(l.value);
      if (!snapshot_.time && !nvsmi::IsUnavailable(l.value)) {
        BadValue(n, l.key, l.value, "a date like \"Mon Jan 29 10:41:38 2024\"");
      }
    } else if (EqualsIgnoreCase(l.key, "Driver Version")) {
      snapshot_.driver = Text(l.value);
    } else if (EqualsIgnoreCase(l.key, "Attached GPUs")) {
      snapshot_.attached = Count(l.key, l.value, n);
    }
  }

  void Value(Block& b, std::string_view key, std::string_view value, uint64_t n) {
    auto is = [&](std::string_view name) { return EqualsIgnoreCase(key, name); };
    GpuFacts& f = b.facts;
    GpuSample& s = b.sample;
    const std::string& p = path_;
    if (p.empty()) {
      if (is("Product Name")) {
        b.full = true;
        f.name = Text(value);
      } else if (is("Serial Number")) {
        f.serial = Text(value);
      } else if (is("GPU UUID")) {
        b.uuid = Text(value);
      } else if (is("Minor Number")) {
        b.minor = Small(key, value, "", n, 1 << 20);
      } else if (is("Performance State")) {
        Number v = nvsmi::ParsePerfState(value);
        if (v.kind == Number::kGarbled) BadValue(n, key, value, "a performance state P0..P15");
        if (v.get()) s.perf_state = static_cast<int32_t>(v.value);
      } else if (is("Processes")) {
        b.has_processes = true;
      }
    } else if (p == "pci") {
      if (is("Bus Id")) {
        if (b.bus_id.empty()) b.bus_id = std::string(value);
      } else if (is("Tx Throughput")) {
        if (auto v = Num(key, value, "KB/s", n)) s.pcie_tx_mb_s = *v / 1000.0;
      } else if (is("Rx Throughput")) {
        if (auto v = Num(key, value, "KB/s", n)) s.pcie_rx_mb_s = *v / 1000.0;
      }
    } else if (p == "pci/gpu link info/pcie generation") {
      if (is("Max")) b.gen_max = PcieGen(key, value, n);
      else if (is("Current")) b.gen_current = PcieGen(key, value, n);
      else if (is("Device Max")) b.gen_device_max = PcieGen(key, value, n);
      else if (is("Host Max")) b.gen_host_max = PcieGen(key, value, n);
    } else if (p == "pci/gpu link info/link width") {
      if (is("Max")) b.width_max = Width(key, value, n);
      else if (is("Current")) b.width_current = Width(key, value, n);
    } else if (p == "clocks event reasons" || p == "clocks throttle reasons") {
      auto bit = ClockEventBit(key);
      if (!bit) {
        ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, n,
                        fmt::format("unknown clock-event reason \"{}\"", Printable(key, 60)));
        return;
      }
      if (auto active = Flag(key, value, n, /*active=*/true)) {
        b.clock_events_seen = true;
        if (*active) b.clock_events |= *bit;
      }
    } else if (p == "clocks event reasons counters" || p == "clocks throttle reasons counters") {
      Counter(key, value, n, s);
    } else if (p == "power readings" || p == "gpu power readings") {
      if (is("Power Draw")) b.power_draw = Num(key, value, "W", n);
      else if (is("Average Power Draw")) b.power_average = Num(key, value, "W", n);
      else if (is("Instantaneous Power Draw")) b.power_instant = Num(key, value, "W", n);
      else if (is("Enforced Power Limit")) b.limit_enforced = Num(key, value, "W", n);
      else if (is("Current Power Limit")) b.limit_current = Num(key, value, "W", n);
      else if (is("Power Limit")) b.limit_plain = Num(key, value, "W", n);
      else if (is("Default Power Limit")) f.default_power_limit_w = Num(key, value, "W", n);
      else if (is("Min Power Limit")) f.min_power_limit_w = Num(key, value, "W", n);
      else if (is("Max Power Limit")) f.max_power_limit_w = Num(key, value, "W", n);
      else if (is("Power State")) {
        Number v = nvsmi::ParsePerfState(value);
        if (v.kind == Number::kGarbled) BadValue(n, key, value, "a performance state P0..P15");
        if (v.get()) b.power_state = static_cast<int32_t>(v.value);
      }
    } else if (p == "temperature") {
      if (is("GPU Current Temp") || is("Gpu")) s.temp_c = Num(key, value, "C", n);
      else if (is("Memory Current Temp")) s.mem_temp_c = Num(key, value, "C", n);
      else if (is("GPU Shutdown Temp")) f.shutdown_temp_c = Num(key, value, "C", n);
      else if (is("GPU Slowdown Temp")) f.slowdown_temp_c = Num(key, value, "C", n);
      else if (is("GPU Max Operating Temp")) f.max_operating_temp_c = Num(key, value, "C", n);
    } else if (p == "utilization") {
      if (is("Gpu")) s.util_pct = Num(key, value, "%", n);
      else if (is("Memory")) s.mem_util_pct = Num(key, value, "%", n);
    } else if (p == "clocks") {
      if (is("SM")) s.sm_clock_mhz = Num(key, value, "MHz", n);
      else if (is("Memory")) s.mem_clock_mhz = Num(key, value, "MHz", n);
    } else if (p == "applications clocks") {
      if (is("Graphics")) f.app_sm_clock_mhz = Num(key, value, "MHz", n);
    } else if (p == "max clocks") {
      if (is("SM")) f.max_sm_clock_mhz = Num(key, value, "MHz", n);
      else if (is("Memory")) f.max_mem_clock_mhz = Num(key, value, "MHz", n);
    } else if (p == "ecc errors/volatile" || p == "ecc errors/aggregate") {
      // Ampere on: DRAM Uncorrectable, SRAM Uncorrectable (or its Parity
      // and SEC-DED parts); their sum is the uncorrectable count.
      if (FindIgnoreCase(key, "Uncorrectable") == std::string_view::npos) return;
      AddEcc(p == "ecc errors/volatile" ? b.ecc_volatile : b.ecc_aggregate, key, value, n);
    } else if (p == "ecc errors/volatile/double bit" || p == "ecc errors/aggregate/double bit") {
      if (!is("Total")) return;
      AddEcc(p == "ecc errors/volatile/double bit" ? b.ecc_volatile : b.ecc_aggregate, key, value,
             n);
    } else if (p == "retired pages") {
      if (is("Double Bit ECC")) f.retired_pages_dbe = Count(key, value, n);
      else if (is("Pending Page Blacklist") || is("Pending Page Retirement") || is("Pending"))
        f.retired_pages_pending = Flag(key, value, n);
    } else if (p == "remapped rows") {
      if (is("Uncorrectable Error")) f.remapped_rows_uncorrectable = Count(key, value, n);
      else if (is("Pending")) f.remapped_rows_pending = Flag(key, value, n);
      else if (is("Remapping Failure Occurred")) f.remapping_failure = Flag(key, value, n);
    }
  }

  void AddEcc(std::optional<int64_t>& total, std::string_view key, std::string_view value,
              uint64_t n) {
    if (auto v = Count(key, value, n)) total = total.value_or(0) + *v;
  }

  // Turns the block's raw readings into facts and a sample.
  void EndBlock() {
    if (!block_) return;
    Block& b = *block_;
    if (b.content_lines == 0) {
      Bad(b.line, fmt::format("GPU {} block is empty: output cut?", b.bus_id));
      snapshot_.cut = true;
    } else if (b.full && !b.has_processes && PrintsProcesses(snapshot_.driver)) {
      snapshot_.cut = true;
      Bad(b.last_line, fmt::format("GPU {} block stops at line {} before its Processes entry: "
                                   "output cut?",
                                   b.bus_id, b.last_line));
    }
    GpuFacts& f = b.facts;
    GpuSample& s = b.sample;
    f.pcie_gen_max = b.gen_device_max ? b.gen_device_max : b.gen_max;
    f.pcie_gen_host_max = b.gen_host_max;
    f.pcie_gen_current = s.pcie_gen = b.gen_current;
    f.pcie_width_max = b.width_max;
    f.pcie_width_current = s.pcie_width = b.width_current;
    s.power_w = b.power_draw ? b.power_draw : b.power_average ? b.power_average : b.power_instant;
    f.enforced_power_limit_w = b.limit_enforced  ? b.limit_enforced
                               : b.limit_current ? b.limit_current
                                                 : b.limit_plain;
    s.power_limit_w = f.enforced_power_limit_w;
    if (!s.perf_state) s.perf_state = b.power_state;
    if (b.clock_events_seen) s.clock_events = b.clock_events;
    f.ecc_uncorrected_volatile = b.ecc_volatile;
    f.ecc_uncorrected_aggregate = b.ecc_aggregate;
    f.src = ctx_.Ref(b.line);
    s.src = ctx_.Ref(b.line);
    snapshot_.blocks.push_back(std::move(b));
    block_.reset();
    stack_.clear();
    path_.clear();
  }

  void EndSnapshot() {
    std::vector<Block>& blocks = snapshot_.blocks;
    // Fewer blocks than GPUs and none cut: a listing filtered with -i.
    bool partial = snapshot_.attached && !snapshot_.cut &&
                   static_cast<int64_t>(blocks.size()) < *snapshot_.attached;
    for (size_t i = 0; i < blocks.size(); ++i) {
      Block& b = blocks[i];
      int32_t index = static_cast<int32_t>(i);
      if (partial && b.minor) index = *b.minor;
      b.facts.driver_version = snapshot_.driver;
      collector_.SetFacts(index, b.facts);
      GpuRecord& g = collector_.Gpu(index);
      if (!b.bus_id.empty()) g.bus_id = b.bus_id;
      if (b.uuid) g.uuid = b.uuid;
      if (HasAnyValue(b.sample)) {
        collector_.AddSample(index, b.sample, snapshots_, snapshot_.time, b.line);
      }
      ++blocks_read_;
    }
    if (!blocks.empty()) ++snapshots_;
    snapshot_ = Snapshot{};
  }

  ReaderContext& ctx_;
  nvsmi::GpuCollector collector_;
  Snapshot snapshot_;
  std::optional<Block> block_;
  bool started_ = false;          // the banner or a GPU block was seen
  std::vector<Section> stack_;    // open sections inside the block
  std::string path_;              // their names joined with '/', lower case
  bool pending_heading_ = false;  // the last line was a heading: does a child follow?
  int pending_heading_indent_ = 0;
  uint64_t pending_heading_line_ = 0;
  std::string pending_heading_text_;
  uint32_t snapshots_ = 0;
  size_t blocks_read_ = 0;
};

int SniffQ(std::string_view head) {
  bool in_gpu_block = false;  // after a "GPU <bus id>" line, on indented lines
  auto banner_or_gpu = [&](std::string_view raw) -> std::optional<int> {
    QLine l = SplitLine(raw);
    if (l.body.empty()) return std::nullopt;
    if (IsBanner(l.body)) return kSniffCertain;
    if (l.indent == 0) {
      in_gpu_block = !GpuHeaderBusId(l.body).empty();
    } else if (in_gpu_block && l.has_value) {
      return kSniffStrong;
    }
    return std::nullopt;
  };
  return JudgeHeadLines(head, {}, 400, banner_or_gpu).value_or(kSniffNo);
}

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiQReader() {
  return MakeFileReader<QParser>("nvidia-smi-q", SniffQ);
}

}  // namespace laggard
