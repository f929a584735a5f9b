// The article's step line: `print(f"rank {rank}, step {i}, time {dt:.4f}s")`.
// This is the hot path of step ingest (10M lines in the benchmark), so it is
// a hand-written scanner over the line rather than a regex, with inline fast
// paths for the plain numbers such lines hold (bench/step_ingest_bench.cc).
//
// Worked example: "[rank3]: 2024-05-01 12:00:01 rank 3, step 17, time 0.8123s"
//   - the first "rank" (in "[rank3]") is followed by "3]" and not by "step",
//     so the scan moves on;
//   - the second "rank" reads rank=3, then "step" 17, then "time" 0.8123, unit
//     "s" -> kMatched with duration 812'300'000 ns.

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/text.h"
#include "ingest/step_logs/line_matcher.h"

namespace laggard {
namespace {

inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline void SkipBlanks(std::string_view s, size_t& p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
}

// Skips blanks, one optional separator out of `Seps`, blanks.
template <char... Seps>
inline void SkipSep(std::string_view s, size_t& p) {
  SkipBlanks(s, p);
  if (p < s.size() && ((s[p] == Seps) || ...)) ++p;
  SkipBlanks(s, p);
}

// `kw` (lower case) in any case, not followed by a letter.
inline bool Keyword(std::string_view s, size_t& p, std::string_view kw) {
  if (p + kw.size() > s.size()) return false;
  for (size_t i = 0; i < kw.size(); ++i) {
    if (ToLowerAscii(s[p + i]) != kw[i]) return false;
  }
  if (p + kw.size() < s.size() && IsAlpha(s[p + kw.size()])) return false;  // "steps", "timer"
  p += kw.size();
  return true;
}

// std::from_chars at s[p], moving p past the number; the slow path of
// ReadInt() and ReadDouble().
template <typename T>
inline bool FromCharsAt(std::string_view s, size_t& p, T& v) {
  auto [end, ec] = std::from_chars(s.data() + p, s.data() + s.size(), v);
  if (ec != std::errc()) return false;
  p = static_cast<size_t>(end - s.data());
  return true;
}

// std::from_chars for int64. Fast path: up to 18 digits without a sign (what
// every step line holds), which cannot overflow; anything else is left to
// from_chars, so the accepted text and the value are the same.
inline bool ReadInt(std::string_view s, size_t& p, int64_t& v) {
  size_t q = p;
  const size_t fast_end = std::min(s.size(), p + 18);
  uint64_t x = 0;
  while (q < fast_end && IsDigit(s[q])) x = x * 10 + static_cast<uint64_t>(s[q++] - '0');
  if (q > p && (q == s.size() || !IsDigit(s[q]))) {
    v = static_cast<int64_t>(x);
    p = q;
    return true;
  }
  return FromCharsAt(s, p, v);
}

// std::from_chars for double (general format). Fast path: `digits[.digits]`
// with at most 19 digits, not followed by an exponent, whose digits form an
// integer m <= 2^53 with k <= 22 of them after the point: m and 10^k are
// exact doubles, so m / 10^k is the correctly rounded value, which is what
// from_chars returns. Anything else (sign, exponent, inf, nan, ".5", long
// mantissas) goes to from_chars itself.
inline bool ReadDouble(std::string_view s, size_t& p, double& v) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  size_t q = p;
  uint64_t m = 0;
  size_t digits = 0, frac = 0;
  while (q < s.size() && IsDigit(s[q]) && digits < 20)
    m = m * 10 + static_cast<uint64_t>(s[q++] - '0'), ++digits;
  if (digits > 0 && q < s.size() && s[q] == '.') {
    ++q;
    while (q < s.size() && IsDigit(s[q]) && digits < 20) {
      m = m * 10 + static_cast<uint64_t>(s[q++] - '0');
      ++digits;
      ++frac;
    }
  }
  bool simple = digits > 0 && digits <= 19 && m <= (uint64_t{1} << 53) &&
                (q == s.size() || (!IsDigit(s[q]) && s[q] != 'e' && s[q] != 'E'));
  if (simple) {
    v = static_cast<double>(m) / kPow10[frac];
    p = q;
    return true;
  }
  return FromCharsAt(s, p, v);
}

// `n` decimal digits at `s`, n <= 18 (no overflow); false on a non-digit.
inline bool DigitsValue(const char* s, size_t n, uint64_t& v) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned d = static_cast<unsigned char>(s[i]) - static_cast<unsigned>('0');
    if (d > 9) return false;
    x = x * 10 + d;
  }
  v = x;
  return true;
}

// Length of the run of digits at `p` (at most `max`+1: callers reject more).
inline size_t DigitRun(std::string_view s, size_t p, size_t max) {
  size_t q = p;
  while (q < s.size() && q - p <= max && IsDigit(s[q])) ++q;
  return q - p;
}

