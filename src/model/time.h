// Time in the laggard model: one representation, one place for conversions.
//
// Every instant is a TimeNs (nanoseconds since the Unix epoch, UTC) and every
// length of time is a DurationNs (nanoseconds). Parsers convert whatever unit
// their input uses through the functions below and nowhere else; reports
// convert back to seconds through ToSeconds(). int64 nanoseconds cover
// +-292 years, far more than any training run.
//
// Thread-safety: all functions are pure.

#ifndef LAGGARD_MODEL_TIME_H_
#define LAGGARD_MODEL_TIME_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace laggard {

using TimeNs = int64_t;      // instant: ns since 1970-01-01T00:00:00Z
using DurationNs = int64_t;  // length of time in ns

enum class TimeUnit : uint8_t { kSeconds, kMilliseconds, kMicroseconds, kNanoseconds };

// Nanoseconds per unit.
constexpr int64_t NsPerUnit(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSeconds: return 1'000'000'000;
    case TimeUnit::kMilliseconds: return 1'000'000;
    case TimeUnit::kMicroseconds: return 1'000;
    case TimeUnit::kNanoseconds: return 1;
  }
  return 1;
}

std::string_view UnitSuffix(TimeUnit unit);  // "s", "ms", "us", "ns"

// Parses a unit suffix as written after a number: "s", "sec", "secs",
// "seconds", "ms", "msec", "milliseconds", "us", "µs", "usec", "ns", ...
// Case-insensitive. Returns nullopt for anything else (including "").
std::optional<TimeUnit> ParseTimeUnit(std::string_view text);

// value * unit, rounded to the nearest nanosecond. nullopt when the result
// does not fit in int64 or value is not finite. Inline: it runs once per
// step record on the ingest hot path.
inline std::optional<DurationNs> ToDurationNs(double value, TimeUnit unit) {
  double ns = value * static_cast<double>(NsPerUnit(unit));
  if (!(ns < 9.2e18 && ns > -9.2e18)) return std::nullopt;  // also NaN and inf
  return static_cast<DurationNs>(std::llround(ns));
}

double ToSeconds(DurationNs d);

// Parses a wall-clock timestamp: ISO 8601 / RFC 3339 ("2024-02-02T15:50:01Z",
// "2024-02-02 15:50:01.123", "+01:00" offsets; no offset means UTC) or Unix
// epoch seconds with an optional fraction ("1706860208.35"). Epoch values
// larger than 1e12 are taken as milliseconds, larger than 1e15 as
// microseconds, larger than 1e18 as nanoseconds.
std::optional<TimeNs> ParseTimestamp(std::string_view text);

// Formats an instant as "2024-02-02T15:50:01.350Z" (millisecond precision).
std::string FormatTimestamp(TimeNs t);
// Its day, "2024-02-02" (UTC).
std::string FormatDate(TimeNs t);

// A time that can be when something ran: from 2000-01-01 to a day after
// now. Earlier ones are relative (a trace timed from its own start, a
// simulator's clock); later ones a monotonic clock read as epoch
// microseconds. The job splitter and the fleet history date jobs by it.
bool IsWallClockTime(TimeNs t);

// The C library's asctime layout nvidia-smi prints, "Mon Jan 29 10:41:38
// 2024" (the day of month padded with a space: "Sat Jul  6 15:09:26 2024"),
// surrounding blanks allowed. nvidia-smi prints the machine's local time
// without a zone; it is read as UTC, like ParseTimestamp() does with
// timestamps that carry no offset. nullopt when `text` is anything else,
// including an impossible date (Feb 30) or a weekday that does not match.
std::optional<TimeNs> ParseCtime(std::string_view text);

}  // namespace laggard

#endif  // LAGGARD_MODEL_TIME_H_
