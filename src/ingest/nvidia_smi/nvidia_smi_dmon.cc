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
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_util.h"

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

// Tokens of a '#' header line without the '#': "#Date  Time  gpu" and
// "# gpu  pwr" both give {Date, Time, gpu} / {gpu, pwr}.
void HeaderTokens(std::string_view line, std::vector<std::string_view>& out) {
  line = Trim(line);
  if (!line.empty() && line.front() == '#') line.remove_prefix(1);
  SplitBlanks(line, out);
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
  std::string iso =
      fmt::format("{}-{}-{}T{}Z", date.substr(0, 4), date.substr(4, 2), date.substr(6, 2), time);
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

// The reading of one file.
class DmonFile {
 public:
  explicit DmonFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    ForEachNonBlankLine(lines, [&](const TextLine& l) {
      if (l.trimmed.front() == '#') {
        HeaderLine(l.trimmed, l.number);
      } else if (!have_header_) {
        // Preamble: a captured command line may give the interval.
        if (auto d = IntervalFromCommandLine(l.trimmed, SmiCommand::kDmon)) {
          interval_ = *d;
          interval_from_file_ = true;
        }
      } else {
        Row(l.text, l.trimmed, l.number);
      }
    });
    Finish();
    return taken_;
  }

 private:
  void Bad(uint64_t n, std::string_view line, std::string_view why) {
    ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n,
                    fmt::format("nvidia-smi dmon row {}: \"{}\"", why, Printable(line, 100)));
  }

  // The names line, the unit line under it; other '#' lines are comments.
  void HeaderLine(std::string_view t, uint64_t n) {
    HeaderTokens(t, tokens_);
    if (IndexOf(tokens_, "gpu") >= 0 && !IsPmonHeader(tokens_)) {
      layout_.names.assign(tokens_.begin(), tokens_.end());
      layout_.units.clear();
      names_line_ = n;
      have_header_ = true;
      layout_dirty_ = true;
    } else if (have_header_ && n == names_line_ + 1 && tokens_.size() == layout_.names.size() &&
               IndexOf(tokens_, "Idx") >= 0) {
      layout_.units.assign(tokens_.begin(), tokens_.end());
    }
  }

  void Row(std::string_view line, std::string_view t, uint64_t n) {
    if (layout_dirty_) {
      ResolveLayout();
      if (!file_mode_) file_mode_ = layout_.mode;
      layout_dirty_ = false;
    }
    SplitBlanks(t, tokens_);
    if (tokens_.size() != layout_.fields.size()) {
      Bad(n, line,
          fmt::format("has {} values for {} columns", tokens_.size(), layout_.fields.size()));
      return;
    }
    if (layout_.mode != *file_mode_) {
      Bad(n, line, "comes under a header whose Date/Time columns differ from the file's first");
      return;
    }
    auto index = ParseInt<int32_t>(tokens_[static_cast<size_t>(layout_.gpu)]);
    if (!index || *index < 0 || *index > kMaxGpuIndex) {
      Bad(n, line, "has no GPU index");
      return;
    }
    GpuSample s;
    if (!ReadValues(line, n, s) || !SetTime(line, n, *index, s)) return;
    s.src = ctx_.Ref(n);
    by_index_[*index].samples.push_back(s);
    ++taken_;
  }

  // The row's readings into `s`; false (counted) when one is not a number.
  bool ReadValues(std::string_view line, uint64_t n, GpuSample& s) {
    std::optional<double> power_violation, thermal_violation;
    for (size_t i = 0; i < tokens_.size(); ++i) {
      Field f = layout_.fields[i];
      if (f == Field::kDate || f == Field::kTime || f == Field::kGpu || f == Field::kIgnored ||
          f == Field::kUnknown) {
        continue;
      }
      if (IsAbsentValue(tokens_[i])) continue;
      auto v = ParseDouble(tokens_[i]);
      if (!v) {
        Bad(n, line,
            fmt::format("has a value in column '{}' that is not a number", layout_.names[i]));
        return false;
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
    // dmon -s v: pviol is the share of the interval spent power-capped,
    // tviol whether a thermal limit held the clocks; as clock events they
    // are the SW power cap and SW thermal slowdown reasons.
    if (power_violation || thermal_violation) {
      uint64_t events = 0;
      if (power_violation.value_or(0) > 0) events |= clock_event::kSwPowerCap;
      if (thermal_violation.value_or(0) > 0) events |= clock_event::kSwThermalSlowdown;
      s.clock_events = events;
    }
    return true;
  }

  // The row's time, by the layout's TimeMode; false (counted) when it
  // cannot be had.
  bool SetTime(std::string_view line, uint64_t n, int32_t index, GpuSample& s) {
    switch (layout_.mode) {
      case TimeMode::kAbsolute: {
        auto at = ParseDateTime(tokens_[static_cast<size_t>(layout_.date)],
                                tokens_[static_cast<size_t>(layout_.time)]);
        if (!at) {
          Bad(n, line, "has an unreadable Date/Time");
          return false;
        }
        s.time_ns = *at;
        return true;
      }
      case TimeMode::kTimeOfDay: {
        auto tod = ParseTimeOfDay(tokens_[static_cast<size_t>(layout_.time)]);
        if (!tod) {
          Bad(n, line, "has an unreadable Time");
          return false;
        }
        if (!first_tod_) first_tod_ = *tod;
        if (last_tod_ && *tod < *last_tod_ - 12 * 3600) ++days_;  // past midnight
        last_tod_ = *tod;
        auto at = SecondsToNs(days_ * 86400 + *tod - *first_tod_);
        if (!at) {
          Bad(n, line, "is too many days after the first row");
          return false;
        }
        s.time_ns = *at;
        return true;
      }
      case TimeMode::kRowIndex: {
        auto at = groups_.Next(index, interval_);
        if (!at) {
          Bad(n, line, "is too far from the first row for its interval");
          return false;
        }
        s.time_ns = *at;
        return true;
      }
    }
    return true;
  }

  void Finish() {
    bool approximate = file_mode_ && *file_mode_ != TimeMode::kAbsolute;
    std::string how =
        !file_mode_ || *file_mode_ == TimeMode::kAbsolute ? std::string()
        : *file_mode_ == TimeMode::kTimeOfDay
            ? std::string(
                  "dmon printed a Time but no Date column (-o T): times are offsets from "
                  "the first row; rerun with -o DT for absolute times")
            : fmt::format(
                  "dmon printed no Time column: times are row index x {} s ({}); rerun "
                  "with -o DT for absolute times",
                  ToSeconds(interval_),
                  interval_from_file_ ? "-d of the captured command" : "assumed");
    EmitGpuRecords(ctx_, by_index_, approximate, how);
  }

  // The meaning of each column of the names (and unit) lines; notes the
  // columns laggard does not know, once per file.
  void ResolveLayout() {
    bool has_units = layout_.units.size() == layout_.names.size();
    layout_.fields.clear();
    layout_.date = layout_.time = layout_.gpu = -1;
    for (size_t i = 0; i < layout_.names.size(); ++i) {
      std::string_view unit = has_units ? std::string_view(layout_.units[i]) : std::string_view();
      // "gpu" is the index column whatever unit a variant prints under it.
      Field f = EqualsIgnoreCase(layout_.names[i], "gpu") && layout_.gpu < 0
                    ? Field::kGpu
                    : Resolve(layout_.names[i], unit);
      int col = static_cast<int>(i);
      if (f == Field::kDate && layout_.date < 0) layout_.date = col;
      if (f == Field::kTime && layout_.time < 0) layout_.time = col;
      if (f == Field::kGpu && layout_.gpu < 0) layout_.gpu = col;
      if (f == Field::kUnknown) {
        std::string key =
            has_units ? fmt::format("{} [{}]", layout_.names[i], unit) : layout_.names[i];
        if (noted_.insert(key).second) {
          ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, names_line_,
                          fmt::format("nvidia-smi dmon column '{}' is not one laggard reads", key));
        }
      }
      layout_.fields.push_back(f);
    }
    layout_.mode = layout_.date >= 0 && layout_.time >= 0 ? TimeMode::kAbsolute
                   : layout_.time >= 0                    ? TimeMode::kTimeOfDay
                                                          : TimeMode::kRowIndex;
  }

  ReaderContext& ctx_;
  std::map<int32_t, GpuRecord> by_index_;
  std::vector<std::string_view> tokens_;
  std::set<std::string> noted_;  // "name [unit]" of columns already noted
  Layout layout_;
  bool have_header_ = false;
  bool layout_dirty_ = false;
  uint64_t names_line_ = 0;
  std::optional<TimeMode> file_mode_;
  DurationNs interval_ = 1'000'000'000;
  bool interval_from_file_ = false;
  RowGroupClock groups_;                         // TimeMode::kRowIndex
  std::optional<int64_t> first_tod_, last_tod_;  // TimeMode::kTimeOfDay
  int64_t days_ = 0;
  uint64_t taken_ = 0;
};