// The article's line exactly as its f-string prints it, and nothing else:
// "rank R, step S, time I[.F]" with an optional "s", R and S of 1-18
// digits, I of 1-6 digits and F of 1-9. For these lines the general scan
// below finds the first "rank" at the start and reads the same fields, and
// the duration, I.F seconds = N ns with N = IF * 10^(9 - |F|) < 10^15, is
// what ToDurationNs(I.F as a double, seconds) gives: ReadDouble's m / 10^k
// (m = IF, exact operands) and the product by 1e9 are two roundings of
// relative error <= 2^-53 each, so the double is within 10^15 * 2.2e-16
// < 0.23 ns of the integer N and llround lands on N. Any other line
// returns false and takes the general scan.
//
// Worked example: "rank 3, step 17, time 0.8123s" -> rank 3, step 17,
// I.F = 0.8123, IF = 8123, 4 fraction digits -> 8123 * 10^5 = 812'300'000 ns.
inline bool MatchExactArticleLine(std::string_view s, ParsedStep& out) {
  if (s.size() < 22 || std::memcmp(s.data(), "rank ", 5) != 0) return false;
  size_t p = 5;
  uint64_t rank, step, int_part, frac_part = 0;
  size_t n = DigitRun(s, p, 18);
  if (n == 0 || n > 18 || !DigitsValue(s.data() + p, n, rank)) return false;
  p += n;
  if (s.size() - p < 7 || std::memcmp(s.data() + p, ", step ", 7) != 0) return false;
  p += 7;
  n = DigitRun(s, p, 18);
  if (n == 0 || n > 18 || !DigitsValue(s.data() + p, n, step)) return false;
  p += n;
  if (s.size() - p < 7 || std::memcmp(s.data() + p, ", time ", 7) != 0) return false;
  p += 7;
  n = DigitRun(s, p, 6);
  if (n == 0 || n > 6 || !DigitsValue(s.data() + p, n, int_part)) return false;
  p += n;
  size_t frac_digits = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    frac_digits = DigitRun(s, p, 9);
    if (frac_digits == 0 || frac_digits > 9 || !DigitsValue(s.data() + p, frac_digits, frac_part))
      return false;
    p += frac_digits;
  }
  if (p < s.size() && s[p] == 's') ++p;
  if (p != s.size()) return false;
  static constexpr uint64_t kPow10[] = {1,       10,        100,        1'000,       10'000,
                                        100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};
  out.rank = static_cast<int64_t>(rank);
  out.step = static_cast<int64_t>(step);
  out.unit = TimeUnit::kSeconds;
  out.duration =
      static_cast<DurationNs>(int_part * kPow10[9] + frac_part * kPow10[9 - frac_digits]);
  return true;
}

class ArticleLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "article"; }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
    if (MatchExactArticleLine(line, out)) return MatchResult::kMatched;
    bool candidate = false;
    size_t from = 0;
    while (true) {
      size_t at = line.find("ank", from);
      if (at == std::string_view::npos) break;
      from = at + 3;
      if (at == 0 || ToLowerAscii(line[at - 1]) != 'r') continue;
      size_t p = at - 1;
      if (p > 0 && IsAlpha(line[p - 1])) continue;  // "frank", "cranks"
      p += 4;
      if (p < line.size() && IsAlpha(line[p])) continue;  // "ranking"
      SkipSep<'=', ':'>(line, p);
      int64_t rank;
      if (!ReadInt(line, p, rank)) continue;
      SkipSep<',', ';', '|'>(line, p);
      if (!Keyword(line, p, "step")) continue;
      candidate = true;
      SkipSep<'=', ':'>(line, p);
      int64_t step;
      if (!ReadInt(line, p, step)) {
        why = "no step number after 'step'";
        continue;
      }
      SkipSep<',', ';', '|'>(line, p);
      if (!Keyword(line, p, "time")) {
        why = "no 'time' field after the step number";
        continue;
      }
      SkipSep<'=', ':'>(line, p);
      double value;
      if (!ReadDouble(line, p, value)) {
        why = "no number after 'time'";
        continue;
      }
      SkipBlanks(line, p);
      size_t unit_start = p;
      while (p < line.size() && (IsAlpha(line[p]) || static_cast<unsigned char>(line[p]) >= 0x80))
        ++p;
      TimeUnit unit = TimeUnit::kSeconds;
      if (p == unit_start + 1 && ToLowerAscii(line[unit_start]) == 's') {
        // "s", what ParseTimeUnit() would say, without the table walk.
      } else if (p > unit_start) {
        auto u = ParseTimeUnit(line.substr(unit_start, p - unit_start));
        if (!u) {
          why = "unknown time unit '" + std::string(line.substr(unit_start, p - unit_start)) + "'";
          continue;
        }
        unit = *u;
      }
      out.rank = rank;
      out.step = step;
      out.unit = unit;
      out.duration = ToDurationNs(value, unit);
      return MatchResult::kMatched;
    }
    return candidate ? MatchResult::kGarbled : MatchResult::kNoMatch;
  }
};

}  // namespace

std::unique_ptr<LineMatcher> MakeArticleLineMatcher() {
  return std::make_unique<ArticleLineMatcher>();
}

}  // namespace laggard
