// Fuzzes the value parsers every reader relies on: ParseTimestamp and
// ParseTimeUnit (model/time.h) and ParseDurationValue (ingest/common/field_names.h),
// plus ClassifyFieldName on the same text.
//
// Invariants:
//   - ParseTimeUnit ignores case and surrounding blanks;
//   - an epoch timestamp is never negative;
//   - round trips: FormatTimestamp -> ParseTimestamp gives back the instant
//     to the millisecond, and "<integer><unit>" -> ParseDurationValue gives
//     back exactly integer * unit, with that unit reported.

#include <cmath>
#include <cstdint>

#include "base/text.h"
#include "fuzz_support.h"
#include "ingest/common/field_names.h"
#include "model/time.h"

namespace laggard::fuzz {
namespace {

constexpr TimeUnit kUnits[] = {TimeUnit::kSeconds, TimeUnit::kMilliseconds, TimeUnit::kMicroseconds,
                               TimeUnit::kNanoseconds};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(time_parsers) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ExactBuffer text(input);

  auto ts = ParseTimestamp(text.view());
  if (ts && !input.empty()) {
    std::string_view t = Trim(input);
    if (t.size() < 10 || t[4] != '-') FUZZ_CHECK(*ts >= 0, "epoch value parsed as {}", *ts);
    FormatTimestamp(*ts);
  }

  auto unit = ParseTimeUnit(text.view());
  std::string upper = Upper(input);
  FUZZ_CHECK(ParseTimeUnit(upper) == unit, "ParseTimeUnit is case-sensitive on \"{}\"",
             Printable(input));
  FUZZ_CHECK(ParseTimeUnit(" " + std::string(input) + "\t") == unit,
             "ParseTimeUnit depends on surrounding blanks");
  if (unit) FUZZ_CHECK(ParseTimeUnit(UnitSuffix(*unit)) == unit, "UnitSuffix does not round-trip");

  TimeUnit used = TimeUnit::kSeconds;
  ParseDurationValue(text.view(), std::nullopt, used);
  for (TimeUnit u : kUnits) {
    TimeUnit used_u = TimeUnit::kSeconds;
    ParseDurationValue(text.view(), u, used_u);
  }
  ClassifyFieldName(text.view());

  // Round trips from values derived from the input's hash.
  uint64_t h = Hash(input);
  // Instants from 1678-01-01 to 2261-12-31, which FormatTimestamp writes
  // with four-digit years and int64 nanoseconds can hold.
  constexpr int64_t kLo = -9'214'560'000'000'000'000;
  constexpr int64_t kHi = 9'214'646'400'000'000'000;
  constexpr uint64_t kSpan = static_cast<uint64_t>(kHi) - static_cast<uint64_t>(kLo);
  int64_t instant = static_cast<int64_t>(static_cast<uint64_t>(kLo) + h % kSpan);
  std::string formatted = FormatTimestamp(instant);
  auto back = ParseTimestamp(formatted);
  int64_t want = FloorDiv(instant, 1'000'000) * 1'000'000;
  FUZZ_CHECK(back == want, "FormatTimestamp({}) = \"{}\" parses as {}, want {}", instant, formatted,
             back.value_or(-1), want);

  // Any instant can be formatted, the extremes included.
  FormatTimestamp(INT64_MIN + static_cast<int64_t>(h % 10'000'000'000));
  FormatTimestamp(INT64_MAX - static_cast<int64_t>(h % 10'000'000'000));

  int64_t value = static_cast<int64_t>((h >> 11) % 1'000'000'000);
  TimeUnit u = kUnits[(h >> 3) % 4];
  for (const char* sep : {"", " "}) {
    std::string written = fmt::format("{}{}{}", value, sep, UnitSuffix(u));
    TimeUnit got_unit = TimeUnit::kSeconds;
    auto d = ParseDurationValue(written, TimeUnit::kMilliseconds, got_unit);
    FUZZ_CHECK(d == value * NsPerUnit(u) && got_unit == u, "\"{}\" parsed as {} ns", written,
               d.value_or(-1));
  }
  return 0;
}
