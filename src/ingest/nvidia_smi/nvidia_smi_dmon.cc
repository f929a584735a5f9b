// `nvidia-smi dmon` output, any `-s` selection, with or without `-o D`,
// `-o T`, `-o DT` / `-o TD`:
//
//   #Date       Time        gpu    pwr  gtemp  mtemp     sm    mem ...  mclk   pclk
//   #YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      % ...   MHz    MHz
//    20240104   13:54:35      0    218     43      -     95      0 ... 12481   2325
//
// The first '#' line names the columns, the second gives their units; both
// come again every so often, and may change between two captures appended
// to one file. A column's meaning is read from its name *and* unit: `sm`
// under `%` is SM utilisation, under `MHz` it would be a clock. "-" marks a
// value the GPU does not report (nullopt). Columns laggard knows but does
// not use (enc, dec, jpg, ofa, fb, bar1, ccpm, sbecc, dbecc, pci) are skipped
// quietly; any other column is noted once per file (hardware.unknown_field).
//
// Time: with Date and Time columns a row's time is absolute, taken as UTC
// (dmon prints local time without a zone). With Time only, the date is
// unknown: times are offsets from the file's first row, a step back of more
// than 12 h counting as midnight. With neither (or Date only), rows are
// grouped into samples (a group ends when a GPU index repeats) and group g
// is at g x interval, the interval being `-d N` from a captured command line
// above the header, else 1 s. The last two are approximate
// (hardware.approximate_time, once per file).
//
// Lines before the first header are preamble (a shell prompt, the command)
// and are not data. After it, every line that is not blank and not '#' is a
// sample row: taken, or counted as hardware.bad_record with its line.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/nvidia_smi/nvidia_smi_util.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"

namespace laggard {
namespace {

enum class Field : uint8_t {
  kDate,
  kTime,
  kGpu,
  kPower,
  kTemp,
  kMemTemp,
  kUtil,
  kMemUtil,
  kSmClock,
  kMemClock,
  kPowerViolation,
  kThermalViolation,
  kPcieRx,
  kPcieTx,
  kIgnored,  // known, not used
  kUnknown,
};

// (column name, unit) -> meaning. The first entry of a name is its meaning
// when the file has no unit line.
struct ColumnSpec {
  std::string_view name;
  std::string_view unit;
  Field field;
};
constexpr ColumnSpec kColumns[] = {
    {"Date", "YYYYMMDD", Field::kDate},
    {"Time", "HH:MM:SS", Field::kTime},
    {"gpu", "Idx", Field::kGpu},
    {"pwr", "W", Field::kPower},
    {"gtemp", "C", Field::kTemp},
    {"temp", "C", Field::kTemp},  // drivers before R450
    {"mtemp", "C", Field::kMemTemp},
    {"sm", "%", Field::kUtil},
    {"sm", "MHz", Field::kSmClock},
    {"mem", "%", Field::kMemUtil},
    {"mem", "MHz", Field::kMemClock},
    {"pclk", "MHz", Field::kSmClock},  // processor (graphics/SM) clock
    {"mclk", "MHz", Field::kMemClock},
    {"pviol", "%", Field::kPowerViolation},
    {"tviol", "bool", Field::kThermalViolation},
    {"tviol", "%", Field::kThermalViolation},
    {"rxpci", "MB/s", Field::kPcieRx},
    {"txpci", "MB/s", Field::kPcieTx},
    {"enc", "%", Field::kIgnored},
    {"dec", "%", Field::kIgnored},
    {"jpg", "%", Field::kIgnored},
    {"ofa", "%", Field::kIgnored},
    {"fb", "MB", Field::kIgnored},
    {"bar1", "MB", Field::kIgnored},
    {"ccpm", "MB", Field::kIgnored},
    {"sbecc", "errs", Field::kIgnored},
    {"dbecc", "errs", Field::kIgnored},
    {"pci", "errs", Field::kIgnored},
};

// Meaning of a column; `unit` empty when the file has no unit line.
Field Resolve(std::string_view name, std::string_view unit) {
  for (const ColumnSpec& c : kColumns) {
    if (!EqualsIgnoreCase(c.name, name)) continue;
    if (unit.empty() || EqualsIgnoreCase(c.unit, unit)) return c.field;
  }
  return Field::kUnknown;
}

bool IsKnownName(std::string_view name) {
  for (const ColumnSpec& c : kColumns) {
    if (EqualsIgnoreCase(c.name, name)) return true;
  }
  return false;
}

void Tokenize(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && IsSpace(line[pos])) ++pos;
    size_t start = pos;
    while (pos < line.size() && !IsSpace(line[pos])) ++pos;
    if (pos > start) out.push_back(line.substr(start, pos - start));
  }
}

