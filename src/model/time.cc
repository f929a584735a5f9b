#include "model/time.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/text.h"

namespace laggard {
namespace {

constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::string_view kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

// Splits at runs of blanks, up to `max` words; false when there are more.
bool Words(std::string_view s, std::vector<std::string_view>& out, size_t max) {
  out.clear();
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && IsSpace(s[p])) ++p;
    if (p == s.size()) break;
    size_t e = p;
    while (e < s.size() && !IsSpace(s[e])) ++e;
    if (out.size() == max) return false;
    out.push_back(s.substr(p, e - p));
    p = e;
  }
  return true;
}

}  // namespace

std::string_view UnitSuffix(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSeconds: return "s";
    case TimeUnit::kMilliseconds: return "ms";
    case TimeUnit::kMicroseconds: return "us";
    case TimeUnit::kNanoseconds: return "ns";
  }
  return "s";
}

std::optional<TimeUnit> ParseTimeUnit(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  static constexpr struct {
    std::string_view name;
    TimeUnit unit;
  } kNames[] = {
      {"s", TimeUnit::kSeconds},
      {"sec", TimeUnit::kSeconds},
      {"secs", TimeUnit::kSeconds},
      {"second", TimeUnit::kSeconds},
      {"seconds", TimeUnit::kSeconds},
      {"ms", TimeUnit::kMilliseconds},
      {"msec", TimeUnit::kMilliseconds},
      {"msecs", TimeUnit::kMilliseconds},
      {"millisecond", TimeUnit::kMilliseconds},
      {"milliseconds", TimeUnit::kMilliseconds},
      {"us", TimeUnit::kMicroseconds},
      {"\xc2\xb5s", TimeUnit::kMicroseconds},
      {"usec", TimeUnit::kMicroseconds},
      {"usecs", TimeUnit::kMicroseconds},
      {"microsecond", TimeUnit::kMicroseconds},
      {"microseconds", TimeUnit::kMicroseconds},
      {"ns", TimeUnit::kNanoseconds},
      {"nsec", TimeUnit::kNanoseconds},
      {"nanosecond", TimeUnit::kNanoseconds},
      {"nanoseconds", TimeUnit::kNanoseconds},
  };
  for (const auto& n : kNames) {
    if (EqualsIgnoreCase(text, n.name)) return n.unit;
  }
  return std::nullopt;
}

double ToSeconds(DurationNs d) { return static_cast<double>(d) / 1e9; }

namespace {

// Reads exactly `digits` decimal digits from text[pos...].
bool ReadFixed(std::string_view text, size_t& pos, int digits, int& out) {
  if (pos + static_cast<size_t>(digits) > text.size()) return false;
  int v = 0;
  for (int i = 0; i < digits; ++i) {
    char c = text[pos + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += static_cast<size_t>(digits);
  out = v;
  return true;
}

std::optional<TimeNs> ParseIso8601(std::string_view text) {
  // YYYY-MM-DD[T| ]HH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM|+HHMM]
  size_t pos = 0;
  int year, month, day, hour, minute, second = 0;
  if (!ReadFixed(text, pos, 4, year) || pos >= text.size() || text[pos++] != '-')
    return std::nullopt;
  if (!ReadFixed(text, pos, 2, month) || pos >= text.size() || text[pos++] != '-')
    return std::nullopt;
  if (!ReadFixed(text, pos, 2, day)) return std::nullopt;
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != ' ' && text[pos] != 't'))
    return std::nullopt;
  ++pos;
  if (!ReadFixed(text, pos, 2, hour) || pos >= text.size() || text[pos++] != ':')
    return std::nullopt;
  if (!ReadFixed(text, pos, 2, minute)) return std::nullopt;
  int64_t frac_ns = 0;
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    if (!ReadFixed(text, pos, 2, second)) return std::nullopt;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      ++pos;
      int64_t scale = 100'000'000;
      size_t start = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        frac_ns += (text[pos] - '0') * scale;
        scale /= 10;
        ++pos;
      }
      if (pos == start) return std::nullopt;
    }
  }
  int64_t offset_s = 0;
  if (pos < text.size()) {
    char c = text[pos];
    if (c == 'Z' || c == 'z') {
      ++pos;
    } else if (c == '+' || c == '-') {
      ++pos;
      int oh, om = 0;
      if (!ReadFixed(text, pos, 2, oh)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size()) {
        if (!ReadFixed(text, pos, 2, om)) return std::nullopt;
      }
      offset_s = (oh * 3600 + om * 60) * (c == '+' ? 1 : -1);
    }
  }
  if (pos != text.size()) return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                     std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  int64_t days = sys_days{ymd}.time_since_epoch().count();
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  // Years outside ~1678..2261 do not fit in int64 nanoseconds.
  int64_t ns;
  if (__builtin_mul_overflow(secs, int64_t{1'000'000'000}, &ns) ||
      __builtin_add_overflow(ns, frac_ns, &ns)) {
    return std::nullopt;
  }
  return ns;
}

}  // namespace

