// The article's step line: `print(f"rank {rank}, step {i}, time {dt:.4f}s")`.
// This is the hot path of step ingest (10M lines in the benchmark), so it is
// a hand-written scanner over the line rather than a regex.
//
// Worked example: "[rank3]: 2024-05-01 12:00:01 rank 3, step 17, time 0.8123s"
//   - the first "rank" (in "[rank3]") is followed by "3]" and not by "step",
//     so the scan moves on;
//   - the second "rank" reads rank=3, then "step" 17, then "time" 0.8123, unit
//     "s" -> kMatched with duration 812'300'000 ns.

#include <charconv>

#include "base/text.h"
#include "ingest/line_matcher.h"

namespace laggard {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

void SkipBlanks(std::string_view s, size_t& p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
}

// Skips blanks, one optional separator char out of `seps`, blanks.
void SkipSep(std::string_view s, size_t& p, std::string_view seps) {
  SkipBlanks(s, p);
  if (p < s.size() && seps.find(s[p]) != std::string_view::npos) ++p;
  SkipBlanks(s, p);
}

bool Keyword(std::string_view s, size_t& p, std::string_view kw) {
  if (p + kw.size() > s.size()) return false;
  for (size_t i = 0; i < kw.size(); ++i) {
    if (ToLowerAscii(s[p + i]) != kw[i]) return false;
  }
  if (p + kw.size() < s.size() && IsAlpha(s[p + kw.size()])) return false;  // "steps", "timer"
  p += kw.size();
  return true;
}

bool ReadInt(std::string_view s, size_t& p, int64_t& v) {
  auto [end, ec] = std::from_chars(s.data() + p, s.data() + s.size(), v);
  if (ec != std::errc()) return false;
  p = static_cast<size_t>(end - s.data());
  return true;
}

class ArticleLineMatcher final : public LineMatcher {
 public:
  std::string_view name() const override { return "article"; }

  MatchResult Match(std::string_view line, ParsedStep& out, std::string& why) const override {
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
      SkipSep(line, p, "=:");
      int64_t rank;
      if (!ReadInt(line, p, rank)) continue;
      SkipSep(line, p, ",;|");
      if (!Keyword(line, p, "step")) continue;
      candidate = true;
      SkipSep(line, p, "=:");
      int64_t step;
      if (!ReadInt(line, p, step)) {
        why = "no step number after 'step'";
        continue;
      }
      SkipSep(line, p, ",;|");
      if (!Keyword(line, p, "time")) {
        why = "no 'time' field after the step number";
        continue;
      }
      SkipSep(line, p, "=:");
      double value;
      auto [end, ec] = std::from_chars(line.data() + p, line.data() + line.size(), value);
      if (ec != std::errc()) {
        why = "no number after 'time'";
        continue;
      }
      p = static_cast<size_t>(end - line.data());
      SkipBlanks(line, p);
      size_t unit_start = p;
      while (p < line.size() && (IsAlpha(line[p]) || static_cast<unsigned char>(line[p]) >= 0x80)) ++p;
      TimeUnit unit = TimeUnit::kSeconds;
      if (p > unit_start) {
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