// Tokens of a '#' header line without the '#': "#Date  Time  gpu" and
// "# gpu  pwr" both give {Date, Time, gpu} / {gpu, pwr}.
void HeaderTokens(std::string_view line, std::vector<std::string_view>& out) {
  line = Trim(line);
  if (!line.empty() && line.front() == '#') line.remove_prefix(1);
  Tokenize(line, out);
}

int IndexOf(const std::vector<std::string_view>& tokens, std::string_view name) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (EqualsIgnoreCase(tokens[i], name)) return static_cast<int>(i);
  }
  return -1;
}

// `nvidia-smi pmon` has the same '#' header shape, per process.
bool IsPmonHeader(const std::vector<std::string_view>& names) {
  return IndexOf(names, "pid") >= 0 || IndexOf(names, "command") >= 0;
}

// "HH:MM:SS" -> seconds of the day.
std::optional<int64_t> ParseTimeOfDay(std::string_view t) {
  if (t.size() != 8 || t[2] != ':' || t[5] != ':') return std::nullopt;
  auto h = ParseInt<int64_t>(t.substr(0, 2));
  auto m = ParseInt<int64_t>(t.substr(3, 2));
  auto s = ParseInt<int64_t>(t.substr(6, 2));
  if (!h || !m || !s || *h < 0 || *h > 23 || *m < 0 || *m > 59 || *s < 0 || *s > 60) {
    return std::nullopt;
  }
  return *h * 3600 + *m * 60 + *s;
}

// "20240104" + "13:54:35" -> instant, as UTC.
std::optional<TimeNs> ParseDateTime(std::string_view date, std::string_view time) {
  if (date.size() != 8 || time.size() != 8) return std::nullopt;
  for (char c : date) {
    if (!IsDigit(c)) return std::nullopt;
  }
  std::string iso = fmt::format("{}-{}-{}T{}Z", date.substr(0, 4), date.substr(4, 2),
                                date.substr(6, 2), time);
  return ParseTimestamp(iso);
}