int SniffDmon(std::string_view head) {
  std::vector<std::string_view> names, units;
  int gpu = -1;
  bool names_pending = false;  // `names` waits for the unit line under it
  // A names line without units (some captures drop it): trusted when it
  // holds dmon's own column names, above the text-log reader's
  // kSniffLikely.
  auto names_alone = [&] {
    int known = 0;
    for (std::string_view n : names) known += IsKnownName(n) && !EqualsIgnoreCase(n, "gpu");
    return known >= 2;
  };
  int score = kSniffNo;
  ForEachHeadLine(head, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (names_pending) {
      names_pending = false;
      if (!t.empty() && t.front() == '#') {
        HeaderTokens(t, units);
        if (units.size() == names.size() &&
            EqualsIgnoreCase(units[static_cast<size_t>(gpu)], "Idx")) {
          score = kSniffSure;
          return false;
        }
      }
      if (names_alone()) {
        score = kSniffLikely + 10;
        return false;
      }
    }
    if (t.empty() || t.front() != '#') return true;
    HeaderTokens(t, names);
    gpu = IndexOf(names, "gpu");
    if (gpu < 0) return true;
    if (IsPmonHeader(names)) return false;
    names_pending = true;
    return true;
  });
  if (names_pending && names_alone()) score = kSniffLikely + 10;
  return score;
}

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiDmonReader() {
  return MakeFileReader<DmonFile>("nvidia-smi-dmon", SniffDmon);
}

}  // namespace laggard