std::optional<TimeNs> ParseTimestamp(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  if (text.size() >= 10 && text[4] == '-') return ParseIso8601(text);
  // Epoch number, parsed exactly (a double cannot hold ns since 1970).
  size_t dot = text.find('.');
  std::string_view int_part = text.substr(0, dot);
  std::string_view frac_part =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  int64_t whole = 0;
  auto [end, ec] = std::from_chars(int_part.data(), int_part.data() + int_part.size(), whole);
  if (int_part.empty() || ec != std::errc() || end != int_part.data() + int_part.size() ||
      whole < 0) {
    return std::nullopt;
  }
  for (char c : frac_part) {
    if (!IsDigit(c)) return std::nullopt;
  }
  // Larger numbers are finer units: ms, us, ns since the epoch.
  constexpr int64_t k1e12 = 1'000'000'000'000;
  int64_t unit_ns = whole > k1e12 * 1'000'000 ? 1
                    : whole > k1e12 * 1'000   ? 1'000
                    : whole > k1e12           ? 1'000'000
                                              : 1'000'000'000;
  if (whole > INT64_MAX / unit_ns) return std::nullopt;
  int64_t ns = whole * unit_ns;
  int64_t scale = unit_ns / 10;
  for (char c : frac_part) {
    if (scale == 0) break;
    if (__builtin_add_overflow(ns, (c - '0') * scale, &ns)) return std::nullopt;
    scale /= 10;
  }
  return ns;
}

std::string FormatDate(TimeNs t) { return FormatTimestamp(t).substr(0, 10); }

bool IsWallClockTime(TimeNs t) {
  constexpr TimeNs kFrom = 946'684'800LL * 1'000'000'000;  // 2000-01-01
  static const TimeNs to = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() +
                           24LL * 3600 * 1'000'000'000;
  return t >= kFrom && t <= to;
}

std::string FormatTimestamp(TimeNs t) {
  using namespace std::chrono;
  // Floor division that cannot overflow, even at INT64_MIN.
  int64_t secs = t / 1'000'000'000;
  int64_t sub_ns = t % 1'000'000'000;
  if (sub_ns < 0) sub_ns += 1'000'000'000, --secs;
  int64_t ms = sub_ns / 1'000'000;
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  year_month_day ymd{sys_days{std::chrono::days{days}}};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(rem / 3600),
                static_cast<int>((rem / 60) % 60), static_cast<int>(rem % 60),
                static_cast<int>(ms));
  return buf;
}

std::optional<TimeNs> ParseCtime(std::string_view text) {
  std::vector<std::string_view> w;
  if (!Words(text, w, 5) || w.size() != 5) return std::nullopt;
  int weekday = -1;
  for (int i = 0; i < 7; ++i) {
    if (EqualsIgnoreCase(w[0], kWeekdays[i])) weekday = i;
  }
  unsigned month = 0;
  for (unsigned i = 0; i < 12; ++i) {
    if (EqualsIgnoreCase(w[1], kMonths[i])) month = i + 1;
  }
  auto day = ParseFixedDigits(w[2], 1, 2);
  auto year = ParseFixedDigits(w[4], 4, 4);
  std::string_view hms = w[3];
  if (weekday < 0 || month == 0 || !day || !year || hms.size() != 8 || hms[2] != ':' ||
      hms[5] != ':') {
    return std::nullopt;
  }
  auto hour = ParseFixedDigits(hms.substr(0, 2), 2, 2);
  auto minute = ParseFixedDigits(hms.substr(3, 2), 2, 2);
  auto second = ParseFixedDigits(hms.substr(6, 2), 2, 2);
  // 60 is a leap second, which asctime can print.
  if (!hour || !minute || !second || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{*year}, std::chrono::month{month},
                     std::chrono::day{static_cast<unsigned>(*day)}};
  if (!ymd.ok()) return std::nullopt;
  sys_days date{ymd};
  if (std::chrono::weekday{date}.c_encoding() != static_cast<unsigned>(weekday)) {
    return std::nullopt;
  }
  int64_t secs = static_cast<int64_t>(date.time_since_epoch().count()) * 86400 + *hour * 3600 +
                 *minute * 60 + *second;
  return secs * 1'000'000'000;
}

}  // namespace laggard