std::optional<TimeNs> SecondsToNs(int64_t seconds) {
  TimeNs ns;
  if (__builtin_mul_overflow(seconds, int64_t{1'000'000'000}, &ns)) return std::nullopt;
  return ns;
}

enum class TimeMode : uint8_t { kAbsolute, kTimeOfDay, kRowIndex };

struct Layout {
  std::vector<std::string> names;
  std::vector<std::string> units;  // empty when the file has no unit line
  std::vector<Field> fields;
  int date = -1, time = -1, gpu = -1;
  TimeMode mode = TimeMode::kRowIndex;
};

class NvidiaSmiDmonReader final : public TextReader {
 public:
  std::string_view name() const override { return "nvidia-smi-dmon"; }

  int Sniff(std::string_view head) const override {
    std::vector<std::string_view> names, units;
    size_t pos = 0;
    while (pos < head.size()) {
      size_t nl = head.find('\n', pos);
      if (nl == std::string_view::npos) break;
      std::string_view line = head.substr(pos, nl - pos);
      pos = nl + 1;
      std::string_view t = Trim(line);
      if (t.empty() || t.front() != '#') continue;
      HeaderTokens(t, names);
      int gpu = IndexOf(names, "gpu");
      if (gpu < 0) continue;
      if (IsPmonHeader(names)) return 0;
      size_t next = head.find('\n', pos);
      if (next != std::string_view::npos) {
        std::string_view u = Trim(head.substr(pos, next - pos));
        if (!u.empty() && u.front() == '#') {
          HeaderTokens(u, units);
          if (units.size() == names.size() && EqualsIgnoreCase(units[static_cast<size_t>(gpu)], "Idx")) {
            return 95;
          }
        }
      }
      // A names line without units (some captures drop it): trust it when it
      // holds dmon's own column names.
      int known = 0;
      for (std::string_view n : names) known += IsKnownName(n) && !EqualsIgnoreCase(n, "gpu");
      if (known >= 2) return 70;
    }
    return 0;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    std::map<int32_t, GpuRecord> by_index;
    std::vector<std::string_view> tokens;
    std::set<std::string> noted;  // "name [unit]" of columns already noted
    Layout layout;
    bool have_header = false;
    bool layout_dirty = false;
    uint64_t names_line = 0;
    std::optional<TimeMode> file_mode;
    DurationNs interval = 1'000'000'000;
    bool interval_from_file = false;
    // Row-group state (TimeMode::kRowIndex) and time-of-day state.
    int64_t group = 0;
    std::vector<bool> in_group;
    std::optional<int64_t> first_tod, last_tod;
    int64_t days = 0;
    uint64_t taken = 0;

    auto bad = [&](uint64_t n, std::string_view line, std::string_view why) {
      ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                     fmt::format("nvidia-smi dmon row {}: \"{}\"", why, Printable(line, 100)));
    };

    std::string_view line;
    while (lines.Next(line)) {
      uint64_t n = lines.line_number();
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      if (t.front() == '#') {
        HeaderTokens(t, tokens);
        if (IndexOf(tokens, "gpu") >= 0 && !IsPmonHeader(tokens)) {
          layout.names.assign(tokens.begin(), tokens.end());
          layout.units.clear();
          names_line = n;
          have_header = true;
          layout_dirty = true;
        } else if (have_header && n == names_line + 1 && tokens.size() == layout.names.size() &&
                   IndexOf(tokens, "Idx") >= 0) {
          layout.units.assign(tokens.begin(), tokens.end());
        }
        continue;  // other '#' lines are comments
      }
      if (!have_header) {
        if (auto d = IntervalFromCommandLine(t, SmiCommand::kDmon)) {
          interval = *d;
          interval_from_file = true;
        }
        continue;
      }
      if (layout_dirty) {
        ResolveLayout(layout, ctx, names_line, noted);
        if (!file_mode) file_mode = layout.mode;
        layout_dirty = false;
      }
      Tokenize(t, tokens);
      if (tokens.size() != layout.fields.size()) {
        bad(n, line, fmt::format("has {} values for {} columns", tokens.size(), layout.fields.size()));
        continue;
      }
      if (layout.mode != *file_mode) {
        bad(n, line, "comes under a header whose Date/Time columns differ from the file's first");
        continue;
      }
      auto index = ParseInt<int32_t>(tokens[static_cast<size_t>(layout.gpu)]);
      if (!index || *index < 0 || *index > kMaxGpuIndex) {
        bad(n, line, "has no GPU index");
        continue;
      }
      GpuSample s;
      std::optional<double> power_violation, thermal_violation;
      std::string_view garbled;
      for (size_t i = 0; i < tokens.size() && garbled.empty(); ++i) {
        Field f = layout.fields[i];
        if (f == Field::kDate || f == Field::kTime || f == Field::kGpu || f == Field::kIgnored ||
            f == Field::kUnknown) {
          continue;
        }
        if (IsAbsentValue(tokens[i])) continue;
        auto v = ParseDouble(tokens[i]);
        if (!v) {
          garbled = layout.names[i];
          break;
        }
        switch (f) {
          case Field::kPower: s.power_w = v; break;
          case Field::kTemp: s.temp_c = v; break;
          case Field::kMemTemp: s.mem_temp_c = v; break;
          case Field::kUtil: s.util_pct = v; break;
          case Field::kMemUtil: s.mem_util_pct = v; break;
          case Field::kSmClock: s.sm_clock_mhz = v; break;
          case Field::kMemClock: s.mem_clock_mhz = v; break;
          case Field::kPowerViolation: power_violation = v; break;
          case Field::kThermalViolation: thermal_violation = v; break;
          case Field::kPcieRx: s.pcie_rx_mb_s = v; break;
          case Field::kPcieTx: s.pcie_tx_mb_s = v; break;
          default: break;
        }
      }
      if (!garbled.empty()) {
        bad(n, line, fmt::format("has a value in column '{}' that is not a number", garbled));
        continue;
      }
      // dmon -s v: pviol is the share of the interval spent power-capped,
      // tviol whether a thermal limit held the clocks; as clock events they
      // are the SW power cap and SW thermal slowdown reasons.
      if (power_violation || thermal_violation) {
        uint64_t events = 0;
        if (power_violation.value_or(0) > 0) events |= clock_event::kSwPowerCap;
        if (thermal_violation.value_or(0) > 0) events |= clock_event::kSwThermalSlowdown;
        s.clock_events = events;
      }
      switch (layout.mode) {
        case TimeMode::kAbsolute: {
          auto at = ParseDateTime(tokens[static_cast<size_t>(layout.date)],
                                  tokens[static_cast<size_t>(layout.time)]);
          if (!at) {
            bad(n, line, "has an unreadable Date/Time");
            continue;
          }
          s.time_ns = *at;
          break;
        }
        case TimeMode::kTimeOfDay: {
          auto tod = ParseTimeOfDay(tokens[static_cast<size_t>(layout.time)]);
          if (!tod) {
            bad(n, line, "has an unreadable Time");
            continue;
          }
          if (!first_tod) first_tod = *tod;
          if (last_tod && *tod < *last_tod - 12 * 3600) ++days;  // past midnight
          last_tod = *tod;
          auto at = SecondsToNs(days * 86400 + *tod - *first_tod);
          if (!at) {
            bad(n, line, "is too many days after the first row");
            continue;
          }
          s.time_ns = *at;
          break;
        }
        case TimeMode::kRowIndex: {
          size_t i = static_cast<size_t>(*index);
          if (i >= in_group.size()) in_group.resize(i + 1, false);
          if (in_group[i]) {
            ++group;
            std::fill(in_group.begin(), in_group.end(), false);
          }
          in_group[i] = true;
          if (__builtin_mul_overflow(group, interval, &s.time_ns)) {
            bad(n, line, "is too far from the first row for its interval");
            continue;
          }
          break;
        }
      }
      s.src = ctx.Ref(n);
      by_index[*index].samples.push_back(s);
      ++taken;
    }
    bool approximate = file_mode && *file_mode != TimeMode::kAbsolute;
    std::string how =
        !file_mode || *file_mode == TimeMode::kAbsolute ? std::string()
        : *file_mode == TimeMode::kTimeOfDay
            ? std::string("dmon printed a Time but no Date column (-o T): times are offsets from "
                          "the first row; rerun with -o DT for absolute times")
            : fmt::format("dmon printed no Time column: times are row index x {} s ({}); rerun "
                          "with -o DT for absolute times",
                          ToSeconds(interval),
                          interval_from_file ? "-d of the captured command" : "assumed");
    std::vector<GpuRecord> gpus;
    for (auto& [index, gpu] : by_index) {
      gpu.index = index;
      gpus.push_back(std::move(gpu));
    }
    EmitGpuRecords(ctx, gpus, approximate, how);
    return taken;
  }

 private:
  static void ResolveLayout(Layout& layout, ReaderContext& ctx, uint64_t names_line,
                            std::set<std::string>& noted) {
    bool has_units = layout.units.size() == layout.names.size();
    layout.fields.clear();
    layout.date = layout.time = layout.gpu = -1;
    for (size_t i = 0; i < layout.names.size(); ++i) {
      std::string_view unit = has_units ? std::string_view(layout.units[i]) : std::string_view();
      // "gpu" is the index column whatever unit a variant prints under it.
      Field f = EqualsIgnoreCase(layout.names[i], "gpu") && layout.gpu < 0
                    ? Field::kGpu
                    : Resolve(layout.names[i], unit);
      int col = static_cast<int>(i);
      if (f == Field::kDate && layout.date < 0) layout.date = col;
      if (f == Field::kTime && layout.time < 0) layout.time = col;
      if (f == Field::kGpu && layout.gpu < 0) layout.gpu = col;
      if (f == Field::kUnknown) {
        std::string key = has_units ? fmt::format("{} [{}]", layout.names[i], unit) : layout.names[i];
        if (noted.insert(key).second) {
          ctx.diag().Add(DiagCode::kHwUnknownField, ctx.path, names_line,
                         fmt::format("nvidia-smi dmon column '{}' is not one laggard reads", key));
        }
      }
      layout.fields.push_back(f);
    }
    layout.mode = layout.date >= 0 && layout.time >= 0 ? TimeMode::kAbsolute
                  : layout.time >= 0                   ? TimeMode::kTimeOfDay
                                                       : TimeMode::kRowIndex;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiDmonReader() {
  return std::make_unique<NvidiaSmiDmonReader>();
}

}  // namespace laggard
